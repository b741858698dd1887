"""Every committed run was made on a steady core: the steadiness probes before and after it ran at
80% or more of their fastest sample at the median, and the two probes' fastest samples within 80% of
each other (pul.machine.slowed_warnings, the floor the driver warns at), on the server's core and,
where it was probed, the load generator's. A run the host slowed has CPU-bound numbers lower than
the model's, and the book would explain a host's mood as Play's.
Read from git's HEAD, so a student's own run cannot move this check."""

from __future__ import annotations

import subprocess

import pytest

from pul import machine
from pul.testing import REPO, committed_results


def committed_runs() -> list[tuple[str, tuple[str, ...]]]:
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "labs/*/results/latest.json",
                             "labs/*/results/*/latest.json"], capture_output=True, text=True, check=True).stdout
    runs = []
    for path in listed.split():
        parts = path.split("/")  # labs/LAB/results[/FOLDER]/latest.json
        runs.append((parts[1], tuple(parts[3:-1])))
    return runs


RUNS = committed_runs()


def test_there_are_committed_runs():
    assert RUNS


@pytest.mark.parametrize("lab, folder", RUNS, ids=["/".join((lab, *folder)) for lab, folder in RUNS])
def test_every_committed_run_was_made_on_a_steady_core(lab, folder):
    data = committed_results(lab, *folder)
    steadiness = data["machine"].get("steadiness")
    if steadiness is None:
        # Runs made before the probe existed: they carry no evidence either way; the older the
        # fewer (none is allowed to be made without it now).
        assert data["started_at"] < "2026-11-28", f"{data['command']}: a run since the probe exists has none"
        return
    # The load generator's core too, for runs that probed it.
    warnings = machine.slowed_warnings(data["machine"])
    assert not warnings, f"{data['command']} ({data['started_at']}): {'; '.join(warnings)}"
