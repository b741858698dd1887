"""Fast tests of lab 05's report on made-up steps: the closed-loop table's 2xx/s column, which
joins only when some answers were not 2xx (503s from admission control), and Little's law check."""

from __future__ import annotations

import pytest

from pul import model
from pul.testing import this_lab

REPORT = this_lab(__file__).module("report")


def _step(c, rate, mean_ms, complete=10_000, failed=0, non_2xx=0, max_ms=None):
    return {"name": f"c={c}", "concurrency": c, "requests_per_sec": rate, "mean_ms": mean_ms,
            "p50_ms": mean_ms, "p90_ms": mean_ms, "p99_ms": mean_ms, "max_ms": max_ms or mean_ms,
            "complete": complete, "failed": failed, "non_2xx": non_2xx, "errors": [],
            "server_cpu_utilization": 0.9, "predicted_requests_per_sec": rate, "extra": {"sweep": "echo"}}


def _header(table: str) -> list[str]:
    return [cell.strip() for cell in table.splitlines()[0].strip("|").split("|")]


def test_no_goodput_column_when_every_answer_was_2xx():
    table = REPORT.closed_table([_step(1, 1000, 1.0), _step(8, 3000, 8 / 3)])
    assert "2xx/s" not in _header(table)


def test_goodput_counts_only_2xx_answers_and_joins_the_table_when_some_were_not():
    # 64 in flight, 12,000 req/s to ab, a quarter of them 503s: 9,000 2xx a second.
    refused = _step(64, 12_000, 64 / 12, complete=40_000, non_2xx=10_000)
    assert REPORT.goodput(refused) == pytest.approx(9_000)
    table = REPORT.closed_table([_step(1, 1000, 1.0), refused])
    header = _header(table)
    assert header[:3] == ["c", "req/s", "2xx/s"]
    rows = [line.strip("|").split("|") for line in table.splitlines()[2:]]
    assert all(len(row) == len(header) for row in rows)
    assert rows[1][2].strip() == "9,000" and rows[0][2].strip() == "1,000"


def test_failed_requests_do_not_count_as_goodput_either():
    assert REPORT.goodput(_step(8, 2000, 4.0, complete=1000, failed=250)) == pytest.approx(1500)
    assert REPORT.goodput(_step(8, 2000, 4.0, complete=0)) == 0


def test_littles_law_holds_for_a_consistent_step_and_fails_when_connections_were_not_timed():
    assert REPORT.little_check(_step(64, 3200, 20.0))["holds"]
    # Half the connections in flight were not being timed: X x R is half of c.
    assert not REPORT.little_check(_step(64, 3200, 10.0, failed=500))["holds"]


def _cpu_step(c, cpu_ms):
    return {**_step(c, 1 / cpu_ms * 1000, 1.0), "server_cpu_ms_per_request": cpu_ms}


def test_the_cpu_trend_says_what_the_ladder_measured():
    flat = REPORT.cpu_trend([_cpu_step(1, 0.385), _cpu_step(2, 0.339), _cpu_step(4, 0.393), _cpu_step(8, 0.35)])
    assert "0.385 ms with one request in flight" in flat and "0.339 ms (c = 2) to 0.393 ms (c = 4)" in flat
    assert "within the busier steps' range, which spans -3% to +12% of their median" in flat
    dearer = REPORT.cpu_trend([_cpu_step(1, 1.17), _cpu_step(2, 0.6), _cpu_step(4, 0.44), _cpu_step(8, 0.45)])
    assert "one request alone cost 2.60x the busier steps' median" in dearer
    assert REPORT.cpu_trend([_cpu_step(2, 0.4), _cpu_step(4, 0.4)]) == ""


def test_the_cpu_trend_leaves_the_compilers_cpu_out_as_the_calibration_does():
    # c=1 at 2,000 req/s, 0.5 ms a request of which the compiler took 0.3 of the core: 0.15 ms a
    # request was the compiler's, 0.35 ms served it (pul.model.serving_drift's arithmetic).
    alone = {**_cpu_step(1, 0.5), "requests_per_sec": 2000, "jit_share": 0.3}
    assert model.serving_cpu_ms(alone) == pytest.approx(0.35)
    trend = REPORT.cpu_trend([alone, _cpu_step(2, 0.25), _cpu_step(4, 0.25)])
    assert "0.350 ms with one request in flight" in trend and "1.40x the busier steps' median" in trend
    assert model.serving_cpu_ms({**_cpu_step(8, 0.25), "requests_per_sec": 0}) is None


def _calibrated_step(c, cpu_ms, jit_share):
    serving = 1 - jit_share
    return {**_cpu_step(c, cpu_ms), "bound_by": "server CPU",
            "calibration": {"server_cpu_ms": cpu_ms, "server_cores": 1, "jit_share": jit_share},
            "bounds": {"server CPU": round(serving / cpu_ms * 1000, 1)}}


def test_the_cpu_table_gives_the_compilers_share_and_the_bounds_arithmetic():
    # The bound leaves out the compiler's share of the core (pul.model.combine): at 0.25 ms and a
    # fifth of the core compiling, 3,200 req/s, not 1 / 0.25 ms = 4,000.
    table = REPORT.cpu_per_request_table([_calibrated_step(1, 0.4, 0.0), _calibrated_step(16, 0.25, 0.2)])
    assert _header(table)[1:5] == ["CPU ms/request, calibrated, compiler left out", "JIT compiler, cores, calibrated",
                                   "CPU ms/request, measured, compiler counted",
                                   "CPU ms/request, measured, compiler left out"]
    assert "| 16 | 0.250 | 0.200 |" in table
    assert ("(the server's cores − the JIT compiler's share, in cores) ÷ the CPU per request, both calibrated: "
            "at c = 16, (1 − 0.200) ÷ 0.250 ms = 3,200 req/s.") in table
    # No share of the run recorded: nothing said about how it moved.
    assert "between the calibration and the run" not in table


def test_the_bounds_arithmetic_says_when_the_compilers_share_fell_in_the_run():
    # Calibrated with a fifth of the core compiling, run with 0.03: the run had more of the core.
    fell = {**_calibrated_step(16, 0.25, 0.2), "jit_share": 0.03, "requests_per_sec": 3853.4}
    table = REPORT.cpu_per_request_table([_calibrated_step(1, 0.4, 0.0), fell])
    assert ("At that step the compiler's share fell between the calibration and the run, from 0.200 to 0.030 "
            "of a core, so the run had more of the core than the bound gave it: it served 3,853 req/s.") in table
    # The measured CPU with the compiler left out: 0.25 - 0.03 x 1000 / 3,853.4.
    assert "| 0.250 | 0.242 |" in table


def test_failed_requests_and_non_2xx_responses_have_columns_of_their_own():
    # ab counts a 503 under "Non-2xx responses", not "Failed requests" (measuring.md): the table
    # must not add them up under one name.
    table = REPORT.closed_table([_step(8, 2000, 4.0, failed=3), _step(64, 12_000, 64 / 12, non_2xx=10_000)])
    header = _header(table)
    rows = [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")))) for line in table.splitlines()[2:]]
    assert [(r["failed"], r["non-2xx"]) for r in rows] == [("3", "0"), ("0", "10,000")]


def test_facts_name_nothing_without_a_run_past_1024():
    # The claims on the run past c = 1,024 read lab05.facts.edges_*; a lab without that run has none.
    assert REPORT.facts({"variants": []}, None) == {}


def test_facts_give_the_kernel_a_run_ran_on():
    # The chapter's claim that the committed runs' kernel has tcp_syn_linear_timeouts (Linux 6.5)
    # reads these: 6.18 must not compare as the number 6.18 < 6.5.
    run = {"variants": [], "machine": {"os": "Debian GNU/Linux 12 (bookworm) (kernel 6.18.44-fc-v857)"}}
    assert REPORT.facts(run, None) == {"kernel_major": 6, "kernel_minor": 18}
    assert REPORT.kernel_version({"machine": {"os": "Debian GNU/Linux 12 (bookworm) (kernel 6.1.0-28-amd64)"}}) == {
        "kernel_major": 6, "kernel_minor": 1}
    assert REPORT.kernel_version({"machine": {}}) == {}


def test_the_sweeps_facts_count_the_steps_their_bounds_their_band_and_littles_law():
    # c=1 predicted exactly, c=2 at 1.2 of its bound (outside the band), c=4 with requests in flight
    # that were never timed (Little's law off, nothing failed); the fixed road at its lanes.
    # (At 1 / CPU per request, c requests in flight take c x that CPU: 0.4 ms, 0.6 ms, 1.0 ms.)
    echo = [{**_calibrated_step(1, 0.4, 0.0), "mean_ms": 0.4, "measured_over_predicted": 1.0, "cpu_steal_share": 0.001},
            {**_calibrated_step(2, 0.3, 0.0), "mean_ms": 0.6, "measured_over_predicted": 1.2, "cpu_steal_share": 0.004},
            {**_calibrated_step(4, 0.25, 0.0), "mean_ms": 0.5, "measured_over_predicted": 0.9}]
    fixed = {**_step(64, 400, 160.0), "name": "fixed-c=64", "bound_by": "threads", "measured_over_predicted": 0.98}
    facts = REPORT.sweep_facts({"variants": [*echo, fixed]})
    assert {name: facts[name] for name in facts if name.startswith(("echo_", "fixed_"))} == {
        "echo_steps": 3, "echo_server_cpu_steps": 3, "echo_within_band_steps": 2, "echo_little_steps": 2,
        "echo_little_broken_clean_steps": 1, "echo_drift_median": 0.0,
        "fixed_steps": 1, "fixed_server_cpu_steps": 0, "fixed_within_band_steps": 1, "fixed_little_steps": 1,
        "fixed_little_broken_clean_steps": 0}
    # One request alone at 0.4 ms against 0.3 and 0.25 at the busier steps; the most steal of any step.
    assert (facts["cpu_alone_ms"], facts["cpu_busier_median_ms"], facts["cpu_busier_most_ms"]) == (0.4, 0.275, 0.3)
    assert facts["steal_share_most"] == 0.004
    # The margin the chapter says Little's law is checked with.
    assert facts["little_tolerance"] == REPORT.LITTLE_TOLERANCE
    # No step here is predicted from the round trip in series; c=1 marked so counts.
    assert (facts["round_trip_steps"], facts["round_trip_most_in_flight"]) == (0, 0)
    echo[0]["extra"] = {**(echo[0].get("extra") or {}), "round_trip": {"in_flight": 1, "floor_requests_per_sec": 2000.0}}
    again = REPORT.sweep_facts({"variants": [*echo, fixed]})
    assert (again["round_trip_steps"], again["round_trip_most_in_flight"]) == (1, 1)


def test_the_timeline_facts_are_each_steps_medians():
    step = {**_step(64, 400, 160.0), "name": "fixed-c=64",
            "timeline": {"cpu_cores": [0.2, 0.3, None, 0.1],
                         "pools": {"lanes": {"busy": [8, 8, 7], "queued": [56, 50, 56]}, "default": {"busy": []}}}}
    assert REPORT.timeline_facts({"variants": [step, _step(1, 2000, 0.5)]}) == {
        "busy_median_lanes_fixed_c_64": 8, "queued_median_lanes_fixed_c_64": 56, "cpu_cores_median_fixed_c_64": 0.2}


def _fixed_run(lanes: int, work_ms: float) -> dict:
    return {"pools": {"work_ms": work_ms, "pools": {"lanes": {"threads": lanes}}}}


def test_the_erlang_c_example_takes_one_lane_and_the_runs_lanes_at_one_utilisation():
    rho, service_s = REPORT.ERLANG_C_UTILISATION, 0.020
    one, eight = REPORT.erlang_c_example(_fixed_run(8, 20))
    assert (one["lanes"], eight["lanes"]) == (1, 8)
    assert one["load"] == pytest.approx(rho) and eight["load"] == pytest.approx(8 * rho)
    # One lane: the chance to wait is the utilisation, M/M/1 waits S rho / (1 - rho), M/D/1 half that.
    assert one["waits"] == pytest.approx(rho)
    assert one["mmc_ms"] == pytest.approx(1000 * service_s * rho / (1 - rho))
    assert one["mdc_ms"] == pytest.approx(one["mmc_ms"] / 2)
    # Eight lanes at the same utilisation: Wq = S C / (c (1 - rho)), a fraction of one lane's.
    assert eight["mmc_ms"] == pytest.approx(1000 * service_s * eight["waits"] / (8 * (1 - rho)))
    assert 0 < eight["waits"] < rho and eight["mmc_ms"] < one["mmc_ms"] / 8
    text = REPORT.erlang_c_text(_fixed_run(8, 20))
    assert f"| 1 | {rho / service_s:,.0f}/s | {rho:.2f} | {rho:.3f} | {one['mmc_ms']:.2f} ms |" in text
    assert f"about 1/{one['mmc_ms'] / eight['mmc_ms']:.0f} of one lane's" in text
    # A road of one lane has nothing to compare.
    assert len(REPORT.erlang_c_example(_fixed_run(1, 20))) == 1
    assert "of one lane's" not in REPORT.erlang_c_text(_fixed_run(1, 20))


def _params(**more) -> dict:
    return {"max_concurrency": 1024, "pool_size": 8, "work_ms": 20, **more}


def test_the_prediction_is_worked_from_the_runs_own_lanes_and_service_time():
    p = REPORT.fixed_prediction(_params())
    assert p["capacity"] == pytest.approx(400) and p["knee"] == 8
    # The first step past the knee and the fixed ladder's top (eight times the lanes).
    assert p["past"] == [(16, pytest.approx(40)), (64, pytest.approx(160))]
    text = REPORT.prediction_text({"params": _params()})
    assert "Eight lanes, 20 ms to cross:" in text
    assert "8 ÷ 0.020 s = 400 requests/s, knee at *c*\\* = 400/s × 0.020 s = 8" in text
    assert "40 ms at c = 16, 160 ms at c = 64." in text
    # Exercise 5-2's road: 4 lanes of 50 ms, and a ladder that stops at 16.
    other = REPORT.prediction_text({"params": _params(max_concurrency=16, pool_size=4, work_ms=50)})
    assert "4 ÷ 0.050 s = 80 requests/s" in other and "from c = 1 to 4," in other
    assert "100 ms at c = 8, 200 ms at c = 16." in other


def _open_step(rate, fraction, arrivals="poisson", lanes=8, work_ms=20, seconds=3, cap=4000):
    return {"name": f"open-{arrivals}-rate={rate}", "concurrency": cap, "pool_threads": lanes, "service_ms": work_ms,
            "extra": {"sweep": "open", "offered_rate": rate, "fraction_of_capacity": fraction, "seconds": seconds,
                      "arrivals": arrivals}}


def test_openload_default_reads_the_scripts_own_defaults():
    assert REPORT.openload_default("timeout") == 30
    assert REPORT.openload_default("arrivals") == "poisson"


def test_past_capacity_is_worked_from_the_runs_step_past_capacity():
    steps = [_open_step(r, f, a) for r, f in ((200, 0.5), (360, 0.9), (480, 1.2)) for a in ("poisson", "even")]
    text = REPORT.past_capacity_text({"variants": steps})
    assert "At 120% of capacity, 80 requests a second more arrive than the 400 the lanes finish." in text
    assert "waits 0.2 · *t*, a fifth of *t*;" in text
    assert "20 ms + 0.2 × 3 s ÷ 2 = 320 ms." in text
    assert "(4,000 − 8) ÷ 80 ≈ 50 s" in text and "30 ÷ 0.2 = 150 s" in text
    assert "stay far from both (at most 8 + 80 × 3 = 248 in flight). A run of a minute at 120%" in text
    # 150 % of 4 lanes of 50 ms: 40/s too many, half a second more wait every second.
    other = REPORT.past_capacity_text({"variants": [_open_step(120, 1.5, lanes=4, work_ms=50, seconds=10)]})
    assert "40 requests a second more arrive than the 80" in other and "0.5 · *t*, half of *t*" in other
    assert "(4,000 − 4) ÷ 40 ≈ 100 s" in other and "30 ÷ 0.5 = 60 s" in other
    assert "A run of a minute at 150% would report timed-out requests" in other


def test_past_capacity_says_so_when_the_run_has_no_step_past_capacity():
    text = REPORT.past_capacity_text({"variants": [_open_step(200, 0.5)]})
    assert "no open-loop step past capacity" in text
    for anchor in ("excess", "mean", "limits"):
        assert f"ANCHOR: {anchor} -->" in text and f"ANCHOR_END: {anchor} -->" in text


def test_a_run_with_open_loop_steps_has_the_timeout_they_ran_with_as_a_fact():
    assert REPORT.facts({"variants": [_open_step(480, 1.2)]}, None)["openload_timeout_s"] == 30
    assert "openload_timeout_s" not in REPORT.facts({"variants": []}, None)
