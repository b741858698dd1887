"""The summary's note for a variant outside the model's band says what the run measured about why."""

from __future__ import annotations

from pul.report import band_note


def _variant(ratio, calibration_rate=45_000, run_rates=(44_700, 48_780, 47_008), settled=True):
    return {"name": "none-again", "measured_over_predicted": ratio, "bound_by": "server CPU",
            "server_cpu_utilization": 0.8, "jit_share": 0.01,
            "calibration": {"requests_per_sec": calibration_rate},
            "warmup": {"settled": settled},
            "extra": {"runs": [{"tool": "ab", "requests_per_sec": r} for r in run_rates]}}


def test_inside_the_band_there_is_no_note():
    assert band_note(_variant(1.0)) is None


def test_a_calibration_round_slower_than_every_run_is_named():
    note = band_note(_variant(1.15, calibration_rate=41_798))
    assert "its calibration round (41,798 req/s) was slower than every one of its 3 measured runs " \
           "(44,700–48,780 req/s)" in note


def test_a_calibration_round_within_the_runs_is_not_blamed():
    assert "calibration round" not in band_note(_variant(1.15, calibration_rate=46_000))


def test_an_unsettled_warm_up_is_named():
    assert "its warm-up had not settled" in band_note(_variant(1.22, settled=False))


def test_a_run_that_served_dearer_than_its_calibration_says_how_much():
    v = {**_variant(0.84), "requests_per_sec": 1011.0, "server_cpu_ms_per_request": 0.967, "jit_share": 0.145,
         "calibration": {"requests_per_sec": 1127.0, "server_cpu_ms": 0.744, "jit_share": 0.108}}
    note = band_note(v)
    # 0.967 ms a request, 0.143 ms of it the compiler's (14.5% of the core at 1,011 req/s).
    assert "serving a request took 0.824 ms of CPU during the run against 0.744 ms calibrated before it (+11%)" in note
    assert "JIT compiler took" not in note  # 14.5% against 10.8%: too close to name
    busier = band_note({**v, "jit_share": 0.25})
    assert "the JIT compiler took 25% of the core during the run against 11% in the calibration" in busier


def test_a_run_that_served_as_calibrated_is_not_blamed():
    v = {**_variant(0.84), "requests_per_sec": 1000.0, "server_cpu_ms_per_request": 0.76, "jit_share": 0.01,
         "calibration": {"requests_per_sec": 1127.0, "server_cpu_ms": 0.744, "jit_share": 0.0}}
    assert "serving a request" not in band_note(v)


def test_a_database_bound_run_whose_core_spent_more_per_request_says_how_much():
    # Lab 03's pool=32: 157.9 req/s with the database's core 91% busy, 5.76 ms a request against
    # the 5.27 ms of the round before it.
    v = {"name": "pool=32", "measured_over_predicted": 0.83, "bound_by": "database CPU",
         "requests_per_sec": 157.9, "load_cores_busy": 0.91,
         "calibration": {"load_cores_cpu_ms": 5.2667, "load_cores": 1}, "extra": {"postgres_cpu_utilization": 0.86}}
    note = band_note(v)
    assert "the database CPU was 86% busy" in note
    assert "its core spent 5.76 ms per request during the run against 5.27 ms in the round before it (+9%)" in note
    assert "its core spent" not in band_note({**v, "load_cores_busy": 0.85})  # 5.38 ms: within 5%


def test_a_step_measured_again_says_what_its_first_run_was():
    first = {"serving_drift": -0.353, "requests_per_sec": 4477.6, "measured_over_predicted": 1.522}
    v = {**_variant(1.16), "extra": {"runs": [], "remeasured": first}}
    assert ("measured a second time: its first run served at -35% of the CPU per request calibrated "
            "before it (4,478 req/s, 1.52 of its bound then)") in band_note(v)
    assert band_note({**v, "extra": {"runs": [], "remeasured": [first]}}) == band_note(v)
    assert "measured a second time" not in band_note(_variant(1.16))
    second = {"serving_drift": 0.28, "requests_per_sec": 3012.4, "measured_over_predicted": 0.781}
    assert ("measured 3 times: its earlier runs served at -35% (4,478 req/s, 1.52 of its bound) and +28% "
            "(3,012 req/s, 0.78 of its bound) of the CPU per request calibrated before each"
            ) in band_note({**v, "extra": {"runs": [], "remeasured": [first, second]}})


def test_a_range_gives_its_ratio_to_each_end():
    """A row inside its range (pul.model.CONVOY) reads as such: at least 1 over the convoy's floor,
    at most 1 over the smooth prediction; a single prediction keeps its one ratio."""
    from pul.results import predicted_cell, ratio_cell
    ranged = {"requests_per_sec": 1542.0, "predicted_requests_per_sec": 1022.0,
              "predicted_upper_requests_per_sec": 1618.0, "measured_over_predicted": round(1542 / 1022, 3)}
    assert predicted_cell(ranged) == "1,022–1,618"
    assert ratio_cell(ranged) == "1.51 / 0.95"
    single = {"requests_per_sec": 253.0, "predicted_requests_per_sec": 260.0,
              "predicted_upper_requests_per_sec": None, "measured_over_predicted": 0.973}
    assert ratio_cell(single) == "0.97"
    assert ratio_cell({"measured_over_predicted": None}) == "–"
