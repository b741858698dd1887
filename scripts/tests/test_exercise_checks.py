"""`scripts/lab check` for real, for every lab with exercises: real builds and short real runs.

In a scratch copy of each lab (its target/ comes along, so sbt only rebuilds what a
solution changes): the starting state must FAIL every exercise with a hint and the
measured numbers; with every solution patch applied, every exercise must PASS.
Run by `scripts/test workshop`; marked slow so the `scripts` part skips it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pul import exercises, lab

REPO = Path(__file__).resolve().parents[2]
LAB = [sys.executable, str(REPO / "scripts" / "lab")]
LABS_WITH_EXERCISES = [number for number, lab_dir, driver in lab.all_labs()
                       if driver is not None and (lab_dir / exercises.EXERCISES_FILE).exists()]

pytestmark = pytest.mark.slow

# Solved copies built at once before any check measures. sbt spends most of a build starting and
# loading the project on one thread, so two builds share the two cores well; a third would only
# queue for them.
PARALLEL_BUILDS = 2
# One lab's `sbt stage`, as `scripts/lab check` would run it (pul.server.build), in a process of
# its own: the build's child handling wants a main thread.
BUILD = ("import sys; from pathlib import Path; from pul.procs import Children; "
         "from pul.progress import Progress; from pul.server import build; "
         "build(Path(sys.argv[1]), Children(), Progress(quiet=True))")


def check(number: str, lab_dir: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([*LAB, "check", number, "--lab-dir", str(lab_dir), "--quiet"], cwd=REPO,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=900)
    print(done.stdout)
    return done


def build_all(lab_dirs: list[Path]) -> None:
    """`sbt stage` in every folder, PARALLEL_BUILDS at a time; fails with the log of a build that did."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "scripts"))
    waiting, running = list(lab_dirs), []
    while waiting or running:
        while waiting and len(running) < PARALLEL_BUILDS:
            lab_dir = waiting.pop(0)
            running.append((lab_dir, subprocess.Popen([sys.executable, "-c", BUILD, str(lab_dir)], env=env,
                                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                      stderr=subprocess.STDOUT, text=True)))
        lab_dir, build = running.pop(0)
        output, _ = build.communicate(timeout=900)
        assert build.returncode == 0, f"the solved copy of {lab_dir.name} did not build:\n{output[-3000:]}"


@pytest.fixture(scope="module")
def solved():
    """Every lab's scratch copy with all its solutions applied, built before any check measures."""
    with contextlib.ExitStack() as stack:
        copies = {}
        for number in LABS_WITH_EXERCISES:
            driver = lab.resolve(number)
            copies[number] = stack.enter_context(exercises.scratch_copy(driver))
            for exercise in exercises.load(driver):
                exercises.apply_patch(exercise.solution, copies[number])
        build_all(list(copies.values()))
        yield copies


@pytest.mark.parametrize("number", LABS_WITH_EXERCISES)
def test_start_fails_with_hints_and_the_solutions_pass(number, solved):
    driver = lab.resolve(number)
    declared = exercises.load(driver)
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

    # The solved copy was built before any check: this check only measures (no new build stamp).
    stamp = solved[number] / "target" / "pul-staged.stamp"
    built_at = stamp.stat().st_mtime
    done = check(number, solved[number])
    assert done.returncode == 0, done.stdout[-3000:]
    assert stamp.stat().st_mtime == built_at, "the check built the solved copy again"
    assert f"{len(declared)} of {len(declared)} exercise(s) passed" in done.stdout
