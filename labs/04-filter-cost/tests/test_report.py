"""Fast tests of lab 04's report: which load tool the costs come from, the facts table the chapter
includes (generated/lab04-why-facts.md) and the facts its claims read (facts()), the JVM's threads,
and the two modes side by side."""

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
    facts = REPORT.facts(results, None)
    assert facts["reference_tool"] == "wrk" and facts["plain_x10_us"] == pytest.approx(72.0)


def test_a_run_with_ab_only_says_so_once():
    results = _results()
    analysis = REPORT.analyse(results)
    assert analysis["reference_tool"] == "ab"
    assert analysis["verdict"].endswith("Every cost is computed from ab, the only load tool this run used.")
    assert REPORT.facts(results, None)["reference_tool"] == "ab"


# -- the facts the chapter's claims read (lab04.facts.NAME) --------------------------

def test_every_row_of_the_facts_table_is_a_fact():
    results = _results()
    analysis = REPORT.analyse(results)
    n = REPORT.why_numbers(analysis)
    table = REPORT.facts_table(analysis, n)
    facts = REPORT.facts(results, None)
    rows = REPORT.why_rows(analysis, n)
    assert len(table.splitlines()) == 2 + len(rows)
    for label, name, us, cpu in rows:
        assert label in table and facts[f"{name}_us"] == pytest.approx(us, abs=0.01)
        assert cpu is None or facts[f"{name}_cpu_us"] == pytest.approx(cpu, abs=0.01)
    # The baseline is 20 µs; the write-up's set-up, plain-x1, costs 1 µs; ten Filters 70 µs, 7 µs each.
    assert facts["baseline_us"] == pytest.approx(20.0)
    assert facts["plain_x1_us"] == pytest.approx(1.0) and facts["plain_x10_us"] == pytest.approx(70.0)
    assert facts["plain_x10_per_filter_us"] == pytest.approx(7.0)
    # The slope through the origin over 1 and 10: (1 x 1 + 10 x 70) / (1 + 100).
    assert facts["scala_filter_us"] == pytest.approx(701 / 101, abs=0.01)
    assert facts["baseline_limit"] == "server CPU"


def test_the_noise_is_the_baselines_own_spread():
    results = _results(overrides={"plain-x1": {"ab": 20.0001}})
    # Spread the baseline's runs: 19.5-20.5 µs, a noise of 1 µs; plain-x1 costs nothing within it.
    results["variants"][0]["extra"]["runs"] = [_run("ab", _rate(us)) for us in (19.5, 20, 20.5)]
    facts = REPORT.facts(results, None)
    assert facts["noise_us"] == pytest.approx(1.0)
    assert abs(facts["plain_x1_us"]) < facts["noise_us"]


def test_a_set_up_the_run_did_not_measure_has_no_row_and_no_fact():
    results = _results()
    results["variants"] = [v for v in results["variants"] if v["name"] != "plain-x1"]
    analysis = REPORT.analyse(results)
    facts = REPORT.facts(results, None)
    assert "plain_x1_us" not in facts and "timing_own_filter_us" not in facts
    assert "`plain-x1`" not in REPORT.facts_table(analysis, REPORT.why_numbers(analysis))


def test_the_timing_filter_is_compared_with_the_no_op_filter_of_its_kind():
    facts = REPORT.facts(_results(), None)
    # logging-plain 4 µs against plain-x1's 1 µs; logging-essential 1 µs against essential-x1's 0.5 µs.
    assert facts["timing_own_filter_us"] == pytest.approx(3.0)
    assert facts["timing_own_filter_cpu_us"] == pytest.approx(3.0)
    assert facts["timing_own_essential_filter_us"] == pytest.approx(0.5)


def test_the_jvm_threads_are_the_most_over_each_set_ups_first_run():
    results = _results()
    results["variants"][0]["timeline"] = {"jvm_threads": [20, 23, None]}  # none
    for name, counts in (("java-plain-x1", [40, 69]), ("java-plain-x10", [68]), ("java-essential-x10", [23])):
        setup, length = name.rsplit("-x", 1)
        results["variants"].append({**_variant(name, setup, int(length), {"ab": _rate(20)}),
                                    "timeline": {"jvm_threads": counts}})
    assert "| `java-plain-x1` | 69 |" in REPORT.threads_table(results)
    facts = REPORT.facts(results, None)
    assert (facts["threads_none"], facts["threads_java_plain_x1"], facts["threads_java_essential_x10"]) == (23, 69, 23)
    del results["variants"][-1]["timeline"]
    assert "no timeline" in REPORT.threads_table(results)


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
    assert "| one server ÷ fresh, where both costs are 10 µs or more | 1.00–1.00 |" in text
    assert "the median over the set-ups | 0.0 µs |" in text and "the most | 0.0 µs |" in text
    assert "on the one server | `plain-x10` > `essential-x10` |" in text
    assert "| the same on fresh servers | `plain-x10` > `essential-x10` |" in text
    facts = REPORT.modes_comparison(_results(), _thorough(shifted))["facts"]
    assert facts["ranking"] == facts["fresh_ranking"] == "plain-x10 > essential-x10"
    assert facts["ratio_min"] == facts["ratio_max"] == pytest.approx(1.0)


def test_a_different_ranking_on_fresh_servers_is_said():
    text = REPORT.modes_text(_results(), _thorough({"essential-x10": {"ab": 100}}))
    assert "| the same on fresh servers | `essential-x10` > `plain-x10` |" in text
    assert "the most | 79.0 µs |" in text  # 1 µs on the one server, 80 on fresh ones


def test_without_a_thorough_run_there_is_no_comparison():
    assert "No `--thorough` run is committed" in REPORT.modes_text(_results(), None)
    assert REPORT.modes_comparison(_results(), None) is None
    assert not any(name.startswith("modes_") for name in REPORT.facts(_results(), None))


# -- the timeline figure and the --profile run, as facts ---------------------------------

def test_the_timeline_facts_are_the_default_dispatchers_medians_per_set_up():
    results = _results()
    results["pools"] = {"pools": {"default": {"threads": 8}}}
    samples = {"none": ([2, 1, 3, None], [0, 0, 50]), "plain-x10": ([8, 8, 7], [40, 10, 900, None]),
               "essential-x10": ([3, 2, 8], [0, 0, 12]), "plain-x1": ([8, 8, 8], [5, 5, 5])}
    for v in results["variants"]:
        if v["name"] in samples:
            busy, queued = samples[v["name"]]
            v["timeline"] = {"pools": {"default": {"busy": busy, "queued": queued, "threads": [8] * len(busy)}}}
    facts = REPORT.facts(results, None)
    assert facts["dispatcher_threads"] == 8
    assert (facts["busy_median_none"], facts["queued_median_none"]) == (2, 0)
    assert (facts["busy_median_plain_x10"], facts["queued_median_plain_x10"]) == (8, 40)
    assert (facts["busy_median_essential_x10"], facts["queued_median_essential_x10"]) == (3, 0)
    # Only the set-ups of the timeline figure.
    assert "busy_median_plain_x1" not in facts
    del results["pools"]
    assert "dispatcher_threads" not in REPORT.facts(results, None)


class _Lab:
    def __init__(self, folder):
        self.dir = folder


def test_the_profile_facts_are_the_profiled_runs_table(tmp_path, monkeypatch):
    from pul import profile

    variants = []
    stacks = {"plain-x1": {"pool;play/api/libs/streams/FlattenedAccumulator.run": 1, "pool;other": 3},
              "java-plain-x1": {"pool;[Thread-N];x": 1, "pool;other": 1}}
    for name in REPORT.PROFILED:
        folded = profile.Folded(2, stacks.get(name, {"pool;other": 4}))
        profile.write(folded, tmp_path / "results" / "profile" / f"{name}.folded.gz")
        variants.append({"name": name, "server_cpu_ms_per_request": 0.146 if name == "java-plain-x1" else 0.018,
                         "profile": {"samples": folded.samples, "file": f"{name}.folded.gz"}})
    monkeypatch.setattr(REPORT.report, "profiled_run",
                        lambda lab: {"variants": variants} if lab.dir == tmp_path else None)
    facts = REPORT.facts(_results(), _Lab(tmp_path))
    assert facts["profile_cpu_us_java_plain_x1"] == 146 and facts["profile_cpu_us_plain_x1"] == 18
    assert facts["profile_samples_java_plain_x1"] == 2 and facts["profile_samples_none"] == 4
    assert facts["profile_accumulator_plain_x1"] == 0.25 and facts["profile_materializer_plain_x1"] == 0
    assert facts["profile_own_thread_java_plain_x1"] == 0.5
    # No profiled run: no profile facts.
    assert not any(name.startswith("profile_") for name in REPORT.facts(_results(), _Lab(tmp_path / "none")))
