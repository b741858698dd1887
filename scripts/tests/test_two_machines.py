"""The two-machine set-up for real, on this one machine: two network namespaces joined by a veth
pair stand for the `lab` and `load` VMs. `scripts/lab serve 01 --listen 192.0.2.10` runs in one,
`scripts/lab run 01 --target http://192.0.2.10:PORT` in the other, over the veth only.

What it checks: the served lab answers requests addressed to the address it listens on (Play's
allowed hosts filter lets it through, and still refuses other hosts), the load side reads the
remote /pools and predicts from it, the measured throughput lands near that prediction, and
Ctrl-C (SIGINT) on serve leaves no process behind. The addresses are TEST-NET-1 (RFC 5737),
never routed; both namespaces are created and deleted here, leftovers of an earlier run with
this file's prefix cleaned first.

The build (sbt, which may download) happens before, outside the namespaces: inside them there is
only the veth and loopback, and serve finds the staged server up to date.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pul import lab
from pul.procs import RUN_ID_VARIABLE, Children, processes_with_run_id, wait_until
from pul.progress import Progress
from pul.run import bench_lock
from pul.server import build, free_port
from pul.testing import within_model

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: it creates network namespaces (ip netns)"),
    pytest.mark.skipif(shutil.which("ip") is None, reason="needs `ip` (Debian package iproute2)"),
]

REPO = Path(__file__).resolve().parents[2]
LAB = [sys.executable, str(REPO / "scripts" / "lab")]
# Namespaces and veth ends this file creates carry these prefixes, and only those are cleaned.
NETNS_PREFIX = "pul-2m-"
VETH_PREFIX = "pul2m"
SERVER_ADDRESS, LOAD_ADDRESS = "192.0.2.10", "192.0.2.20"
SET_UP = ("--work-ms", "100", "--concurrency", "20")
VARIANT = "java-offloaded"
REQUESTS = 400
# Loose: this checks that the path works and the prediction comes from the remote /pools, not
# the lesson's numbers (test_lab01.py checks those).
BAND = (0.6, 1.2)


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=check,
                          stdin=subprocess.DEVNULL)


def clean_leftovers() -> None:
    """Namespaces and veth ends of an earlier run of this test that nothing runs in any more."""
    for line in ip("netns", "list").stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(NETNS_PREFIX) and not ip("netns", "pids", name, check=False).stdout.strip():
            ip("netns", "delete", name, check=False)
    for line in ip("-o", "link", "show").stdout.splitlines():
        match = re.match(r"\d+: ([^:@]+)", line)
        if match and match.group(1).startswith(VETH_PREFIX):
            ip("link", "delete", match.group(1), check=False)


class TwoMachines:
    """Two namespaces, `server` (SERVER_ADDRESS) and `load` (LOAD_ADDRESS), on one veth pair."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:6]
        self.server, self.load = f"{NETNS_PREFIX}{tag}-srv", f"{NETNS_PREFIX}{tag}-load"
        self.server_end, self.load_end = f"{VETH_PREFIX}{tag}s", f"{VETH_PREFIX}{tag}l"

    def __enter__(self) -> TwoMachines:
        try:
            ip("netns", "add", self.server)
            ip("netns", "add", self.load)
            ip("link", "add", self.server_end, "type", "veth", "peer", "name", self.load_end)
            ip("link", "set", self.server_end, "netns", self.server)
            ip("link", "set", self.load_end, "netns", self.load)
            for ns, end, address in ((self.server, self.server_end, SERVER_ADDRESS),
                                     (self.load, self.load_end, LOAD_ADDRESS)):
                ip("-n", ns, "address", "add", f"{address}/24", "dev", end)
                ip("-n", ns, "link", "set", end, "up")
                ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        # Deleting a namespace deletes the veth end in it, and with it the other end.
        for ns in (self.server, self.load):
            ip("netns", "delete", ns, check=False)
        for end in (self.server_end, self.load_end):
            ip("link", "delete", end, check=False)

    def command(self, ns: str, *args: str) -> list[str]:
        return ["ip", "netns", "exec", ns, *args]


def build_lab01(monkeypatch) -> None:
    """`sbt stage` for lab 01 here, with the network, under the bench lock (as serve would)."""
    monkeypatch.setenv(RUN_ID_VARIABLE, "test" + uuid.uuid4().hex[:10])
    progress, children = Progress(quiet=True), Children()
    try:
        with bench_lock(progress):
            build(lab.resolve("01").dir, children, progress)
    finally:
        children.stop_all()


def get_with_host(machines: TwoMachines, url: str, host: str) -> int:
    """The HTTP status of a GET from the load namespace, with this Host header."""
    script = ("import sys, urllib.request, urllib.error\n"
              "request = urllib.request.Request(sys.argv[1], headers={'Host': sys.argv[2]})\n"
              "try:\n    print(urllib.request.urlopen(request, timeout=10).status)\n"
              "except urllib.error.HTTPError as error:\n    print(error.code)\n")
    done = subprocess.run(machines.command(machines.load, sys.executable, "-c", script, url, host),
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def test_serve_in_one_namespace_and_run_target_from_another(tmp_path, monkeypatch):
    clean_leftovers()
    build_lab01(monkeypatch)
    port = free_port()
    token = "test" + uuid.uuid4().hex[:10]
    env = {**os.environ, RUN_ID_VARIABLE: token}
    env.pop("PUL_BENCH_LOCK_HELD", None)
    serve_log = tmp_path / "serve.log"
    started = time.monotonic()
    with TwoMachines() as machines, serve_log.open("w") as log:
        serve = subprocess.Popen(
            machines.command(machines.server, *LAB, "serve", "01", "--listen", SERVER_ADDRESS,
                             "--port", str(port), *SET_UP),
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            def output() -> str:
                return serve_log.read_text(errors="replace")

            ready = wait_until(lambda: "Ctrl-C stops the server" in output() or serve.poll() is not None, 300)
            assert ready and serve.poll() is None, f"serve did not start:\n{output()[-3000:]}"
            url = f"http://{SERVER_ADDRESS}:{port}"
            printed = re.search(r"^  (scripts/lab run .+)$", output(), re.M)
            assert printed and printed.group(1) == f"scripts/lab run 01 --target {url} {' '.join(SET_UP)}", \
                output()
            print(f"serve ready after {time.monotonic() - started:.1f}s")

            # Play's allowed hosts filter: the address served on passes, any other host still does not.
            assert get_with_host(machines, f"{url}/status", f"{SERVER_ADDRESS}:{port}") == 200
            assert get_with_host(machines, f"{url}/status", "attacker.example") == 400

            # The load side: the printed command, in the other namespace. serve holds this
            # machine's bench lock while it serves; the load runs under it.
            results_dir = tmp_path / "results"
            run = subprocess.run(
                machines.command(machines.load, *LAB, *shlex.split(printed.group(1))[1:], "--requests",
                                 str(REQUESTS), "--variant", VARIANT, "--results-dir", str(results_dir),
                                 "--no-report"),
                cwd=REPO, env={**env, RUN_ID_VARIABLE: token + "l", "PUL_BENCH_LOCK_HELD": "1"},
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                timeout=600)
            print(run.stdout)
            assert run.returncode == 0, f"scripts/lab run --target failed:\n{run.stdout[-4000:]}"
            assert not processes_with_run_id(token + "l"), "the load side left processes behind"
            results = json.loads((results_dir / "latest.json").read_text())

            assert results["target"] == url
            assert results["server_cpu_source"] == "pools"
            properties = results["pools"]["properties"]
            assert properties["http.address"] == SERVER_ADDRESS and properties["lab.work-ms"] == "100"
            [variant] = results["variants"]
            assert variant["name"] == VARIANT
            assert variant["failed"] == 0 and variant["non_2xx"] == 0, variant
            # Little's law on the pool size the remote /pools reported. (The server CPU bound, from a
            # calibration this cold, may undercut it -- 183.2 against 200 on a fresh CI machine --
            # so the prediction is the smaller of the two.)
            threads = results["pools"]["pools"]["offload"]["threads"]
            assert variant["pool_threads"] == threads
            littles_law = variant["bounds"].get("threads") or variant["bounds"]["requests in flight"]
            assert littles_law == pytest.approx(min(20, threads) / 0.100, rel=1e-3)
            assert variant["predicted_requests_per_sec"] <= littles_law
            ratio = variant["measured_over_predicted"]
            print(f"{VARIANT}: measured {variant['requests_per_sec']:.1f} req/s, predicted "
                  f"{variant['predicted_requests_per_sec']:.1f} (ratio {ratio})")
            # A range where the model has one (lab 01's identical sleeps: pul.model.CONVOY).
            within_model(f"{VARIANT} over the veth", variant, BAND)

            # The Play secret is in the server's environment, not on its command line (ps shows that).
            [jvm] = [pid for pid in processes_with_run_id(token)
                     if b"ProdServerStart" in Path(f"/proc/{pid}/cmdline").read_bytes()]
            assert b"secret" not in Path(f"/proc/{jvm}/cmdline").read_bytes().lower()
            assert any(v.startswith(b"APPLICATION_SECRET=") and len(v) > 40
                       for v in Path(f"/proc/{jvm}/environ").read_bytes().split(b"\0"))
            assert not any("secret" in key.lower() for key in properties)

            # Ctrl-C on serve: it exits 0 and takes everything it started with it.
            assert processes_with_run_id(token), "the server stopped before Ctrl-C?"
            os.killpg(serve.pid, signal.SIGINT)
            assert serve.wait(60) == 0, output()[-3000:]
            assert "SIGINT received" in output()
            assert wait_until(lambda: not processes_with_run_id(token), 10), \
                f"left behind: {processes_with_run_id(token)}"
            assert not ip("netns", "pids", machines.server).stdout.strip()
        finally:
            # A failed test leaves nothing running: serve's group, then anything with our tokens.
            if serve.poll() is None:
                os.killpg(serve.pid, signal.SIGKILL)
                serve.wait(10)
            for pid in processes_with_run_id(token) + processes_with_run_id(token + "l"):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    print(f"two machines: {time.monotonic() - started:.1f}s from serve to clean stop")
