"""How steady the server's core is: a fixed loop timed in short samples before and after a run,
recorded with the machine and named in the machine line."""

from __future__ import annotations

import os

import pytest

from pul import machine, results
from pul import run as run_module
from pul.lab import Step


def test_a_fixed_loop_reports_its_samples_as_shares_of_the_fastest():
    cpu = sorted(os.sched_getaffinity(0))[:1]
    probe = machine.steadiness(cpu, seconds=0.5, sample=0.05)
    assert probe is not None and probe["sample_s"] == 0.05
    # At most eleven samples in half a second, each at least 0.05 s and a thousand iterations. Fewer
    # on a loaded machine: a sample the scheduler interrupts lasts until the loop looks at the clock
    # again (the scripts part once saw fewer than five, beside the provisioning part and a census).
    assert 2 <= probe["samples"] <= 11, probe
    assert 0 < probe["least_share"] <= probe["median_share"] <= 1, probe
    assert probe["cpus"] == str(cpu[0]) and probe["fastest_count"] >= 1000, probe


def test_the_samples_become_shares_of_the_fastest(monkeypatch):
    monkeypatch.setattr(machine.subprocess, "run",
                        lambda *_a, **_k: machine.subprocess.CompletedProcess([], 0, "2000\n1000\n1500\n4000\n", ""))
    probe = machine.steadiness([0], seconds=0.2, sample=0.05)
    assert probe == {"samples": 4, "sample_s": 0.05, "cpus": "0", "fastest_count": 4000,
                     "median_share": 0.438, "least_share": 0.25}


def test_a_loop_that_cannot_run_records_nothing(monkeypatch):
    monkeypatch.setattr(machine.sys, "executable", "/nonexistent/python3")
    assert machine.steadiness([0], seconds=0.2) is None


def _line(steadiness, pinned: bool = True) -> str:
    data = {"started_at": "2026-11-27T20:00:00Z", "mode": "default", "target": None,
            "machine": {"cpu_model": "AMD EPYC", "cores": 2, "memory_gib": 23.5, "os": "Debian", "jdk": "17",
                        "play": "2.9.11", "ab": "2.3", "pinning": {"server_cpus": "0" if pinned else None, "load_cpus": "1" if pinned else None},
                        "load_average_at_start": 0.5, "steadiness": steadiness}}
    return results.machine_line(data)


def test_the_machine_line_names_the_worst_sample_and_median_of_either_probe():
    probe = {"samples": 20, "sample_s": 0.1, "median_share": 0.97, "least_share": 0.81}
    line = _line({"before": probe, "after": {**probe, "median_share": 0.9, "least_share": 0.52}})
    assert "a fixed loop on the server's core, timed in 0.1-s samples before and after the run, ran at 52% of " \
           "its fastest at worst, 90% at the slower median" in line
    # Only the probes that ran; a run that was not pinned timed the loop wherever it ran.
    assert "samples before the run, ran at 81%" in _line({"before": probe, "after": None})
    assert "a fixed loop on any core" in _line({"before": probe}, pinned=False)
    # A remote server's run, or one made before the probe existed, has no clause.
    assert "fixed loop" not in _line(None) and "fixed loop" not in _line({"before": None, "after": None})


def test_the_plan_counts_the_probe_before_and_after_and_not_for_a_remote_server():
    steps = [Step(name="a", endpoint="status", concurrency=1, requests=10, warmup_requests=0)]
    local = [key for key, _ in run_module.plan(steps, run_module.RunOptions())]
    assert local[0] == "steadiness" and local[-1] == "steadiness again"
    remote = [key for key, _ in run_module.plan(steps, run_module.RunOptions(target="http://10.0.0.2:9000"))]
    assert "steadiness" not in remote and "steadiness again" not in remote


def test_a_run_without_the_probe_plans_none_and_the_exercise_checks_leave_it_out(monkeypatch):
    steps = [Step(name="a", endpoint="status", concurrency=1, requests=10, warmup_requests=0)]
    keys = [key for key, _ in run_module.plan(steps, run_module.RunOptions(steadiness=False))]
    assert not any(key.startswith("steadiness") for key in keys)
    seen = {}

    class Measured(Exception):
        """Stands in for the measurement, once the options are seen."""

    def fake_run(lab, params, options, argv):
        seen["options"] = options
        raise Measured

    # Everything but the measurement of one of lab 01's exercises, as `scripts/lab check` runs it.
    from pul import exercises, lab as lab_module
    driver = lab_module.resolve("01")
    exercise = exercises.load(driver)[0]
    monkeypatch.setattr(exercises, "run", fake_run)
    with pytest.raises(Measured):
        exercises.run_exercise(exercise, driver, quiet=True)
    assert seen["options"].steadiness is False


def test_a_slowed_core_is_never_passed_over_silently():
    from pul import machine

    steady = {"before": {"median_share": 0.97, "least_share": 0.6}, "after": {"median_share": 0.91}}
    assert machine.slowed_warning(steady) is None and machine.slowed_warning(None) is None
    slowed = machine.slowed_warning({"before": {"median_share": 0.97}, "after": {"median_share": 0.61}})
    assert "61% after the run" in slowed and "run again" in slowed
    assert "97%" not in slowed and "one probe against the other" not in slowed
    # Each probe steady against its own fastest sample, the core 35% slower in the second.
    whole = {"before": {"median_share": 0.913, "fastest_count": 2130000},
             "after": {"median_share": 0.982, "fastest_count": 1376000}}
    slowed = machine.slowed_warning(whole)
    assert "at 65% of its speed in one probe against the other" in slowed and "median" not in slowed
    whole["after"]["fastest_count"] = 1900000
    assert machine.slowed_warning(whole) is None


def test_the_load_generators_core_is_probed_too_when_it_has_one_of_its_own(monkeypatch):
    """PostgreSQL and the load generator run on the load cores (labs 03 and 06): a host that
    slows those moves the bounds they set, and only a probe of them can say so."""
    timed = []
    monkeypatch.setattr(machine, "steadiness",
                        lambda cpus, *a, **k: timed.append(cpus) or {"cpus": ",".join(map(str, cpus or []))})

    class Quiet:
        def step(self, _text): pass
        def note(self, _text): pass

    class Eta:
        def begin(self, _phase): pass

    def probed(server, load):
        bench = run_module.Bench.__new__(run_module.Bench)
        bench.server_cpus, bench.load_cpus = server, load
        return run_module.probed_cores(bench)

    assert probed({0}, {1}) == {"steadiness": {0}, "load_steadiness": {1}}
    # Not pinned, or the same cores: the server's probe alone.
    assert probed(None, None) == {"steadiness": None}
    assert probed({0, 1}, {1}) == {"steadiness": {0, 1}}
    found = run_module._steadiness(probed({0}, {1}), Quiet(), Eta(), "steadiness")
    assert timed == [[0], [1]] and found == {"steadiness": {"cpus": "0"}, "load_steadiness": {"cpus": "1"}}
    # The plan gives each probe its second.
    steps = [Step(name="a", endpoint="status", concurrency=1, requests=10, warmup_requests=0)]
    phases = dict(run_module.plan(steps, run_module.RunOptions(), probes=2))
    assert phases["steadiness"] == phases["steadiness again"] == 2 * machine.STEADINESS_SECONDS


def test_a_slowed_load_generators_core_is_named_and_on_the_machine_line():
    steady = {"before": {"median_share": 0.97, "least_share": 0.9, "sample_s": 0.1},
              "after": {"median_share": 0.95, "least_share": 0.88, "sample_s": 0.1}}
    slowed = {"before": {**steady["before"], "median_share": 0.62, "least_share": 0.5}, "after": steady["after"]}
    facts = {"steadiness": steady, "load_steadiness": slowed}
    warnings = machine.slowed_warnings(facts)
    assert len(warnings) == 1 and warnings[0].startswith("the load generator's core ran slower than its fastest")
    assert "62% before the run" in warnings[0]
    assert machine.slowed_warnings({"steadiness": slowed, "load_steadiness": slowed})[0].startswith(
        "the server's core")
    assert machine.slowed_warnings({"steadiness": steady}) == []
    data = {"started_at": "2026-11-27T20:00:00Z", "mode": "default", "target": None,
            "machine": {"cpu_model": "AMD EPYC", "cores": 2, "memory_gib": 23.5, "os": "Debian", "jdk": "17",
                        "play": "2.9.11", "ab": "2.3", "pinning": {"server_cpus": "0", "load_cpus": "1"},
                        "load_average_at_start": 0.5, **facts}}
    assert ("ran at 88% of its fastest at worst, 95% at the slower median (on the load generator's: 50% at worst, "
            "62% at the slower median)") in results.machine_line(data)
