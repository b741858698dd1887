"""The two-machine set-up on one machine: `scripts/lab serve 01` on 127.0.0.1, and the command it
prints, `scripts/lab run 01 --target URL`, loading it. Short runs: this checks the plumbing
(target recorded, predictions from the remote /pools, server CPU from the JVM's own report, a
clean stop), not the lesson's numbers, which test_lab01.py checks."""

from __future__ import annotations

import os
import re
import shlex
import signal

import pytest

from pul.procs import processes_with_run_id
from pul.probe import CLOCK_TICKS
from pul.server import free_port
from pul.testing import Driver, by_name, run_lab

# A measured run of the real lab (minutes): its lab's part of scripts/test runs it.
pytestmark = pytest.mark.slow

SET_UP = ("--work-ms", "100", "--concurrency", "20")
QUICK = ("--requests", "150", "--warmup", "0", "--variant", "java-blocking", "--variant", "scala-offloaded")


def jvm_cpu_seconds(token: str) -> float:
    """CPU time of the served JVM, read from /proc here (the load side reads the JVM's own report)."""
    total = 0
    for pid in processes_with_run_id(token):
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            if b"ProdServerStart" not in cmdline.read():
                continue
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def test_run_with_target_measures_a_served_lab_and_serve_stops_cleanly(tmp_path, monkeypatch):
    port = free_port()
    serve = Driver("01", *SET_UP, "--port", str(port), command="serve", log=tmp_path / "serve.log")
    try:
        serve.wait_for("Ctrl-C stops the server", timeout=300)
        printed = re.search(r"^  (scripts/lab run .+)$", serve.output(), re.M)
        assert printed, serve.output()
        url = f"http://127.0.0.1:{port}"
        assert printed.group(1) == f"scripts/lab run 01 --target {url} {' '.join(SET_UP)}"

        # serve holds this machine's bench lock for as long as it serves: the load runs under it.
        monkeypatch.setenv("PUL_BENCH_LOCK_HELD", "1")
        results = run_lab(*shlex.split(printed.group(1))[2:], *QUICK, results_dir=tmp_path / "results")

        assert results["target"] == url
        assert results["server_cpu_source"] == "pools"
        assert results["machine"]["pinning"]["server_cpus"] is None
        assert results["pools"]["properties"]["lab.work-ms"] == "100"
        assert "play.http.secret.key" not in results["pools"]["properties"]
        assert results["skipped_variants"] == []
        variants = by_name(results)
        assert set(variants) == {"java-blocking", "scala-offloaded"}
        threads = results["pools"]["pools"]["default"]["threads"]
        blocking = variants["java-blocking"]
        # Little's law from the remote /pools, as for a local server.
        assert blocking["pool_threads"] == threads
        assert blocking["predicted_requests_per_sec"] == pytest.approx(min(20, threads) / 0.100, rel=1e-3)
        assert variants["scala-offloaded"]["predicted_requests_per_sec"] == pytest.approx(20 / 0.100, rel=1e-3)
        for v in variants.values():
            assert v["failed"] == 0 and v["non_2xx"] == 0, v
            assert v["measured_over_predicted"] is not None
            assert v["server_cpu_seconds"] > 0 and v["server_cpu_utilization"] is not None
        # The JVM's own CPU report agrees with what /proc says it used in all (start-up included).
        assert sum(v["server_cpu_seconds"] for v in variants.values()) <= jvm_cpu_seconds(serve.token) + 0.1

        assert processes_with_run_id(serve.token), "the server stopped before SIGTERM?"
        os.kill(serve.popen.pid, signal.SIGTERM)
        assert serve.wait(60) == 0, serve.output()[-2000:]
        assert serve.leftovers() == []
        assert "SIGTERM received" in serve.output()
    finally:
        serve.kill_everything()
