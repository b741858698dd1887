"""Fast tests of lab 04's driver support: wrk parsing, options, and the analysis behind its table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pul import wrk
from pul.errors import LoadFailed
from pul.lab import REPO
from pul.testing import this_lab

LAB = this_lab(__file__)
analyse = LAB.module("report").analyse
limit_of = LAB.module("report").limit_of

WRK_OUTPUT = """$ wrk -t 2 -c 50 -d 2s --timeout 30s -s scripts/lib/wrk-report.lua http://127.0.0.1:5/status
Running 2s test @ http://127.0.0.1:5/status
  22659 requests in 2.01s, 2.57MB read
Requests/sec:  11279.97
PUL-WRK requests=20000 duration_us=2000000 non_2xx=3 connect_errors=0 read_errors=1 write_errors=0 timeouts=1 mean_latency_us=4500.0
"""
CSV = "Percentage served,Time in ms\n" + "".join(f"{p},{p / 10:.3f}\n" for p in range(101))


def test_wrk_summary_is_read_like_ab():
    result = wrk.parse(WRK_OUTPUT, CSV)
    assert result.complete == 20000
    assert result.requests_per_sec == 10000.0
    assert result.non_2xx == 3 and result.failed == 2
    assert result.mean_ms == 4.5 and result.pct(99) == 9.9
    assert result.command.startswith("wrk -t 2 -c 50")
    assert result.ab_time_per_request_ms == pytest.approx(50 * 2.0 * 1000 / 20000)


def test_wrk_without_its_summary_line_is_a_load_failure():
    with pytest.raises(LoadFailed):
        wrk.parse("unable to connect to 127.0.0.1:5 Connection refused\n", "")


@pytest.mark.parametrize("option", ["--chain-lengths", "--java-chain-lengths"])
@pytest.mark.parametrize("value", ["0", "x", ""])
def test_bad_chain_lengths_are_usage_errors(option, value):
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "lab"), "run", "04", option, value],
                         capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 2, out.stderr


def test_every_step_selects_its_set_up_by_system_properties():
    steps = LAB.steps({**LAB.defaults, "chain_lengths": "1,3"})
    names = [s.name for s in steps]
    assert names[:2] == ["none", "play-defaults"] and names[-1] == "none-again"
    assert {"plain-x1", "plain-x3", "essential-x3", "java-plain-x10", "logging-essential"} <= set(names)
    by_name = {s.name: s for s in steps}
    assert by_name["plain-x3"].setup == {"lab.filters": "plain", "lab.chain-length": "3"}
    assert all(s.keep_alive and s.load_tools == ("ab", "wrk") for s in steps)


def _run(tool, rate, server=1.0, load=0.2, idle=0.0, cpu_us=None):
    return {"tool": tool, "requests_per_sec": rate, "server_cpu_utilization": server,
            "load_cpu_utilization": load, "server_cores_idle": idle,
            "server_cpu_us_per_request": cpu_us if cpu_us is not None else 1e6 / rate,
            "complete": int(rate * 2), "failed": 0, "non_2xx": 0}


def _variant(name, setup, length, rates):
    return {"name": name, "concurrency": 50,
            "extra": {"setup": setup, "chain_length": length,
                      "runs": [_run(t, r) for t in ("ab", "wrk") for r in rates[t]]}}


def test_costs_are_differences_in_time_per_request_from_the_harder_pushing_tool():
    results = {"variants": [
        _variant("none", "none", 0, {"ab": [9000, 10000, 11000], "wrk": [19000, 20000, 21000]}),
        _variant("plain-x2", "plain", 2, {"ab": [5000] * 3, "wrk": [10000] * 3}),
        _variant("none-again", "none", 1, {"ab": [10000] * 3, "wrk": [19000] * 3}),
    ]}
    a = analyse(results)
    assert a["reference_tool"] == "wrk"
    assert a["tools"]["none"]["wrk"]["median"] == 20000 and a["tools"]["none"]["wrk"]["min"] == 19000
    # 1/10,000 s - 1/20,000 s = 50 µs for two filters: 25 µs each.
    assert a["cost"]["plain-x2"]["us"] == pytest.approx(50.0)
    assert a["per_filter"]["plain"]["slope_us"] == pytest.approx(25.0)
    assert a["baseline_agreement"] == pytest.approx(0.05)


def test_the_limit_is_named_from_cpu_use():
    assert limit_of({"load_utilization": 0.97, "server_utilization": 0.5, "server_cores_idle": 0.4}) == "load generator"
    assert limit_of({"load_utilization": 0.3, "server_utilization": 0.95, "server_cores_idle": 0.0}) == "server CPU"
    assert limit_of({"load_utilization": 0.1, "server_utilization": 0.6, "server_cores_idle": 0.35}).startswith("server waiting")
    assert "other programs" in limit_of({"load_utilization": 0.1, "server_utilization": 0.6, "server_cores_idle": 0.02})
