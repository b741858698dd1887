"""Lab 06's report: the table's columns and what the chapter's claims read of a run (facts).
Made-up results only: no run needed."""

from __future__ import annotations

import pytest

from pul.testing import committed_results, this_lab

LAB = this_lab(__file__)
REPORT = LAB.module("report")


def _variant(name, rate, mean_ms, concurrency=50, duration_s=4.0, **more):
    return {"name": name, "requests_per_sec": rate, "mean_ms": mean_ms, "concurrency": concurrency,
            "duration_s": duration_s, "complete": round(rate * duration_s), **more}


def test_the_table_shows_the_mean_latency_beside_the_percentiles():
    headings = [c[0] for c in REPORT.table_columns({})]
    assert headings[headings.index("req/s") + 1:headings.index("req/s") + 4] == ["mean ms", "p50 ms", "p99 ms"]


def test_littles_law_is_the_mean_latency_times_the_throughput_over_the_requests_in_flight():
    # 50 in flight at 250 req/s: 200 ms by Little's law; a mean of 190 ms makes 47.5 of the 50.
    assert REPORT.littles_law(_variant("a", 250.0, 190.0)) == pytest.approx(0.95)
    assert REPORT.littles_law(_variant("none", 0.0, 0.0)) is None


def test_the_requests_left_in_flight_hold_the_waiting_the_completed_ones_do_not():
    # 50 in flight for 4 s: 200 s of waiting. 132 requests completed with a mean of 1.06 s account
    # for 139.92 s of it; the 50 left in flight when ab stopped had waited 60.08 s, 1.2 s each.
    v = _variant("pinned", 33.0, 1060.0, complete=132)
    assert REPORT.left_waiting_s(v) == pytest.approx(60.08 / 50)


def test_facts_bound_littles_law_over_the_variants_whose_latency_is_short_next_to_their_run():
    results = {"variants": [
        _variant("virtual", 1600.0, 30.5),                     # 0.976 of 50, latency 0.8% of the run
        _variant("virtual-c=1000", 3400.0, 280.0, concurrency=1000),   # 0.952, latency 7%
        _variant("synchronized-jdk21", 33.0, 1060.0, complete=132),    # 0.70, latency 27%: left out
    ]}
    facts = REPORT.facts(results, LAB)
    assert facts["variants"] == 3 and facts["short_latency_variants"] == 2
    assert facts["littles_law_short_min"] == pytest.approx(0.952) and facts["littles_law_short_max"] == pytest.approx(
        0.976)
    assert facts["littles_law_synchronized_jdk21"] == pytest.approx(0.6996)
    assert facts["left_waiting_s_synchronized_jdk21"] == pytest.approx(1.202)


def test_facts_read_the_footprint_and_the_timelines_medians():
    timeline = {"jvm_threads": [28, 28, 29], "jvm_threads_started": 0,
                "pools": {"default": {"busy": [8, 8, 7, None], "queued": [0, 4, 9]},
                          "per-request": {"threads": [1000, 1000]}}}
    v = _variant("per-request-pool-c=1000", 2700.0, 350.0, concurrency=1000, timeline=timeline,
                 footprint={"threads_max": 1042})
    facts = REPORT.facts({"variants": [v]}, LAB)
    assert facts["threads_max_per_request_pool_c_1000"] == 1042
    assert facts["jvm_threads_median_per_request_pool_c_1000"] == 28
    assert facts["threads_started_per_request_pool_c_1000"] == 0
    assert facts["default_busy_median_per_request_pool_c_1000"] == 8
    assert facts["default_queued_median_per_request_pool_c_1000"] == 4
    assert facts["per_request_threads_median_per_request_pool_c_1000"] == 1000


def test_the_committed_run_has_a_fact_for_every_variant_the_chapter_reads():
    facts = REPORT.facts(committed_results(LAB.dir.name), LAB)
    for name in ("default", "synchronized_jdk21", "jdbc_connections_4"):
        assert f"littles_law_{name}" in facts and f"threads_max_{name}" in facts


def test_facts_name_the_variant_that_cost_its_server_the_most_cpu_per_request():
    results = {"variants": [_variant("virtual", 1600.0, 30.5, server_cpu_ms_per_request=0.4),
                            _variant("synchronized-jdk21", 33.0, 1060.0, server_cpu_ms_per_request=2.4),
                            _variant("remote", 100.0, 500.0)]}
    assert REPORT.facts(results, LAB)["most_cpu_per_request"] == "synchronized-jdk21"
