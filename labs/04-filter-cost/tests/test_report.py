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


def test_the_write_up_is_compared_with_one_filter_not_with_the_fitted_slope():
    analysis = REPORT.analyse(_results())
    n = REPORT.why_numbers(analysis)
    text = REPORT.then_and_now_sentence(analysis, n)
    # plain-x1 costs 1 µs: eight times less than the write-up's 8 µs. The slope (over 1 and 10) is
    # another figure, named as such.
    assert "(`plain-x1`) added 1.0 µs" in text and "about 8 times less" in text
    slope = analysis["per_filter"]["plain"]["slope_us"]
    assert f"The fitted slope, {slope:.1f} µs per `Filter`, answers another question" in text
    assert "chains of 1 and 10 filters" in text


def test_one_filter_within_the_noise_is_not_called_smaller_than_the_write_up():
    results = _results(overrides={"plain-x1": {"ab": 20.0001}})
    # Spread the baseline's runs: 19.5-20.5 µs, a noise of 1 µs.
    results["variants"][0]["extra"]["runs"] = [_run("ab", _rate(us)) for us in (19.5, 20, 20.5)]
    analysis = REPORT.analyse(results)
    text = REPORT.then_and_now_sentence(analysis, REPORT.why_numbers(analysis))
    assert "too little for this run to tell from zero" in text and "times less" not in text


def test_without_plain_x1_there_is_no_comparison_with_the_write_up():
    results = _results()
    results["variants"] = [v for v in results["variants"] if v["name"] != "plain-x1"]
    analysis = REPORT.analyse(results)
    assert "cannot be compared" in REPORT.then_and_now_sentence(analysis, REPORT.why_numbers(analysis))


def test_the_timing_filter_is_compared_with_the_no_op_filter_of_its_kind():
    results = _results()
    analysis = REPORT.analyse(results)
    text = REPORT.timing_sentence(results, analysis, REPORT.why_numbers(analysis))
    # logging-plain 4 µs against plain-x1's 1 µs; logging-essential 1 µs against essential-x1's 0.5 µs.
    assert "+3.0 µs (+3.0 µs of CPU) as a `Filter`, against `plain-x1`" in text
    assert "+0.5 µs (+0.5 µs of CPU) as an `EssentialFilter`, against `essential-x1`" in text


# -- the default mode against --thorough ------------------------------------------

def _thorough(overrides=None):
    run = _results(tools=("ab", "wrk"), overrides=overrides)
    run.update(started_at="2026-11-25T10:00:00Z", duration_s=600, machine={"load_average_at_start": 0.5})
    return run


def test_the_modes_compare_ab_costs_against_each_runs_own_baseline():
    # The fresh servers' baseline is slower (25 µs), and so is each set-up by the same 5 µs: the
    # costs are the same, so the difference is zero.
    shifted = {name: {"ab": us + 5} for name, us in {"none": 20, "plain-x1": 21, "plain-x10": 90,
                                                      "essential-x1": 20.5, "essential-x10": 21,
                                                      "logging-plain": 24, "logging-essential": 21}.items()}
    text = REPORT.modes_text(_results(), _thorough(shifted))
    assert "| plain-x10 | 11,111 | +70.0 | 10,526 | +70.0 | +0.0 | 1.00 |" in text
    assert "| plain-x1 | 47,619 | +1.0 | 38,462 | +1.0 | +0.0 | – |" in text  # too small for a ratio
    assert "the one server's is 1.00–1.00 times the fresh servers'" in text
    assert "differ by 0.0 µs per request at the median and 0.0 µs at most" in text
    assert "rank `plain-x10` > `essential-x10` in both" in text


def test_a_different_ranking_on_fresh_servers_is_said():
    text = REPORT.modes_text(_results(), _thorough({"essential-x10": {"ab": 100}}))
    assert "on the one server, but `essential-x10` > `plain-x10` on fresh servers" in text
    assert "79.0 µs at most" in text  # 1 µs on the one server, 80 on fresh ones


def test_without_a_thorough_run_there_is_no_comparison():
    assert "No `--thorough` run is committed" in REPORT.modes_text(_results(), None)
