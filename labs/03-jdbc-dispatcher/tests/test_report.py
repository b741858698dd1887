"""Lab 03's report: goodput where responses were not 2xx, the sweep's facts (its calibration, HikariCP's
number against the corner, the lockstep and wide-jitter steps against their pools), and the spread of
the database CPU bound's calibrated parts, row by row.
Made-up results only: no run needed."""

import pytest

from pul import model
from pul.testing import this_lab

LAB = this_lab(__file__)
report = LAB.module("report")


def _variant(name, rate, complete=1000, non_2xx=0, failed=0, **more):
    return {"name": name, "requests_per_sec": rate, "complete": complete, "non_2xx": non_2xx,
            "failed": failed, **more}


def test_goodput_counts_only_2xx_responses():
    # 234 responses a second, 85 of the 1,000 were 503s: 234 x 915 / 1000 were answers.
    assert report.goodput(_variant("oversized-dispatcher", 234.0, non_2xx=85)) == pytest.approx(234.0 * 0.915)
    assert report.goodput(_variant("ok", 100.0)) == pytest.approx(100.0)
    # A failed request is not a good one either; nothing completed, nothing to say.
    assert report.goodput(_variant("bad", 100.0, complete=100, non_2xx=10, failed=10)) == pytest.approx(80.0)
    assert report.goodput(_variant("none", 0.0, complete=0)) is None


def test_goodput_column_only_where_some_response_was_not_2xx():
    columns = report.TABLE_COLUMNS
    assert report.with_goodput(columns, [_variant("a", 1.0), _variant("b", 2.0)]) == columns
    with_it = report.with_goodput(columns, [_variant("a", 1.0), _variant("b", 2.0, non_2xx=1)])
    headings = [c[0] for c in with_it]
    # right after req/s, so the two sit side by side
    assert headings[headings.index("req/s") + 1] == "goodput (2xx/s)"
    assert len(with_it) == len(columns) + 1


def test_status_heading_says_it_may_be_a_maximum():
    headings = [c[0] for c in report.TABLE_COLUMNS]
    assert report.STATUS_HEADING in headings and "max" in report.STATUS_HEADING
    record = {"requests": 91, "max_ms": 4291.2, "p99_ms": None, "samples_for_p99": 100}
    assert report._status_tail(record).startswith("max ")


def _sweep_step(pool, rate, bound_by, ratio, load_ms=0.06, postgres_ms=2.8, rounds=()):
    return {"name": f"pool={pool}", "requests_per_sec": rate, "p99_ms": 300.0, "mean_ms": 200.0,
            "service_ms": 83.0, "bound_by": bound_by, "measured_over_predicted": ratio,
            "bounds": {"database CPU": round(1000 / (postgres_ms + load_ms), 1)},
            "calibration": {"load_cpu_ms": load_ms},
            "warmup": {"rounds": [{"complete": n, "load_cpu_ms": cpu / n} for n, cpu in rounds]},
            "extra": {"pool_size": pool, "query_alone_ms": 3.0, "postgres_cpu_ms_per_query": postgres_ms,
                      "postgres_cores": 1, "littles_law_requests_per_sec": pool * 1000 / 83.0,
                      "server": "shared", "database_on_load_cores": {"cores": 1, "cpu_ms": postgres_ms}}}


def _sweep(*steps):
    return {"params": {"concurrency": 64, "query_ms": 80}, "pools": {"query_jitter": 0.5},
            "variants": list(steps)}


def test_the_sweeps_facts_are_its_calibration_its_prediction_and_hikaris_number_against_the_corner():
    sweep = _sweep(_sweep_step(2, 24.0, "threads", 0.99), _sweep_step(4, 44.0, "threads", 0.92),
                   _sweep_step(32, 283.0, "database CPU", 0.81))
    facts = report.facts(sweep, LAB)
    # 1 core, 2.8 ms a query: 357 queries a second; x 83 ms = about 30 connections, the pool of 32.
    assert facts["limit_per_s"] == pytest.approx(1000 / 2.8, abs=0.01)
    assert facts["corner"] == pytest.approx(1000 / 2.8 * 0.083, abs=0.01) and facts["corner_pool"] == 32
    # HikariCP's number for 1 core: 2 connections, the pool of 2, which served 24 of the corner's 283.
    assert (facts["hikari_connections"], facts["hikari_pool"]) == (2, 2)
    assert facts["corner_over_hikari"] == pytest.approx(283 / 24, abs=0.001)
    assert facts["best_pool"] == 32 and facts["hold_ms"] == 83.0 and facts["wait_ms"] == 80
    table = report.sweep_facts_table(sweep)
    assert "| the step nearest HikariCP's number | `pool=2` |" in table
    assert "| the corner, *N*\\* = *k* × *S* ÷ *d* | about 30 connections |" in table
    assert len(table.splitlines()) == 2 + len([name for name in facts if not name.startswith("db_")
                                               and name != "query_jitter"])


def test_the_worked_mean_value_analysis_takes_the_sweeps_s_and_d():
    sweep = _sweep(_sweep_step(2, 24.0, "threads", 0.99), _sweep_step(32, 283.0, "database CPU", 0.81))
    ex = report.mva_example(sweep)
    # S = 83 ms, d = 2.8 ms: the first rows as pul.model works them, the corner at 83 / 2.8 ≈ 30.
    assert (ex["hold_ms"], ex["d_ms"]) == (83.0, 2.8)
    assert ex["rows"] == model.mean_value_steps(report.MVA_EXAMPLE_ROWS, 83.0, 2.8)
    assert ex["little_per_s"] == pytest.approx(3000 / 83.0)
    assert ex["corner_n"] == 30 and ex["corner_per_s"] == pytest.approx(model.mean_value_analysis(30, 83.0, 2.8))
    assert ex["bounds_per_s"] == pytest.approx(min(30000 / 83.0, 1000 / 2.8))
    text = report.mva_text(sweep)
    assert "*S* = 83.00 ms, of which *d* = 2.800 ms at the core:" in text
    # The first row: nobody queued; R(1) = d, λ(1) = 1 / S.
    assert "| 1 | 2.800 ms × (1 + 0) = 2.800 ms | 1 ÷ (80.20 + 2.800) ms = 12.05/s |" in text
    second = ex["rows"][1]
    assert f"(1 + {report._sig(ex['rows'][0]['queue'], 3)}) = {report._sig(second['at_cpu_ms'])} ms" in text
    assert "for three connections" in text and "(*N*\\* ≈ 30 here)" in text
    assert f"give {ex['corner_per_s']:,.0f}/s against the bounds' {ex['bounds_per_s']:,.0f}/s." in text
    for anchor in ("inputs", "table", "corner"):
        assert f"<!-- ANCHOR: {anchor} -->" in text and f"<!-- ANCHOR_END: {anchor} -->" in text
    # A run without a sweep still gives the chapter every anchor.
    empty = report.mva_text(_sweep(_variant("database-dispatcher", 200.0)))
    assert "no sweep" in empty and "<!-- ANCHOR: corner -->" in empty


def test_the_servers_own_jitter_and_its_calibrations_runs_are_facts():
    assert report.facts(_sweep(_sweep_step(2, 24.0, "threads", 0.99)), LAB)["query_jitter"] == 0.5
    calibrated = {**_sweep(_variant("database-dispatcher", 200.0)), "pools": {"calibration": {"runs": 300}}}
    assert report.facts(calibrated, LAB)["calibration_runs"] == 300


def test_lockstep_and_wide_jitter_are_shares_of_the_step_of_their_size():
    lockstep = {**_sweep_step(32, 200.0, "database CPU", 1.0), "name": "lockstep-pool=32"}
    wide = {**_sweep_step(64, 300.0, "database CPU", 0.9), "name": "wide-jitter-pool=64"}
    sweep = _sweep(_sweep_step(32, 250.0, "threads", 0.92), _sweep_step(64, 280.0, "database CPU", 0.8),
                   lockstep, wide)
    facts = report.facts(sweep, LAB)
    assert facts["lockstep_share"] == pytest.approx(0.8)
    assert facts["wide_jitter_share"] == pytest.approx(300 / 280, abs=1e-4)
    assert "| requests/s of `lockstep-pool=32` (every wait exactly *w*) ÷ `pool=32` | 80% |" in \
        report.sweep_facts_table(sweep)
    # The four set-ups alone, no sweep and no timeline: only their goodput for a claim to read.
    assert report.facts(_sweep(_variant("database-dispatcher", 200.0)), LAB) == {"goodput_database_dispatcher": 200.0}


def test_a_set_ups_facts_are_its_goodput_and_how_often_every_connection_was_in_use():
    # 20 connections, in use in 3 of 4 samples (a None is no sample); 85 of 1,000 answers were 503s.
    timeline = {"pools": {"database-64": {"busy": [64, 64, 64, 64], "queued": [0, 0, 0, 0]},
                          "connections": {"active": [20, 20, None, 12, 20], "awaiting": [44, 44, 43, 0, 44]}}}
    oversized = _variant("oversized-dispatcher", 240.0, non_2xx=85, pool="database-64",
                         extra={"connections": 20}, timeline=timeline)
    facts = report.facts(_sweep(oversized), LAB)
    assert facts["goodput_oversized_dispatcher"] == pytest.approx(240.0 * 0.915)
    assert facts["connections_full_share_oversized_dispatcher"] == 0.75
    assert (facts["awaiting_median_oversized_dispatcher"], facts["busy_median_oversized_dispatcher"]) == (44, 64)


def test_the_bound_from_older_calibrations_is_d_plus_abs_cpu_and_its_parts_are_facts():
    rows = [_sweep_step(4, 44.0, "threads", 0.92, load_ms=0.14),
            _sweep_step(64, 285.0, "database CPU", 0.81, load_ms=0.056, postgres_ms=2.94)]
    facts = report.database_bound_facts({"variants": rows})
    # s = d + ab's CPU per request: 2.80 + 0.14 and 2.94 + 0.056.
    assert facts["db_s_ms_least"] == pytest.approx(2.94) and facts["db_s_ms_least_row"] == "pool=4"
    assert facts["db_s_ms_most"] == pytest.approx(2.996) and facts["db_s_ms_most_row"] == "pool=64"
    assert (facts["db_ab_ms_least"], facts["db_ab_ms_most"]) == (0.056, 0.14)
    assert (facts["db_d_ms_least"], facts["db_d_ms_most"]) == (2.8, 2.94) and "db_d_ms_least_row" not in facts
    table = report.database_bound_table({"variants": rows})
    assert "| `ab`'s CPU per request, in the round just before the step | 0.06 ms | `pool=64` | 0.14 ms | `pool=4` |" \
        in table
    assert f"| {1000 / (2.94 + 0.056):,.0f} req/s | `pool=64` |" in table


def test_the_bound_needs_two_rows_with_it():
    rows = {"variants": [_sweep_step(4, 44.0, "threads", 0.92)]}
    assert report.database_bound_table(rows) == "" and report.database_bound_facts(rows) == {}


def test_the_bound_from_the_shared_core_sets_d_beside_what_postgresql_spent():
    rows = [_sweep_step(4, 44.0, "threads", 0.92), _sweep_step(64, 285.0, "database CPU", 0.81),
            {**_sweep_step(32, 200.0, "database CPU", 1.0), "name": "lockstep-pool=32"}]
    rows[2]["extra"]["convoy"] = {"in_service": 32}
    for row, shared_ms, spent_ms in zip(rows, (5.1, 3.9, 3.0), (4.3, 3.1, 2.0)):
        row["calibration"]["load_cores_cpu_ms"] = shared_ms
        row["bounds"]["database CPU"] = round(1000 / shared_ms, 1)
        row["extra"]["postgres_cpu_ms_per_request"] = spent_ms
    results = _sweep(*rows)
    facts = report.facts(results, LAB)
    # The lockstep step has its own prediction: it is left out.
    assert facts["db_rows"] == 2
    assert (facts["db_s_ms_least"], facts["db_s_ms_most"], facts["db_s_ms_most_row"]) == (3.9, 5.1, "pool=4")
    assert (facts["db_rate_per_s_least_row"], facts["db_rate_per_s_least"]) == ("pool=4", 44.0)
    assert facts["db_bound_per_s_least"] == round(1000 / 5.1, 1) and facts["db_bound_per_s_most_row"] == "pool=64"
    # Only pool=64 is bound by it.
    assert facts["db_binding_bound_per_s_least"] == facts["db_binding_bound_per_s_most"] == round(1000 / 3.9, 1)
    assert (facts["db_spent_ms_least"], facts["db_spent_ms_most"]) == (3.1, 4.3)
    assert facts["db_d_ms_least"] == facts["db_d_ms_most"] == 2.8
    table = report.database_bound_table(results)
    assert "over the 2 rows that have it; the lockstep step aside" in table
    assert "| *D*: all the CPU the database's core spent per request" in table and "| 3.90 ms | `pool=64` |" in table
    assert "| PostgreSQL's CPU per request during the measured run | 3.10 ms | `pool=64` | 4.30 ms | `pool=4` |" \
        in table
    assert "`ab`'s CPU" not in table


def test_the_timeline_facts_are_medians_of_each_set_ups_own_pool_and_of_the_connections():
    def timeline(own, busy, queued, active, awaiting):
        return {"pools": {"default": {"busy": [1, 1, 1]}, own: {"busy": busy, "queued": queued},
                          "connections": {"active": active, "awaiting": awaiting}}}

    default = _variant("default-dispatcher", 90.0, pool="default",
                       timeline=timeline("default", [8, 8, 7, None], [70, 72, 80], [8, 8, 8], [0, 0, 1]))
    oversized = _variant("oversized-dispatcher", 240.0, pool="database-64",
                         timeline=timeline("database-64", [64, 63, 64], [0, 0, 0], [20, 20, 19], [44, 43, 44]))
    facts = report.facts(_sweep(default, oversized, _variant("no-timeline", 1.0)), LAB)
    assert (facts["busy_median_default_dispatcher"], facts["queued_median_default_dispatcher"]) == (8, 72)
    assert (facts["connections_median_default_dispatcher"], facts["awaiting_median_default_dispatcher"]) == (8, 0)
    # Its own pool, not the default dispatcher the timeline also samples.
    assert facts["busy_median_oversized_dispatcher"] == 64 and facts["awaiting_median_oversized_dispatcher"] == 44
    # A set-up without a timeline has its goodput, and nothing the timeline would have shown.
    assert [name for name in facts if name.endswith("no_timeline")] == ["goodput_no_timeline"]
