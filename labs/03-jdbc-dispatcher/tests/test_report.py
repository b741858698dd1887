"""Lab 03's report: goodput where responses were not 2xx, the sweep's facts (its calibration, HikariCP's
number against the corner, the lockstep and wide-jitter steps against their pools), and the spread of
the database bound's calibrated parts.
Made-up results only: no run needed."""

import pytest

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
    assert "| the corner, *N*\\* = *k* × *h* ÷ *d* | about 30 connections |" in table
    assert len(table.splitlines()) == 2 + len(facts)


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
    # The four set-ups alone, no sweep: nothing for a claim to read.
    assert report.facts(_sweep(_variant("database-dispatcher", 200.0)), LAB) == {}


def test_bound_spread_names_both_parts_and_the_bounds_range():
    rows = [_sweep_step(4, 44.0, "threads", 0.92, load_ms=0.14, rounds=[(75, 15.0)]),
            _sweep_step(64, 285.0, "database CPU", 0.81, load_ms=0.056, postgres_ms=2.94, rounds=[(375, 22.0)])]
    text = report.database_bound_spread({"variants": rows})
    assert "2.80 to 2.94 ms" in text and "0.056 to 0.140 ms" in text
    low, high = 1000 / (2.94 + 0.056), 1000 / (2.8 + 0.14)
    assert f"from {min(low, high):,.0f} to {max(low, high):,.0f} req/s" in text
    # ab's CPU per round grew 1.5x for 5x the requests: the short rounds weigh most per request.
    assert "grew far less" in text


def test_bound_spread_says_nothing_about_round_sizes_when_ab_scaled_with_them():
    rows = [_sweep_step(4, 44.0, "threads", 0.92, rounds=[(75, 5.0)]),
            _sweep_step(64, 285.0, "database CPU", 0.81, rounds=[(375, 25.0)])]
    text = report.database_bound_spread({"variants": rows})
    assert text and "grew far less" not in text
    assert "(2.80 ms)" in text  # one calibration


def test_bound_spread_needs_two_rows_with_that_bound():
    assert report.database_bound_spread({"variants": [_sweep_step(4, 44.0, "threads", 0.92)]}) == ""


def test_bound_spread_from_the_shared_core_sets_d_beside_what_postgresql_spent():
    rows = [_sweep_step(4, 44.0, "threads", 0.92), _sweep_step(64, 285.0, "database CPU", 0.81)]
    for row, shared_ms, spent_ms in zip(rows, (5.1, 3.9), (4.3, 3.1)):
        row["calibration"]["load_cores_cpu_ms"] = shared_ms
        row["bounds"]["database CPU"] = round(1000 / shared_ms, 1)
        row["extra"]["postgres_cpu_ms_per_request"] = spent_ms
    text = report.database_bound_spread({"variants": rows})
    assert "1 core / s" in text and "3.90 to 5.10 ms" in text
    assert f"from {1000 / 5.1:,.0f} to {1000 / 3.9:,.0f} req/s" in text
    assert "(d) was 2.80 ms" in text and "3.10 to 4.30 ms per request" in text
