"""Fast tests of lab 04's report: which load tool the costs come from, and the sentences the
chapter includes that compare set-ups (generated/lab04-why-facts.md)."""

from __future__ import annotations

import pytest

from pul.testing import this_lab

REPORT = this_lab(__file__).module("report")


def _run(tool, rate, cpu_us=None):
    return {"tool": tool, "requests_per_sec": rate, "server_cpu_utilization": 0.9,
            "load_cpu_utilization": 0.3, "server_cores_idle": 0.05,
            "server_cpu_us_per_request": cpu_us if cpu_us is not None else 1e6 / rate,
            "complete": int(rate), "failed": 0, "non_2xx": 0,
            "mean_ms": 1.0, "p99_ms": 2.0}


def _variant(name, setup, length, rates):
    """rates: {tool: requests/s}, three identical runs per tool."""
    return {"name": name, "concurrency": 50,
            "extra": {"setup": setup, "chain_length": length,
                      "runs": [_run(tool, rate) for tool, rate in rates.items() for _ in range(3)]}}


# Times per request in µs, so the costs come out round: 1e6 / 20 µs = 50,000 req/s.
def _rate(us):
    return 1e6 / us


def _results(tools=("ab",), overrides=None):
    """A run with a 20 µs baseline; every set-up's time per request is the same for every tool
    unless `overrides` ({name: {tool: µs}}) says otherwise."""
    us = {"none": 20, "plain-x1": 21, "plain-x10": 90, "essential-x1": 20.5, "essential-x10": 21,
          "logging-plain": 24, "logging-essential": 21}
    setups = {"none": ("none", 0), "plain-x1": ("plain", 1), "plain-x10": ("plain", 10),
              "essential-x1": ("essential", 1), "essential-x10": ("essential", 10),
              "logging-plain": ("logging-plain", 1), "logging-essential": ("logging-essential", 1)}
    variants = []
    for name, (setup, length) in setups.items():
        per_tool = {tool: _rate((overrides or {}).get(name, {}).get(tool, us[name])) for tool in tools}
        variants.append(_variant(name, setup, length, per_tool))
    return {"params": {"mode": "default" if tools == ("ab",) else "thorough", "seconds": 1},
            "variants": variants}


def test_one_tool_for_every_row_even_where_the_other_pushed_that_row_harder():
    # wrk pushes the baseline harder (18 µs against 20), ab pushes plain-x10 harder (60 µs against 90):
    # the rule is the baseline's tool for every row, so plain-x10's cost is wrk's 90 - 18.
    results = _results(tools=("ab", "wrk"), overrides={"none": {"wrk": 18}, "plain-x10": {"ab": 60}})
    analysis = REPORT.analyse(results)
    assert analysis["reference_tool"] == "wrk"
    assert analysis["cost"]["plain-x10"]["us"] == pytest.approx(72.0)
    assert "every cost is computed from wrk, the tool that pushed 'none' hardest, used for every set-up" \
        in analysis["verdict"].lower()
    headers = [header for header, _, _ in REPORT.table_columns(results)]
    assert "cost µs/req vs none (wrk)" in headers and "CPU cost µs/req vs none (wrk)" in headers
    assert "used for every set-up" in REPORT.limit_sentence(analysis)


def test_a_run_with_ab_only_says_so_once():
    analysis = REPORT.analyse(_results())
    assert analysis["reference_tool"] == "ab"
    assert analysis["verdict"].endswith("Every cost is computed from ab, the only load tool this run used.")
    assert "the only load tool this run used" in REPORT.limit_sentence(analysis)
