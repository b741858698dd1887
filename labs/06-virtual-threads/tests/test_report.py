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


def _pool_at_a_thousand(busy, queued, threads_bound, core_bound):
    timeline = {"pools": {"pool": {"busy": busy, "queued": queued}}}
    v = _variant("pool-c=1000", min(threads_bound, core_bound) * 0.95, 320.0, concurrency=1000, timeline=timeline,
                 pool_threads=100, service_ms=30, bound_by="threads" if threads_bound < core_bound else "server CPU",
                 bounds={"threads": threads_bound, "server CPU": core_bound}, extra={"group": "footprint"})
    return {"params": {"high_concurrency": 1000, "seconds": 3}, "variants": [v]}


def test_the_pool_at_a_thousand_reads_as_its_run_binds_it():
    # Threads bind (a fast core): its threads and queue as the timeline saw them, the threads named,
    # a median of 99 busy included (a sample can catch a thread between two tasks).
    fast = _pool_at_a_thousand([99, 99, 100], [850, 860, 870], 3333.3, 3650.0)
    assert "99 of the pool's 100 threads busy at the median, and 860 of the other 900" in REPORT.pool_timeline_markdown(fast)
    assert "its threads bind it" in REPORT.pool_timeline_markdown(fast)
    assert "meets its own bound first" in REPORT.thousand_markdown(fast) and "(3,650 a second)" in REPORT.thousand_markdown(fast)
    # The core binds, far below the threads' bound: as many busy as Little's law gives, 71 held
    # 30 ms at 2,375/s, and the queue empty.
    slow = _pool_at_a_thousand([70, 71, 74], [0, 0, 1], 3333.3, 2500.0)
    assert "71 of the pool's 100 threads are busy at the median, each held 71 ÷ 2,375/s = 30 ms" in (
        REPORT.pool_timeline_markdown(slow))
    assert "its queue is empty at the median" in REPORT.pool_timeline_markdown(slow)
    assert "so the core binds it too." in REPORT.thousand_markdown(slow)
    # The core binds far below the threads, the pool full all the same: each thread held longer
    # than its work, waiting for the core.
    held = _pool_at_a_thousand([100, 100, 100], [500, 520, 530], 3333.3, 2500.0)
    assert "more than the 30 ms of the work itself" in REPORT.pool_timeline_markdown(held)
    assert "520 tasks wait in its queue" in REPORT.pool_timeline_markdown(held)
    # The core binds, just under the threads.
    close = _pool_at_a_thousand([100, 100, 100], [740, 748, 750], 3333.3, 3205.0)
    assert "if only just, 4% under the threads' bound" in REPORT.thousand_markdown(close)
    # Another bound (the load generator) or no calibration: no passage, rather than a wrong one.
    other = _pool_at_a_thousand([100], [0], 3333.3, 3650.0)
    other["variants"][0]["bound_by"] = "load generator"
    assert REPORT.pool_timeline_markdown(other) == REPORT.thousand_markdown(other) == ""
    del other["variants"][0]["bounds"]["server CPU"]
    other["variants"][0]["bound_by"] = "threads"
    assert REPORT.thousand_markdown(other) == ""


def test_the_pinned_rows_waiting_adds_up_from_its_run():
    # 50 in flight for 3 s: 150 s of waiting; 100 requests of a 0.9-s mean hold 90 s, the 50 left
    # behind 60 s, 1.2 s each: 40% of the waiting, and the mean 40% under Little's law.
    v = _variant("synchronized-jdk21", 100 / 3, 900.0, duration_s=3.0, complete=100, service_ms=30)
    text = REPORT.pinned_waiting_markdown({"params": {"seconds": 3}, "variants": [v]})
    assert text.startswith("This row's mean is 40% under it.")
    assert "50 × 3.0 s = 150 s of waiting" in text and "about 90 s of it" in text
    assert "waited 1.2 s each" in text and "this one leaves 40%." in text


def test_the_schedulers_gauges_read_as_shares_of_samples_not_medians():
    # A carrier busy in 4 of 8 samples: its median could be 0 or 1 from run to run; a share of 0.5 is what
    # the run saw. Queued: the most at once.
    def run_with(name, busy, queued, awaiting=None, concurrency=1000):
        pools = {"carriers": {"busy": busy, "queued": queued, "threads": [1] * len(busy)}}
        if awaiting is not None:
            pools["connections"] = {"active": [4] * len(awaiting), "awaiting": awaiting}
        return _variant(name, 2500.0, 380.0, concurrency=concurrency, timeline={"pools": pools})

    crowded = run_with("virtual-c=1000", [0, 1, 1, 0, 1, 0, 1, 0], [0, 3, 112, 0, 1, 0, 2, 0])
    waiting = run_with("jdbc-connections=4", [0, 0, 1, 0, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0, 0, 0],
                       awaiting=[46, 45, 46, 46, 47, 46, 46, 46], concurrency=50)
    assert REPORT._carriers(crowded) == {"carriers_busy_share_virtual_c_1000": 0.5,
                                         "carriers_queued_max_virtual_c_1000": 112}
    text = REPORT.scheduler_markdown({"variants": [crowded, waiting]}, {"params": {"high_concurrency": 1000}})
    assert "busy in 50% of the samples, and up to 112 virtual threads were queued" in text
    assert "with 46 virtual threads waiting for a connection at the median" in text
    assert "busy in only 12% of the samples, and its queue never held more than 1." in text
    # A run on Java 21 has no scheduler gauges: no passage rather than a wrong one.
    assert REPORT.scheduler_markdown({"variants": [_variant("virtual-c=1000", 2500.0, 380.0, timeline={})]},
                                     {"params": {"high_concurrency": 1000}}) == ""


def test_the_committed_scheduler_run_has_the_gauges_the_chapter_reads():
    # results/scheduler/: a run on Java 25 of the two variants chapter 6 reads the scheduler of.
    run = REPORT.scheduler_run(LAB)
    assert run is not None and {v["runtime"] for v in run["variants"]} == {"jdk25"}
    facts = REPORT.facts(committed_results(LAB.dir.name), LAB)
    for name in ("virtual_c_1000", "jdbc_connections_4"):
        assert f"scheduler_carriers_busy_share_{name}" in facts and f"scheduler_carriers_queued_max_{name}" in facts
