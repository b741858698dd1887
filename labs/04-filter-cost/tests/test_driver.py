"""Fast tests of lab 04's driver support: wrk parsing, options, and the analysis behind its table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pul import wrk
from pul.errors import LabError, LoadFailed
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


def test_thorough_steps_select_their_set_up_by_system_properties():
    steps = LAB.steps({**LAB.defaults, "mode": "thorough", "chain_lengths": "1,3"})
    names = [s.name for s in steps]
    assert names[:2] == ["none", "play-defaults"] and names[-1] == "none-again"
    assert {"plain-x1", "plain-x3", "essential-x3", "java-plain-x10", "logging-essential"} <= set(names)
    by_name = {s.name: s for s in steps}
    assert by_name["plain-x3"].setup == {"lab.filters": "plain", "lab.chain-length": "3"}
    assert by_name["plain-x3"].endpoint == "status" and by_name["none-again"].fresh_server
    assert all(s.keep_alive and s.load_tools == ("ab", "wrk") for s in steps)
    # Every server is fresh, so every one waits for its JIT as long as the first.
    assert {s.warmup_min_rounds for s in steps} == {6}


def test_default_steps_share_one_server_and_name_their_chain_per_request():
    steps = LAB.steps(dict(LAB.defaults))
    by_name = {s.name: s for s in steps}
    # One set-up for all: one server start, which offers every chain once.
    assert len({tuple(sorted(s.setup.items())) for s in steps}) == 1
    offered = steps[0].setup["lab.setups"].split(",")
    assert offered == list(dict.fromkeys(offered)) and "none-again" not in offered
    assert {s.extra["bench_env"]["SETUP"] for s in steps} == set(offered)
    assert by_name["none-again"].extra["bench_env"]["SETUP"] == "none"
    assert all(s.endpoint == "setup" and s.load_tools == ("ab",) and not s.fresh_server for s in steps)
    # The first set-up waits for the JIT; the others only for their own filters; the repeat for nothing.
    assert steps[0].warmup_min_rounds > steps[1].warmup_min_rounds
    assert by_name["none-again"].warmup_requests == 0
    assert {s.seconds for s in steps} == {LAB.defaults["seconds"]}


def _params(*argv):
    import argparse
    parser = argparse.ArgumentParser()
    LAB.add_arguments(parser)
    return LAB.params(parser.parse_args(list(argv)))


def test_thorough_brings_its_own_defaults_and_records_the_mode():
    assert _params()["mode"] == "default"
    assert _params()["repeat"] == LAB.defaults["repeat"]
    thorough = _params("--thorough")
    assert thorough["mode"] == "thorough"
    assert (thorough["repeat"], thorough["seconds"], thorough["chain_lengths"]) == (5, 2, "1,3,10")
    # An option typed out wins over either mode's default.
    assert _params("--thorough", "--repeat", "2")["repeat"] == 2


class _Server:
    """A stand-in for the running server: /filters answers from a dict."""

    def __init__(self, setups):
        self.setups = setups

    def get(self, path):
        import json
        return json.dumps({"setup": "none", "chain_length": 1, "filters": [], "setups": self.setups})


def _chain(requests, length, calls=None):
    return {"requests": requests, "filters": [{"class": "filters.NoopPlainFilter",
                                               "calls": requests if calls is None else calls}] * length}


def _verify(step, setups, complete):
    record = {"complete": complete, "extra": {"runs": [{"complete": complete}]}}
    LAB.verify_step(step, _Server(setups), record, None)
    return record


def test_the_shared_server_check_follows_each_chain_s_counts():
    steps = {s.name: s for s in LAB.steps(dict(LAB.defaults))}
    LAB._counts = None  # what inspect_server does for a fresh server
    # First step: the counts include every warm-up, so only "at least what was measured".
    _verify(steps["plain-x1"], {"plain-x1": _chain(5000, 1), "none": _chain(9000, 0)}, 3000)
    # Next: plain-x1's chain served the new requests, and nobody else did.
    _verify(steps["plain-x1"], {"plain-x1": _chain(8000, 1), "none": _chain(9000, 0)}, 3000)
    with pytest.raises(LabError, match="other chains"):
        _verify(steps["plain-x1"], {"plain-x1": _chain(11000, 1), "none": _chain(12000, 0)}, 3000)
    LAB._counts = None
    with pytest.raises(LabError, match="applied chain"):
        _verify(steps["plain-x1"], {"plain-x1": _chain(2000, 1)}, 3000)
    LAB._counts = None
    with pytest.raises(LabError, match="filter 0"):
        _verify(steps["plain-x1"], {"plain-x1": _chain(5000, 1, calls=10)}, 3000)
    LAB._counts = None
    with pytest.raises(LabError, match="expected 10 filters"):
        _verify(steps["plain-x10"], {"plain-x10": _chain(5000, 3)}, 3000)
    with pytest.raises(LabError, match="offers no chain"):
        _verify(steps["essential-x10"], {"plain-x10": _chain(5000, 10)}, 3000)


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
