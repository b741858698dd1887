"""pul.testing.run_lab(..., again_if_slowed=N): a smoke run whose steadiness probes saw the host
slow the server's core is measured again, up to N times, saying so (issue #32: a host effect the probe sees is
re-measured and said, never passed silently). A stand-in `scripts/lab` writes the results: the
first run's after-probe at 65% of the speed of the one before it (lab 05 in census
2026-12-07-final-amd, rep 2), then a steady run."""

from __future__ import annotations

import sys

import pytest

from pul import testing

STAND_IN = r'''
import json, sys
from pathlib import Path
args = sys.argv[1:]
results = Path(args[args.index("--results-dir") + 1])
counter = Path(sys.argv[0]).with_suffix(".count")
calls = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(calls + 1))
after = {"fastest_count": 2130000 if calls >= SLOWED else 1376000, "median_share": 0.98}
data = {"duration_s": 10, "phase_seconds": {"measured runs": 10}, "call": calls,
        "machine": {"steadiness": {"before": {"fastest_count": 2130000, "median_share": 0.91}, "after": after}}}
results.mkdir(parents=True, exist_ok=True)
(results / "latest.json").write_text(json.dumps(data))
print("stand-in run", calls)
'''


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    def make(slowed_runs: int):
        script = tmp_path / "lab.py"
        script.write_text(STAND_IN.replace("SLOWED", str(slowed_runs)))
        monkeypatch.setattr(testing, "LAB", [sys.executable, str(script)])
        monkeypatch.delenv(testing.SMOKE_RESULTS_VARIABLE, raising=False)
        return script.with_suffix(".count")
    return make


def test_a_slowed_run_is_measured_again_and_says_so(stand_in, tmp_path, capsys):
    calls = stand_in(1)
    data = testing.run_lab("05", results_dir=tmp_path / "r", again_if_slowed=2)
    assert calls.read_text() == "2" and data["call"] == 1 and data["runs"] == 2
    assert "at 65% of its speed in one probe against the other" in data["measured_again"]
    out = capsys.readouterr().out
    assert "Measuring the whole run again (1 of at most 2)" in out and "too:" not in out


def test_a_run_slowed_again_is_measured_again_while_attempts_remain(stand_in, tmp_path, capsys):
    calls = stand_in(2)
    data = testing.run_lab("05", results_dir=tmp_path / "r", again_if_slowed=2)
    assert calls.read_text() == "3" and data["call"] == 2 and data["runs"] == 3
    out = capsys.readouterr().out
    assert "(2 of at most 2)" in out and "too:" not in out


def test_the_last_slowed_run_is_checked_and_named(stand_in, tmp_path, capsys):
    calls = stand_in(3)
    data = testing.run_lab("05", results_dir=tmp_path / "r", again_if_slowed=2)
    assert calls.read_text() == "3" and data["call"] == 2
    assert "run 3 too:" in capsys.readouterr().out


@pytest.mark.parametrize("again", [0, 2])
def test_a_steady_run_or_a_lab_that_does_not_ask_runs_once(stand_in, tmp_path, again):
    calls = stand_in(0 if again else 1)
    data = testing.run_lab("05", results_dir=tmp_path / "r", again_if_slowed=again)
    assert calls.read_text() == "1" and data["call"] == 0 and "measured_again" not in data


def test_a_run_whose_steps_never_held_their_calibration_is_measured_again(tmp_path, monkeypatch, capsys):
    """Both probes steady, but a step the driver measured three times without its calibration and
    its run agreeing (pul.model.UNSTEADY): the host moved the core within the run (census
    2026-12-07-lab06-range, rep 1), so the run is measured again and says which step saw it."""
    script = tmp_path / "lab.py"
    script.write_text(STAND_IN.replace("SLOWED", "0").replace(
        '"call": calls,', '"call": calls, "variants": [{"name": "per-request-pool-c=1000", '
                          '"extra": {"unsteady": calls != 1}}, {"name": "virtual", "extra": {}}],'))
    monkeypatch.setattr(testing, "LAB", [sys.executable, str(script)])
    monkeypatch.delenv(testing.SMOKE_RESULTS_VARIABLE, raising=False)
    data = testing.run_lab("06", results_dir=tmp_path / "r", again_if_slowed=1, unsteady_is_slowed=True)
    assert data["call"] == 1 and data["runs"] == 2
    assert "per-request-pool-c=1000 served at another CPU per request" in data["measured_again"]
    assert "virtual" not in data["measured_again"]
    assert "Measuring the whole run again (1 of at most 1)" in capsys.readouterr().out
    # A lab whose checks allow such steps (lab 05's, a share of them) is not measured again for them.
    data = testing.run_lab("05", results_dir=tmp_path / "again", again_if_slowed=1)
    assert data["call"] == 2 and "runs" not in data


def load_core_stand_in(tmp_path, monkeypatch, share: str) -> None:
    """A stand-in whose server's probes are steady and whose load generator's core's probe before
    the run reads `share` (a Python expression of `calls`, the runs before this one)."""
    script = tmp_path / "lab.py"
    script.write_text(STAND_IN.replace("SLOWED", "0").replace(
        '"after": after}}}',
        '"after": after}, "load_steadiness": {"before": {"median_share": ' + share + '}}}}'))
    monkeypatch.setattr(testing, "LAB", [sys.executable, str(script)])
    monkeypatch.delenv(testing.SMOKE_RESULTS_VARIABLE, raising=False)


def test_a_run_whose_load_generators_core_was_slowed_is_measured_again(tmp_path, monkeypatch, capsys):
    """The load generator's core carries lab 06's PostgreSQL: its slowing moves the connections'
    bound as the server's moves the core's, and the server's probes cannot see it."""
    load_core_stand_in(tmp_path, monkeypatch, "0.98 if calls else 0.6")
    data = testing.run_lab("06", results_dir=tmp_path / "r", again_if_slowed=1)
    assert data["call"] == 1 and "the load generator's core ran slower" in data["measured_again"]
    assert "Measuring the whole run again" in capsys.readouterr().out


def test_when_every_run_was_slowed_the_checks_judge_the_one_slowed_least(tmp_path, monkeypatch, capsys):
    """Census 2026-12-07-lab06-load, rep 2: the first run's only flaw was the load generator's core
    at 76% before it, and all its rows were on their bounds; the runs measured again for it were
    slowed more (54%, 70%), and the last failed. The checks now judge the first: chosen by the
    probes, not by the checks."""
    load_core_stand_in(tmp_path, monkeypatch, "[0.76, 0.54, 0.70][calls]")
    data = testing.run_lab("06", results_dir=tmp_path / "r", again_if_slowed=2)
    assert data["call"] == 0 and data["judged_run"] == 1 and data["runs"] == 3
    assert "76% before the run" in data["measured_again"]
    out = capsys.readouterr().out
    assert "Its checks judge run 1 of 3, the one the host slowed least by its probes" in out
    assert "(the slowest core at 76%, 54%, 70% of its fastest in each)" in out


def test_the_steadiness_share_is_the_slowest_probe_or_the_drop_between_two():
    from pul import machine

    assert machine.steadiness_share({}) == 1.0
    facts = {"steadiness": {"before": {"median_share": 0.93, "fastest_count": 2_000_000},
                            "after": {"median_share": 0.9, "fastest_count": 1_500_000}},
             "load_steadiness": {"before": {"median_share": 0.81}, "after": None}}
    assert machine.steadiness_share(facts) == 0.75
    facts["load_steadiness"]["before"]["median_share"] = 0.7
    assert machine.steadiness_share(facts) == 0.7


def test_a_run_with_unsteady_steps_is_judged_after_every_run_without():
    def run(share, unsteady):
        return {"machine": {"steadiness": {"before": {"median_share": share}}},
                "variants": [{"name": "v", "extra": {"unsteady": unsteady}}]}

    measured = [run(0.95, True), run(0.6, False), run(0.7, False)]
    assert testing.judged_run(measured, unsteady_is_slowed=True) == 3
    assert testing.judged_run(measured) == 1
