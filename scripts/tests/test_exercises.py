"""Fast tests of `scripts/lab check` / `reset`: declarations, judging, solutions apply, reset is safe.

The real builds and runs (start state fails, solution passes) are in test_exercise_checks.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pul import exercises, lab
from pul.errors import LabError

REPO = Path(__file__).resolve().parents[2]
LAB = [sys.executable, str(REPO / "scripts" / "lab")]
LABS_WITH_EXERCISES = [number for number, lab_dir, driver in lab.all_labs()
                       if driver is not None and (lab_dir / exercises.EXERCISES_FILE).exists()]


def run_lab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*LAB, *args], capture_output=True, text=True, timeout=120, cwd=REPO,
                          stdin=subprocess.DEVNULL)


def test_lab_01_has_checked_exercises():
    assert "01" in LABS_WITH_EXERCISES


@pytest.mark.parametrize("number", LABS_WITH_EXERCISES)
def test_every_exercise_is_well_formed_and_has_a_solution_that_applies(number, tmp_path):
    driver = lab.resolve(number)
    declared = exercises.load(driver)
    assert declared, f"{driver.name}/exercises.toml declares no exercise"
    copy_dir = tmp_path / "labs" / driver.dir.name
    shutil.copytree(driver.dir, copy_dir, ignore=shutil.ignore_patterns("target", "results"))
    for exercise in declared:
        assert exercise.expect and exercise.task and exercise.title
        assert all(e.hint for e in exercise.expect), f"{exercise.id}: every expectation needs a hint"
        assert exercise.solution.exists(), f"missing {exercise.solution}"
        # Every solution applies to the starting state, and all of them together too.
        exercises.apply_patch(exercise.solution, copy_dir)


def test_a_scratch_copy_leaves_the_records_that_would_delete_the_originals_files(tmp_path, monkeypatch):
    # sbt-native-packager's `stage` deletes what its record lists and the new mappings do not: a
    # copy of the record names the original's files, so the copy's build would empty the lab's stage.
    lab_dir = tmp_path / "labs" / "01-demo"
    record = lab_dir / "target" / "streams" / "universal" / "stage" / "_global" / "streams"
    record.mkdir(parents=True)
    (record / "packager-mappings-universal").write_text(f'[[{{"x":["{lab_dir}/target/universal/stage/bin/x"]}}]]')
    (record / "op-cache").write_text(f"{lab_dir}/target/scala-2.13/routes/main/router/Routes.scala")
    (record / "out").write_text("kept")
    (lab_dir / "target" / "pul-staged.stamp").write_text("1\n")
    (lab_dir / "results").mkdir()
    (lab_dir / "app").mkdir()
    (lab_dir / "app" / "A.java").write_text("class A {}")
    monkeypatch.setattr(exercises, "REPO", tmp_path)
    demo = type("Demo", (), {"number": "01", "dir": lab_dir})()
    with exercises.scratch_copy(demo) as copy_dir:
        copied = sorted(str(p.relative_to(copy_dir)) for p in copy_dir.rglob("*") if p.is_file())
    assert copied == ["app/A.java", "target/pul-staged.stamp", "target/streams/universal/stage/_global/streams/out"]


def test_a_scratch_copy_sits_beside_what_a_labs_build_reads(tmp_path, monkeypatch):
    # A lab's build reads ../instruments and ../sbt (labs/sbt/build/Instruments.scala): the copy
    # has links to the repository's beside it, and to its scripts, so that a build there finds them.
    repo = tmp_path / "repo"
    for name in exercises.LINKED:
        (repo / name).mkdir(parents=True)
        (repo / name / "marker").write_text(name)
    lab_dir = repo / "labs" / "01-demo"
    (lab_dir / "app").mkdir(parents=True)
    monkeypatch.setattr(exercises, "REPO", repo)
    demo = type("Demo", (), {"number": "01", "dir": lab_dir})()
    with exercises.scratch_copy(demo) as copy_dir:
        assert copy_dir.name == "01-demo" and copy_dir.parent.name == "labs"
        for name in exercises.LINKED:
            assert (copy_dir.parents[1] / name).is_symlink(), name
        assert (copy_dir / ".." / "instruments" / "marker").read_text() == "labs/instruments"
        assert (copy_dir / ".." / "sbt" / "marker").read_text() == "labs/sbt"


def test_prepare_solves_a_copy_for_a_later_build_and_check(tmp_path, monkeypatch, capsys):
    # `check --solution --prepare DIR` (scripts/test's labs part, for the workshop part): the copy
    # at DIR/labs/NN-name with every solution applied and an earlier copy replaced; built later, with
    # the other labs' copies, by `scripts/lab build --in DIR` (the build is not prepare's).
    lab_dir = tmp_path / "repo" / "labs" / "01-demo"
    (lab_dir / "app").mkdir(parents=True)
    (lab_dir / "app" / "A.java").write_text("class A {}\n")
    (lab_dir / "results").mkdir()
    patch = tmp_path / "fix.patch"
    patch.write_text("--- a/app/A.java\n+++ b/app/A.java\n@@ -1 +1 @@\n-class A {}\n+class A { int solved; }\n")
    monkeypatch.setattr(exercises, "REPO", tmp_path / "repo")
    demo = type("Demo", (), {"number": "01", "dir": lab_dir})()
    solved = type("Solved", (), {"id": "fix", "solution": patch})()
    root = tmp_path / "prepared"
    (root / "labs" / "01-demo" / "stale").mkdir(parents=True)
    assert exercises.prepare(demo, [solved], root, quiet=True) == 0
    copy_dir = root / "labs" / "01-demo"
    assert (copy_dir / "app" / "A.java").read_text() == "class A { int solved; }\n"
    assert not (copy_dir / "stale").exists() and not (copy_dir / "results").exists()
    assert (root / "scripts").resolve() == (tmp_path / "repo" / "scripts").resolve()
    assert f"build it with scripts/lab build --in {root} 01" in capsys.readouterr().out


@pytest.mark.parametrize("args", [("--prepare", "x"), ("--prepare", "x", "--solution", "--lab-dir", "y"),
                                  ("--prepare", "x", "--solution", "--list")])
def test_prepare_goes_with_solution_alone(args):
    done = run_lab("check", "01", *args)
    assert done.returncode == 2 and "--prepare DIR goes with --solution" in done.stderr, done.stderr


def test_a_check_caps_the_warm_up_rounds_and_their_length():
    driver = lab.resolve("05")
    params = dict(driver.defaults)
    steps = driver.steps(params)
    capped = exercises.at_dir(driver, driver.dir, (), warmup_rounds=3, warmup_seconds=1).steps(params)
    assert [s.name for s in capped] == [s.name for s in steps]
    for step, before in zip(capped, steps):
        assert step.warmup_max_rounds == min(before.warmup_max_rounds, 3)
        assert step.warmup_min_rounds <= step.warmup_max_rounds
        assert step.warmup_seconds == 1
    untouched = exercises.at_dir(driver, driver.dir).steps(params)
    assert [s.warmup_seconds for s in untouched] == [s.warmup_seconds for s in steps]


def test_a_starting_state_warmed_up_for_fewer_rounds_is_measured_once(monkeypatch):
    # The tests' --warmup-rounds: its cold calibration would make every CPU-bound step measure again.
    driver = lab.resolve("01")
    params = dict(driver.defaults)
    once = exercises.at_dir(driver, driver.dir, (), warmup_rounds=1, measure_once=True).steps(params)
    assert all(s.remeasure_drift == float("inf") for s in once)
    assert all(s.remeasure_drift < 1 for s in exercises.at_dir(driver, driver.dir).steps(params))
    exercise = exercises.load(driver)[0]
    steps = steps_a_check_runs(monkeypatch, exercise, driver, warmup_rounds=1)
    assert {s.remeasure_drift for s in steps} == {float("inf")}
    assert float("inf") not in {s.remeasure_drift for s in steps_a_check_runs(monkeypatch, exercise, driver)}


def steps_a_check_runs(monkeypatch, exercise, driver, **options) -> list:
    """The steps `scripts/lab check` would measure for `exercise` (with run_exercise's `options`),
    the measurement itself replaced."""
    seen = []

    def fake_run(lab_at, _params, _options, _argv):
        seen.extend(lab_at.steps(dict(lab_at.defaults)))
        return {"variants": []}

    monkeypatch.setattr(exercises, "run", fake_run)
    monkeypatch.setattr(exercises, "judge", lambda *_args: [])
    exercises.run_exercise(exercise, driver, quiet=True, **options)
    return seen


def test_a_check_runs_no_calibration_rounds(monkeypatch):
    """An exercise judges measured numbers against Little's-law limits; a calibrated bound would
    only cost its rounds."""
    driver = lab.resolve("03")
    params = dict(driver.defaults)
    assert all(s.calibrate for s in exercises.at_dir(driver, driver.dir).steps(params))
    steps = steps_a_check_runs(monkeypatch, exercises.load(driver)[0], driver)
    assert steps and {s.calibrate for s in steps} == {False}


def test_a_check_caps_the_rounds_of_a_step_first_on_its_server_too():
    # Lab 06's jdbc steps warm up in one round after other steps, with the defaults' rounds when
    # first on a cold server (an exercise measuring jdbc-connections=4 alone): the cap holds there too.
    driver = lab.resolve("06")
    params = dict(driver.defaults)
    capped = {s.name: s for s in exercises.at_dir(driver, driver.dir, (), warmup_rounds=2).steps(params)}
    jdbc = capped["jdbc-connections=4"]
    assert (jdbc.warmup_max_rounds, jdbc.warmup_max_rounds_first) == (1, 2)


@pytest.mark.parametrize("written", ["0", "-1", "1.5", "true", '"2"'])
def test_warm_up_limits_must_be_whole_numbers(tmp_path, written):
    copy_dir = tmp_path / "labs" / "05-concurrency-highway"
    shutil.copytree(lab.resolve("05").dir, copy_dir, ignore=shutil.ignore_patterns("target", "results"))
    toml = copy_dir / exercises.EXERCISES_FILE
    assert "warmup_seconds = 1\n" in toml.read_text()
    toml.write_text(toml.read_text().replace("warmup_seconds = 1\n", f"warmup_seconds = {written}\n"))
    with pytest.raises(exercises.ExerciseSpecError, match="warmup_seconds must be a whole number"):
        exercises.load(exercises.at_dir(lab.resolve("05"), copy_dir))


def test_list_and_unknown_names():
    out = run_lab("check", "01", "--list")
    assert out.returncode == 0 and "right-size-pool" in out.stdout
    out = run_lab("check", "01", "no-such-exercise")
    assert out.returncode == 2 and "right-size-pool" in out.stderr
    out = run_lab("check", "99")
    assert out.returncode == 2 and "unknown lab" in out.stderr


def _results(rate: float, threads: int, failed: int = 0) -> dict:
    return {
        "params": {"concurrency": 40, "requests": 600, "work_ms": 200},
        "pools": {"pools": {"offload": {"threads": threads}, "default": {"threads": 8}}},
        "variants": [{"name": "java-offloaded", "concurrency": 40, "requests_per_sec": rate, "failed": failed,
                      "mean_ms": 40 / rate * 1000 if rate else 0.0,
                      "non_2xx": 0, "service_ms": 200.0, "pool_threads": threads,
                      "predicted_requests_per_sec": min(40, threads) / 0.2, "server_cpu_ms_per_request": 1.1,
                      "probe": {"p50_ms": 2.0}, "extra": {}}],
    }


def _pool_exercise() -> exercises.Exercise:
    return next(e for e in exercises.load(lab.resolve("01")) if e.id == "right-size-pool")


def test_judging_passes_and_fails_on_the_numbers():
    exercise = _pool_exercise()
    assert all(v.passed for v in exercises.judge(exercise, _results(195.0, 40)))
    # Too few threads: Little's law (from /pools) cannot reach the limit, nor does the measurement.
    too_slow = exercises.judge(exercise, _results(99.0, 20))
    assert [v.passed for v in too_slow] == [False, False, True]
    # The message gives the measured number, the bound, and a hint filled in with real numbers.
    assert "requests_per_sec = 99.0" in too_slow[1].message and ">= 140" in too_slow[1].message
    assert "Hint:" in too_slow[0].message and "20 threads" in too_slow[0].message
    too_big = exercises.judge(exercise, _results(198.0, 100))
    assert [v.passed for v in too_big] == [True, True, False] and "100 threads" in too_big[2].message


def test_failed_requests_fail_the_check():
    verdicts = exercises.judge(_pool_exercise(), _results(195.0, 40, failed=3))
    assert not verdicts[0].passed and "3 failed" in verdicts[0].message


@pytest.mark.parametrize("text", ["__import__('os').system('x') > 1", "requests_per_sec", "a > b > c",
                                  "'x' >= 1", "open('f') < 1", "(lambda: 1)() > 0"])
def test_expressions_are_arithmetic_comparisons_only(text):
    with pytest.raises(exercises.ExerciseSpecError):
        exercises._parse_comparison(text, "test")


def test_unknown_names_in_an_expression_are_reported_with_the_known_ones():
    left, _, _ = exercises._parse_comparison("throughput >= 1", "test")
    with pytest.raises(exercises.ExerciseSpecError, match="requests_per_sec"):
        exercises.evaluate(left, exercises.names_for(_results(1.0, 1), "java-offloaded"))


def test_other_variants_and_functions_can_be_named():
    results = _results(100.0, 40)
    results["variants"].append({**results["variants"][0], "name": "java-blocking", "requests_per_sec": 40.0})
    left, op, right = exercises._parse_comparison(
        "requests_per_sec >= 2 * max(java_blocking.requests_per_sec, 1)", "test")
    names = exercises.names_for(results, "java-offloaded")
    assert exercises.evaluate(left, names) == 100.0 and exercises.evaluate(right, names) == 80.0


# -- reset ----------------------------------------------------------------------

def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def clone(tmp_path) -> Path:
    repo = tmp_path / "repo"
    lab_dir = repo / "labs" / "01-demo"
    (lab_dir / "conf").mkdir(parents=True)
    (lab_dir / "results").mkdir()
    (lab_dir / "conf" / "application.conf").write_text("pool-size = 100\n")
    (lab_dir / "results" / "latest.json").write_text("{}\n")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    return lab_dir


def test_reset_refuses_to_drop_work_without_force(clone, tmp_path, capsys):
    (clone / "conf" / "application.conf").write_text("pool-size = 40\n")
    with pytest.raises(LabError, match="--force") as error:
        exercises.reset(clone, "HEAD", force=False, backup_root=tmp_path / "backups")
    assert "conf/application.conf" in str(error.value)
    assert (clone / "conf" / "application.conf").read_text() == "pool-size = 40\n"
    assert not (tmp_path / "backups").exists()


def test_reset_with_force_keeps_a_backup_that_brings_the_work_back(clone, tmp_path):
    conf = clone / "conf" / "application.conf"
    conf.write_text("pool-size = 40\n")
    (clone / "conf" / "extra.conf").write_text("new = 1\n")
    (clone / "results" / "latest.json").write_text('{"mine": 1}\n')  # measurements are not exercise work
    assert exercises.reset(clone, "HEAD", force=True, backup_root=tmp_path / "backups") == 0
    assert conf.read_text() == "pool-size = 100\n"
    assert not (clone / "conf" / "extra.conf").exists()
    assert (clone / "results" / "latest.json").read_text() == '{"mine": 1}\n'
    backup = next((tmp_path / "backups").iterdir())
    assert (backup / "files" / "labs" / "01-demo" / "conf" / "application.conf").read_text() == "pool-size = 40\n"
    repo = clone.parent.parent
    _git(repo, "apply", str(backup / "changes.patch"))
    assert conf.read_text() == "pool-size = 40\n" and (clone / "conf" / "extra.conf").exists()


def test_reset_of_an_untouched_lab_does_nothing(clone, tmp_path, capsys):
    assert exercises.reset(clone, "HEAD", force=False, backup_root=tmp_path / "b") == 0
    assert "already at its starting state" in capsys.readouterr().out
