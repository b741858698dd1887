"""Interleaved steps (Step.interleave): run r of every step on a server before run r + 1 of any."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pul import run as run_module
from pul.errors import LabError
from pul.lab import Step
from pul.progress import Eta
from pul.testing import unit_bench


def _step(name: str, **kwargs) -> Step:
    return Step(name=name, endpoint="setup", concurrency=50, requests=1_000_000, seconds=1, repeat=3,
                interleave=True, **kwargs)


class Recorder:
    """Stands in for the load tool and the lab: records the order of calibrations, runs and checks."""

    def __init__(self, monkeypatch):
        self.events: list[tuple[str, str, int | None]] = []
        rate = iter(range(1000, 100_000, 10))

        def fake_calibration(at, *_args, **_kwargs):
            self.events.append(("calibrate", at.step.name, None))
            return None

        def fake_run_once(at, *_args, **_kwargs):
            self.events.append(("run", at.step.name, None))
            return (SimpleNamespace(requests_per_sec=next(rate), complete=500, command="ab", duration_s=1.0,
                                    mean_ms=1.0, pct=lambda _p: 1.0, failed=0, non_2xx=0),
                    {"cpu_seconds": 0.5, "utilization": 0.5, "load_cpu_seconds": 0.2, "load_utilization": 0.2,
                     "server_cores_idle": 0.5, "load_cores_busy": 0.3})

        def fake_record(_bench, step, result, probe, cpu, *_args, **_kwargs):
            return {"name": step.name, "requests_per_sec": result.requests_per_sec, "extra": {},
                    "steal": cpu["steal_share"]}

        monkeypatch.setattr(run_module, "calibration", fake_calibration)
        monkeypatch.setattr(run_module, "_run_once", fake_run_once)
        monkeypatch.setattr(run_module, "variant_record", fake_record)
        monkeypatch.setattr(run_module, "_compiler_cpu", lambda _server: None)
        monkeypatch.setattr(run_module, "_print_step", lambda *_a: None)
        def fake_verify(step, _server, record, _services):
            self.events.append(("verify", step.name, record["complete"]))
            record["extra"]["checked_run"] = sum(1 for kind, name, _ in self.events
                                                 if kind == "verify" and name == step.name)

        self.lab = SimpleNamespace(verify_step=fake_verify)

    def measure(self, steps: list[Step]) -> list[dict]:
        return run_module._measure_interleaved(unit_bench(lab=self.lab, eta=Eta([])), steps, SimpleNamespace(),
                                               None, {}, {step.name: None for step in steps})


def test_runs_go_round_by_round_each_step_calibrated_before_its_middle_run(monkeypatch):
    recorder = Recorder(monkeypatch)
    records = recorder.measure([_step("none"), _step("plain-x10"), _step("none-again")])
    runs = [name for kind, name, _ in recorder.events if kind == "run"]
    assert runs == ["none", "plain-x10", "none-again"] * 3
    calibrations = [i for i, (kind, _, _) in enumerate(recorder.events) if kind == "calibrate"]
    run_at = [i for i, (kind, _, _) in enumerate(recorder.events) if kind == "run"]
    # Each calibration comes right before the step's second run of three (its middle one), and only then.
    assert [i + 1 for i in calibrations] == run_at[3:6]
    # The lab checks every run on its own, right after it.
    for i, (kind, name, _) in enumerate(recorder.events):
        if kind == "run":
            assert recorder.events[i + 1] == ("verify", name, 500)
    assert [r["name"] for r in records] == ["none", "plain-x10", "none-again"]
    # What the lab's check adds to a run's record reaches the step's record: its last run's.
    assert [r["extra"]["checked_run"] for r in records] == [3, 3, 3]


def test_each_step_reports_the_median_of_its_own_runs(monkeypatch):
    recorder = Recorder(monkeypatch)
    records = recorder.measure([_step("a"), _step("b")])
    # Rates are handed out 1000, 1010, 1020, ... in run order: a gets 1000, 1020, 1040.
    assert [r["requests_per_sec"] for r in records] == [1020, 1030]
    assert all(r["interleaved"] for r in records)


def test_steps_with_fewer_repeats_drop_out_of_the_later_rounds(monkeypatch):
    recorder = Recorder(monkeypatch)
    recorder.measure([_step("a"), Step(name="b", endpoint="setup", concurrency=50, requests=10, repeat=1,
                                       interleave=True)])
    assert [name for kind, name, _ in recorder.events if kind == "run"] == ["a", "b", "a", "a"]


def test_a_server_mixes_interleaved_and_sequential_steps_only_by_mistake():
    with pytest.raises(LabError, match="all interleave or none"):
        run_module._interleaved([_step("a"), Step(name="b", endpoint="status", concurrency=1, requests=10)])
    with pytest.raises(LabError, match="probe"):
        run_module._interleaved([_step("a"), _step("b", probe="/status")])
    assert not run_module._interleaved([_step("alone")])


def test_the_plan_counts_one_phase_per_round_and_step():
    steps = [_step("a", warmup_requests=0), _step("b", warmup_requests=0)]
    measured = [(key, seconds) for key, seconds in run_module.plan(steps, run_module.RunOptions())
                if key.startswith("measure")]
    assert [key for key, _ in measured] == ["measure a #1", "measure b #1", "measure a #2", "measure b #2",
                                            "measure a #3", "measure b #3"]
    # The middle round's phases include each step's calibration round.
    assert measured[2][1] > measured[0][1] == 1
