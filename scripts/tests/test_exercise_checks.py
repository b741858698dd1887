"""`scripts/lab check` for real, for every lab with exercises: real builds and short real runs.

In a scratch copy of each lab (its target/ comes along, so sbt only rebuilds what a
solution changes): the starting state must FAIL every exercise with a hint and the
measured numbers; with every solution patch applied, every exercise must PASS.
Run by `scripts/test workshop`; marked slow so the `scripts` part skips it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pul import exercises, lab, server

REPO = Path(__file__).resolve().parents[2]
LAB = [sys.executable, str(REPO / "scripts" / "lab")]
LABS_WITH_EXERCISES = [number for number, lab_dir, driver in lab.all_labs()
                       if driver is not None and (lab_dir / exercises.EXERCISES_FILE).exists()]

pytestmark = pytest.mark.slow


def check(number: str, lab_dir: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([*LAB, "check", number, "--lab-dir", str(lab_dir), "--quiet"], cwd=REPO,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=900)
    print(done.stdout)
    return done


@pytest.mark.parametrize("number", LABS_WITH_EXERCISES)
def test_start_fails_with_hints_and_the_solutions_pass(number):
    driver = lab.resolve(number)
    declared = exercises.load(driver)
    staged = server.staged_script(driver.dir)
    with exercises.scratch_copy(driver) as copy_dir:
        start = check(number, copy_dir)
        assert start.returncode == exercises.ExerciseFailed.exit_code, start.stdout[-3000:]
        verdict_lines = [line for line in start.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
        assert len(verdict_lines) == len(declared)
        for exercise in declared:
            assert any(line.startswith(f"FAIL  {number}/{exercise.id}") for line in verdict_lines), \
                f"{exercise.id} passes on the starting state: it teaches nothing\n{start.stdout[-3000:]}"
        # Each failure shows the measured number and a hint.
        assert start.stdout.count("Hint:") >= len(declared) and " = " in start.stdout

        for exercise in declared:
            exercises.apply_patch(exercise.solution, copy_dir)
        solved = check(number, copy_dir)
        assert solved.returncode == 0, solved.stdout[-3000:]
        assert f"{len(declared)} of {len(declared)} exercise(s) passed" in solved.stdout
    # The copy's build left the lab's own build alone (`scripts/lab run` would rebuild it).
    assert staged is None or staged.exists(), f"checking a copy deleted {staged}"
