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
