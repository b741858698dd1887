"""Checked exercises: `scripts/lab check LAB [EXERCISE...]` and `scripts/lab reset LAB`.

Every lab declares its exercises in one place, `labs/NN-name/exercises.toml`:
what to measure (variants, parameters), which parameters the reader's own code
decides (they are *not* passed to the server, so the app's configuration
counts), and what must hold afterwards, as small arithmetic comparisons over the
measured numbers ("requests_per_sec >= 0.9 * in_flight_limit"), each with a
hint shown when it does not hold.

A check builds the reader's current lab code and measures through the normal
driver (`pul.run.run`), into a scratch results directory, so the committed
results and the book are never touched.

Solutions live in `labs/NN-name/solutions/<exercise>.patch`: a diff against the
lab's starting state, applied with `git apply`. `check --solution` applies it to
a scratch copy of the lab (the reader's files are never touched) and checks
that. `reset` puts the lab's files back to the last commit, after saving the
reader's changes to a backup it names.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

from . import expressions, playline
from .expressions import ExpressionError
from .errors import LabError, UsageError
from .lab import REPO, Lab, resolve
from .procs import Children
from .progress import Progress
from .run import RunOptions, bench_lock, run
from .server import build
from .watchdog import clean_leftovers

EXERCISES_FILE = "exercises.toml"
SOLUTIONS_DIR = "solutions"
# Caches in target/streams that name the lab's own files by absolute path and delete the ones
# a later build no longer produces: sbt-native-packager's record of what `stage` copied
# (Stager.stageFiles) and sbt-web's of the routes compiler's output (syncIncremental's op-cache).
# In a copy, that later build's files are the copy's, so the original's would go.
PATH_RECORDS = ("packager-mappings-", "op-cache")
# Lab files that are not the reader's exercise work: measurements, the exercise
# machinery itself, and the lab's own smoke tests.
NOT_EXERCISE_WORK = ("results/", "solutions/", "tests/", "target/", EXERCISES_FILE)
BACKUP_DIR = REPO / ".lab-backups"


class ExerciseFailed(LabError):
    """At least one checked exercise did not pass (the output says why, with a hint)."""

    exit_code = 8


class ExerciseSpecError(LabError):
    """An exercises.toml that cannot be used (a bug in the lab, not in the reader's work)."""


# -- the declaration ------------------------------------------------------

@dataclass
class Expectation:
    variant: str
    that: str
    hint: str
    # The comparison, parsed once: left, operator symbol, right.
    left: ast.expr = field(repr=False, default=None)
    op: str = ""
    right: ast.expr = field(repr=False, default=None)


@dataclass
class Exercise:
    lab: Lab
    id: str
    title: str
    task: str
    measure: list[str]
    params: dict
    app_decides: list[str]
    expect: list[Expectation]
    warmup: int | None = None
    # At most this many warm-up rounds per variant (None: as many as the lab's steps allow). A
    # check whose effect is many times its margin needs no JIT-quiet server, and a lab's thorough
    # warm-up (lab 04: up to 60 rounds) would make it wait minutes for a verdict.
    warmup_rounds: int | None = None
    # Each warm-up round ends after this many seconds if its `warmup` requests take longer: a
    # starting state that serves a fraction of the solved rate would otherwise warm up for longer.
    warmup_seconds: int | None = None
    allow_errors: bool = False

    @property
    def solution(self) -> Path:
        return self.lab.dir / SOLUTIONS_DIR / f"{self.id}.patch"


def _parse_comparison(text: str, where: str) -> tuple[ast.expr, str, ast.expr]:
    """One comparison (>=, <=, > or <) of two sides in the expressions' language, read once."""
    try:
        tree = expressions.read(text)
        if not (isinstance(tree, ast.Compare) and len(tree.ops) == 1 and isinstance(tree.ops[0], expressions.ORDERINGS)):
            raise ExpressionError(f"{text!r} must be one comparison (>=, <=, > or <)")
        expressions.check(tree, text, who="checks", comparisons=expressions.ORDERINGS)
    except ExpressionError as error:
        raise ExerciseSpecError(f"{where}: {error}") from None
    return tree.left, expressions.SYMBOLS[type(tree.ops[0])], tree.comparators[0]


def evaluate(node: ast.expr, names: dict) -> float:
    """NODE's value over NAMES (names_for's: a variant's numbers, other variants by name)."""
    def name(identifier: str) -> float:
        if names.get(identifier) is None:
            known = ", ".join(sorted(k for k, v in names.items() if isinstance(v, (int, float))))
            raise ExerciseSpecError(f"no measured number called {identifier!r}; known: {known}")
        return names[identifier]

    def attribute(owner, attr: str, node: ast.Attribute) -> float:
        value = getattr(owner, attr, None)
        if value is None:
            raise ExerciseSpecError(f"no measured number {ast.unparse(node)!r}")
        return value

    try:
        return expressions.evaluate(node, name, attribute)
    except ExpressionError as error:
        raise ExerciseSpecError(str(error)) from None


def load(lab: Lab) -> list[Exercise]:
    """The lab's exercises, validated against its variants; [] when it declares none."""
    path = lab.dir / EXERCISES_FILE
    if not path.exists():
        return []
    try:
        import tomllib
    except ModuleNotFoundError:
        raise LabError(f"checking exercises needs Python 3.11 or newer (this is {sys.version.split()[0]}); "
                       "the other lab commands work with 3.9")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise ExerciseSpecError(f"{path}: {error}")
    variants = lab.variants()
    exercises = []
    for number, raw in enumerate(data.get("exercise", []), 1):
        where = f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}, exercise {number}"
        missing = [key for key in ("id", "title", "task", "measure", "expect") if key not in raw]
        if missing:
            raise ExerciseSpecError(f"{where}: missing {', '.join(missing)}")
        unknown_params = set(raw.get("params", {})) - set(lab.defaults)
        if unknown_params:
            raise ExerciseSpecError(f"{where}: unknown params {sorted(unknown_params)}; "
                                    f"the lab's are {sorted(lab.defaults)}")
        for name in raw["measure"]:
            if name not in variants:
                raise ExerciseSpecError(f"{where}: unknown variant {name!r}; the lab's are {', '.join(variants)}")
        expectations = []
        for item in raw["expect"]:
            if item.get("variant") not in raw["measure"]:
                raise ExerciseSpecError(f"{where}: expect.variant must be one of measure {raw['measure']}")
            left, op, right = _parse_comparison(item["that"], where)
            expectations.append(Expectation(item["variant"], item["that"], item.get("hint", "").strip(),
                                            left, op, right))
        exercises.append(Exercise(
            lab=lab, id=raw["id"], title=raw["title"], task=" ".join(raw["task"].split()),
            measure=list(raw["measure"]), params=dict(raw.get("params", {})),
            app_decides=list(raw.get("app_decides", [])), expect=expectations,
            warmup=raw.get("warmup"), warmup_rounds=_whole_number(raw, "warmup_rounds", where),
            warmup_seconds=_whole_number(raw, "warmup_seconds", where),
            allow_errors=bool(raw.get("allow_errors", False))))
    ids = [e.id for e in exercises]
    if len(set(ids)) != len(ids):
        raise ExerciseSpecError(f"{path}: exercise ids must be unique ({', '.join(ids)})")
    return exercises


def _whole_number(raw: dict, key: str, where: str) -> int | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ExerciseSpecError(f"{where}: {key} must be a whole number of at least 1, not {value!r}")
    return value


# -- judging a measurement --------------------------------------------------

@dataclass
class Verdict:
    expectation: Expectation
    passed: bool
    left: float
    right: float
    message: str


def _numbers(record: dict) -> dict:
    """The numeric fields of a variant record, probe and extra fields flattened."""
    names = {k: v for k, v in record.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    for key, value in (record.get("probe") or {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            names[f"probe_{key}"] = value
    for key, value in (record.get("extra") or {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            names.setdefault(key, value)
    return names


def names_for(results: dict, variant: str) -> dict:
    """What an expectation may name: its variant's numbers, the params, pool sizes, other variants."""
    by_name = {v["name"]: v for v in results["variants"]}
    record = by_name[variant]
    names: dict = {}
    for key, value in results["params"].items():
        names[key] = value
    for pool, info in (results.get("pools") or {}).get("pools", {}).items():
        names[f"threads_{pool}"] = info.get("threads")
    names.update(_numbers(record))
    if record.get("service_ms"):
        # What Little's law allows if every request in flight had a thread of its own.
        names["in_flight_limit"] = record["concurrency"] / (record["service_ms"] / 1000.0)
    for other, other_record in by_name.items():
        names[other.replace("-", "_")] = SimpleNamespace(**_numbers(other_record))
    return names


def _fmt(value: float) -> str:
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3g}"


def judge(exercise: Exercise, results: dict) -> list[Verdict]:
    verdicts = []
    by_name = {v["name"]: v for v in results["variants"]}
    if not exercise.allow_errors:
        for name in exercise.measure:
            record = by_name[name]
            if record["failed"] or record["non_2xx"]:
                bad = Expectation(name, "failed + non_2xx == 0", "")
                verdicts.append(Verdict(bad, False, record["failed"] + record["non_2xx"], 0,
                                        f"{name}: {record['failed']} failed and {record['non_2xx']} non-2xx "
                                        "responses; a passing solution answers every request. The server log "
                                        "(target/pul/server.log in the lab) says why."))
    for expectation in exercise.expect:
        names = names_for(results, expectation.variant)
        left = evaluate(expectation.left, names)
        right = evaluate(expectation.right, names)
        try:
            passed = expressions.compare(expectation.op, left, right, expectation.that)
        except ExpressionError as error:
            raise ExerciseSpecError(f"{exercise.lab.name}/{exercise.id}: {error}") from None
        left_text, right_text = ast.unparse(expectation.left), ast.unparse(expectation.right)
        shown_right = _fmt(right) if right_text == _fmt(right) else f"{_fmt(right)} (= {right_text})"
        message = f"{expectation.variant}: {left_text} = {_fmt(left)}, needs {expectation.op} {shown_right}"
        if not passed and expectation.hint:
            try:
                hint = expectation.hint.format_map(_Rounded(names))
            except (KeyError, AttributeError, ValueError, IndexError) as error:
                raise ExerciseSpecError(f"{exercise.lab.name}/{exercise.id}: bad hint placeholder: {error}")
            message += "\n" + _indent("Hint: " + " ".join(hint.split()), "      ")
        verdicts.append(Verdict(expectation, passed, left, right, message))
    return verdicts


class _Rounded(dict):
    """Hint placeholders: `{requests_per_sec}` shows a readable number without a format spec."""

    def __getitem__(self, key):
        value = super().__getitem__(key)
        if isinstance(value, float):
            return _Number(value)
        return value


class _Number(float):
    def __format__(self, spec: str) -> str:
        return format(float(self), spec) if spec else _fmt(float(self))


def _indent(text: str, prefix: str, hanging: str = "  ") -> str:
    import textwrap

    return textwrap.fill(text, width=100, initial_indent=prefix, subsequent_indent=prefix + hanging)


# -- checking ---------------------------------------------------------------

def at_dir(lab: Lab, lab_dir: Path, app_decides: tuple[str, ...] = (), warmup_rounds: int | None = None,
           warmup_seconds: int | None = None, measure_once: bool = False, calibrate: bool = True) -> Lab:
    """The same lab, built and run from `lab_dir` (maybe a scratch copy), and without passing the
    server the `app_decides` parameters, at its start or while it runs (Step.configure), so that
    the app's own configuration decides them; with
    `warmup_rounds`, no step warms up for more rounds than that, and with `warmup_seconds`, no
    warm-up round lasts longer than that. With `measure_once`, no step is measured again when its
    run and its calibration disagree (Step.remeasure_drift). Without `calibrate`, no step runs
    calibration rounds: its prediction is then its Little's-law bounds alone."""
    hidden = {f"lab.{key.replace('_', '-')}" for key in app_decides}
    base = type(lab)

    def server_properties(self, params: dict) -> dict[str, str]:
        return {k: v for k, v in base.server_properties(self, params).items() if k not in hidden}

    def steps(self, params: dict):
        steps = base.steps(self, params)
        for step in steps:
            step.setup = {k: v for k, v in step.setup.items() if k not in hidden}
            step.configure = {k: v for k, v in step.configure.items() if k not in hidden}
            if warmup_rounds is not None:
                step.warmup_max_rounds = min(step.warmup_max_rounds, warmup_rounds)
                if step.warmup_max_rounds_first is not None:
                    step.warmup_max_rounds_first = min(step.warmup_max_rounds_first, warmup_rounds)
                step.warmup_min_rounds = min(step.warmup_min_rounds, step.warmup_max_rounds)
            if warmup_seconds is not None:
                step.warmup_seconds = min(step.warmup_seconds or warmup_seconds, warmup_seconds)
            if measure_once:
                step.remeasure_drift = math.inf
            if not calibrate:
                step.calibrate = False
        return steps

    moved = copy.copy(lab)
    moved.__class__ = type(base.__name__, (base,), {"dir": property(lambda self: lab_dir),
                                                    "server_properties": server_properties, "steps": steps})
    return moved


def check_params(exercise: Exercise) -> dict:
    """The lab's defaults with the exercise's values (app_decides ones stay, for the lab's own
    arithmetic, but never reach the server: see at_dir)."""
    return {**exercise.lab.defaults, **exercise.params}


def run_exercise(exercise: Exercise, lab: Lab, quiet: bool,
                 warmup_rounds: int | None = None) -> tuple[list[Verdict], float]:
    """Build `lab` (maybe a copy) as it is now, measure the exercise's variants, judge them; with
    `warmup_rounds`, warm up for no more rounds than that."""
    started = time.monotonic()
    caps = [rounds for rounds in (exercise.warmup_rounds, warmup_rounds) if rounds is not None]
    # Warmed up for fewer rounds than its exercise asks (the tests' starting states), a step is
    # calibrated colder than it then runs, by design: measuring it again would repeat just that
    # (lab 01's right-size-pool: -68% CPU per request in its run, measured twice, 9 s more).
    # No calibration rounds: an exercise judges what its run measured against limits Little's law
    # gives (in_flight_limit, service_ms), never a bound calibrated from the server's CPU, and those
    # rounds took up to a third of a check's time.
    lab = at_dir(lab, lab.dir, tuple(exercise.app_decides), min(caps, default=None), exercise.warmup_seconds,
                 measure_once=warmup_rounds is not None, calibrate=False)
    results_dir = lab.dir / "target" / "pul" / "checks" / exercise.id
    params = check_params(exercise)
    argv = ["check", exercise.lab.number, exercise.id]
    data = run(lab, params, RunOptions(variants=tuple(exercise.measure), warmup=exercise.warmup,
                                       time_limit=120, results_dir=results_dir, write_report=False,
                                       quiet=quiet, steadiness=False), argv)
    return judge(exercise, data), time.monotonic() - started


@contextlib.contextmanager
def scratch_copy(lab: Lab) -> Iterator[Path]:
    """A copy of the lab as `<tmp>/labs/NN-name` next to links to what it reads from the repository
    (LINKED).

    The lab's target/ comes along (with its timestamps), so sbt builds incrementally and an
    unchanged copy needs no build at all; results/ stays behind, and so do the caches that name
    the original's files by absolute path (PATH_RECORDS): the copy's next build would delete
    those files as stale.
    """
    root = Path(tempfile.mkdtemp(prefix=f"pul-check-{lab.number}-"))
    try:
        yield copy_into(lab, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# What a lab's build reads beside it, as links in a copy's root: the scripts, the instruments
# module and the build code every lab shares.
LINKED = ("scripts", "labs/instruments", "labs/sbt")


def copy_into(lab: Lab, root: Path) -> Path:
    """The lab copied to `root/labs/NN-name`, next to links to the repository's scripts, its
    instruments module and its shared build code (LINKED), as scratch_copy makes it; a copy already
    there is replaced."""
    (root / "labs").mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        link = root / name
        if not link.is_symlink():
            link.symlink_to(REPO / name)
    copy_dir = root / "labs" / lab.dir.name
    shutil.rmtree(copy_dir, ignore_errors=True)
    shutil.copytree(lab.dir, copy_dir, symlinks=True, ignore=_not_copied(lab.dir))
    return copy_dir


def _not_copied(lab_dir: Path):
    # The other Play line's build (target/play-3 below a Play 2.9 build's target/, the lab's and
    # the instruments module's): not needed.
    other_line = [playline.target_dir(lab_dir, "3").name] if playline.current() != "3" else []
    targets = (lab_dir / "target", lab_dir / "target" / "instruments" / "target")

    def ignore(folder: str, names: list[str]) -> list[str]:
        skip = [name for name in names if name.startswith(PATH_RECORDS)]
        if Path(folder) in targets:
            skip += [name for name in other_line if name in names]
        return skip + ["results"] if Path(folder) == lab_dir else skip
    return ignore


def apply_patch(patch: Path, lab_dir: Path) -> None:
    """`git apply` a solution to a lab directory (outside any repository: it acts like patch -p1)."""
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(lab_dir.parent)}
    result = subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=lab_dir, env=env,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise ExerciseSpecError(f"the solution {patch.name} does not apply to this lab's files "
                                f"(was the lab changed since the solution was written?):\n{result.stderr.strip()}")


def select(lab: Lab, wanted: list[str]) -> list[Exercise]:
    exercises = load(lab)
    if not exercises:
        raise UsageError(f"lab {lab.name} has no checked exercises yet (no {EXERCISES_FILE}).")
    if not wanted:
        return exercises
    by_id = {e.id: e for e in exercises}
    unknown = [w for w in wanted if w not in by_id]
    if unknown:
        raise UsageError(f"unknown exercise(s) {', '.join(unknown)} for lab {lab.name}. "
                         f"Its exercises: {', '.join(by_id)}")
    return [by_id[w] for w in wanted]


def print_list(lab: Lab, exercises: list[Exercise]) -> None:
    print(f"Exercises of lab {lab.name} (check one with `scripts/lab check {lab.number} ID`):")
    for exercise in exercises:
        print(f"\n  {exercise.id}: {exercise.title}")
        print(_indent(exercise.task, "    ", hanging=""))
        print(f"    measures: {', '.join(exercise.measure)} with "
              + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in exercise.params.items())
              + (f"; your app's configuration decides {', '.join(exercise.app_decides)}"
                 if exercise.app_decides else ""))


def cmd_check(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/lab check",
        description="Check your solution of a lab's exercises: builds the lab as it is now, runs a short "
                    "measurement and says pass or fail, with the measured numbers and a hint.")
    parser.add_argument("lab", help="the lab: 01, 1 or 01-non-blocking")
    parser.add_argument("exercise", nargs="*", help="exercise ids (default: all of the lab's)")
    parser.add_argument("--list", action="store_true", help="list the lab's exercises and what they ask")
    parser.add_argument("--solution", action="store_true",
                        help="check the book's solution instead of your code: applies "
                             "solutions/ID.patch to a scratch copy (your files are not touched)")
    parser.add_argument("--lab-dir", type=Path, help=argparse.SUPPRESS)  # tests: a prepared copy of the lab
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    # Tests: a starting state misses its targets by far, so one round shows it (see
    # test_exercise_checks.py), and one measurement; a solution needs the exercise's own warm-up.
    parser.add_argument("--warmup-rounds", type=int, help=argparse.SUPPRESS)
    # Tests: with --solution, copy the lab into DIR, apply the solutions and build them, measuring
    # nothing; a later `--lab-dir DIR/labs/NN-name` checks that copy without building it. The
    # workshop part's solutions are built so while nothing measures (scripts/test's labs part).
    parser.add_argument("--prepare", type=Path, metavar="DIR", help=argparse.SUPPRESS)
    options = parser.parse_args(argv[1:])
    if options.warmup_rounds is not None and options.warmup_rounds < 1:
        raise UsageError(f"--warmup-rounds must be at least 1, not {options.warmup_rounds}")
    if options.prepare is not None and (not options.solution or options.lab_dir is not None or options.list):
        raise UsageError("--prepare DIR goes with --solution, and without --lab-dir or --list")
    clean_leftovers()
    lab = resolve(options.lab)
    exercises = select(lab, options.exercise)
    if options.list:
        print_list(lab, exercises)
        return 0
    if options.prepare is not None:
        return prepare(lab, exercises, options.prepare.resolve(), options.quiet)
    with contextlib.ExitStack() as stack:
        if options.lab_dir is not None:
            lab_dir = options.lab_dir.resolve()
            if not (lab_dir / "bench.sh").exists() or not (lab_dir.parent.parent / "scripts").exists():
                raise UsageError(f"--lab-dir {lab_dir} must be a lab directory inside labs/ next to scripts/")
            target = at_dir(lab, lab_dir)
        elif options.solution:
            target = at_dir(lab, stack.enter_context(scratch_copy(lab)))
        else:
            target = lab
        if options.solution:
            for exercise in exercises:
                if not exercise.solution.exists():
                    raise ExerciseSpecError(f"exercise {exercise.id} has no solution file {exercise.solution}")
                apply_patch(exercise.solution, target.dir)
                print(f"applied {exercise.solution.relative_to(REPO)} to a scratch copy of the lab")
        outcomes = []
        for exercise in exercises:
            print(f"\n== Exercise {lab.number}/{exercise.id}: {exercise.title}")
            verdicts, seconds = run_exercise(exercise, target, options.quiet, options.warmup_rounds)
            outcomes.append((exercise, verdicts, seconds))
    print()
    passed = 0
    for exercise, verdicts, seconds in outcomes:
        ok = all(v.passed for v in verdicts)
        passed += ok
        print(f"{'PASS' if ok else 'FAIL'}  {lab.number}/{exercise.id}: {exercise.title}  ({seconds:.0f}s)")
        for verdict in verdicts:
            print(f"  {'ok  ' if verdict.passed else 'FAIL'} {verdict.message}")
    print(f"\n{passed} of {len(outcomes)} exercise(s) passed.")
    if passed != len(outcomes):
        raise ExerciseFailed("not every exercise passed (see the hints above). "
                             f"`scripts/lab check {lab.number} --list` says what each one asks.")
    return 0


def prepare(lab: Lab, exercises: list[Exercise], root: Path, quiet: bool) -> int:
    """`check --solution --prepare DIR`: the lab copied into DIR with the exercises' solutions
    applied, for a later check of that copy. `scripts/lab build --in DIR LAB...` then builds the
    copies (in one sbt), or that check builds its own."""
    for exercise in exercises:
        if not exercise.solution.exists():
            raise ExerciseSpecError(f"exercise {exercise.id} has no solution file {exercise.solution}")
    copy_dir = copy_into(lab, root)
    for exercise in exercises:
        apply_patch(exercise.solution, copy_dir)
    print(f"{copy_dir}: {lab.dir.name} with the solutions of {', '.join(e.id for e in exercises)}; "
          f"build it with scripts/lab build --in {root} {lab.number}")
    return 0


# -- reset ------------------------------------------------------------------

def _git(args: list[str], cwd: Path, binary: bool = False) -> subprocess.CompletedProcess:
    """git, with every path taken literally (--literal-pathspecs: `star*.txt` and `notes[1].txt` name
    one file each, not a pattern), its output as bytes or as text that keeps any file name's bytes
    (surrogateescape, as os.fsdecode does)."""
    text = {} if binary else {"encoding": "utf-8", "errors": "surrogateescape"}
    return subprocess.run(["git", "--literal-pathspecs", *args], cwd=cwd, capture_output=True,
                          stdin=subprocess.DEVNULL, **text)


def _paths(output: str) -> list[str]:
    """The file names of a git command run with -z: NUL-separated, never quoted nor split at spaces
    (without -z, git quotes a name with non-ASCII letters: "my notes \\303\\251.txt")."""
    return [p for p in output.split("\0") if p]


def changed_files(lab_dir: Path, ref: str) -> tuple[list[str], list[str]]:
    """(files differing from `ref`, untracked files) of a lab, relative to the repo, minus non-work files."""
    top = _git(["rev-parse", "--show-toplevel"], lab_dir)
    if top.returncode != 0:
        raise LabError(f"`scripts/lab reset` needs the lab inside a git clone ({lab_dir} is not); "
                       "download the project again or copy the lab's files from the original.")
    root = Path(top.stdout.strip())
    prefix = lab_dir.resolve().relative_to(root).as_posix() + "/"
    if _git(["rev-parse", "--verify", "--quiet", ref + "^{commit}"], root).returncode != 0:
        raise UsageError(f"{ref!r} is not a commit in {root}")
    diff = _git(["diff", "--name-only", "-z", "--no-renames", ref, "--", prefix], root)
    untracked = _git(["ls-files", "-z", "--others", "--exclude-standard", "--", prefix], root)

    def work(paths: str) -> list[str]:
        return [p for p in _paths(paths) if not p[len(prefix):].startswith(NOT_EXERCISE_WORK)]

    return work(diff.stdout), work(untracked.stdout)


def cmd_reset(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/lab reset",
        description="Put a lab's code back to its starting state (the last commit, or --to REF). "
                    "Refuses when you have changes, unless --force; with --force your changes are first "
                    f"saved under {BACKUP_DIR.relative_to(REPO)}/. results/ is never touched.")
    parser.add_argument("lab")
    parser.add_argument("--force", action="store_true", help="save your changes to a backup, then reset")
    parser.add_argument("--to", default="HEAD", metavar="REF", help="the starting state (default HEAD)")
    parser.add_argument("--backup-dir", type=Path, default=BACKUP_DIR, help=argparse.SUPPRESS)
    options = parser.parse_args(argv[1:])
    lab = resolve(options.lab)
    return reset(lab.dir, options.to, options.force, options.backup_dir)


def reset(lab_dir: Path, ref: str, force: bool, backup_root: Path) -> int:
    root = Path(_git(["rev-parse", "--show-toplevel"], lab_dir).stdout.strip() or lab_dir)
    changed, untracked = changed_files(lab_dir, ref)
    if not changed and not untracked:
        print(f"{lab_dir.name} is already at its starting state ({ref}); nothing to do.")
        return 0
    listing = "\n".join(f"  changed:   {_shown(p)}" for p in changed) + ("\n" if changed and untracked else "") + \
        "\n".join(f"  new file:  {_shown(p)}" for p in untracked)
    if not force:
        raise LabError(f"{lab_dir.name} has changes that reset would undo:\n{listing}\n"
                       f"Run `scripts/lab reset {lab_dir.name[:2]} --force` to save them to a backup under "
                       f"{_show(backup_root)}/ and reset, or commit them first.")
    backup = backup_root / f"{lab_dir.name}-{time.strftime('%Y%m%dT%H%M%S')}"
    (backup / "files").mkdir(parents=True, exist_ok=False)
    # A patch to re-apply everything at once, plus plain copies to pick from.
    # Bytes: a changed file need not be UTF-8.
    patch = (_git(["diff", "--binary", "--no-renames", ref, "--", *changed], root, binary=True).stdout
             if changed else b"")
    for path in untracked:
        patch += _git(["diff", "--binary", "--no-index", "/dev/null", path], root, binary=True).stdout
    (backup / "changes.patch").write_bytes(patch)
    for path in changed + untracked:
        source = root / path
        if source.exists():
            destination = backup / "files" / path
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
    in_ref = set(_paths(_git(["ls-tree", "-r", "-z", "--name-only", ref, "--", *changed], root).stdout)) \
        if changed else set()
    restore = [p for p in changed if p in in_ref]
    if restore:
        result = _git(["checkout", ref, "--", *restore], root)
        if result.returncode != 0:
            raise LabError(f"git checkout failed (your changes are saved in {_show(backup)}):\n{result.stderr}")
    for path in [p for p in changed if p not in in_ref] + untracked:
        _git(["rm", "-q", "--cached", "--ignore-unmatch", "--", path], root)
        with contextlib.suppress(FileNotFoundError):
            (root / path).unlink()
    print(f"{lab_dir.name} is back at its starting state ({ref}).\n{listing}")
    print(f"Your changes are saved in {_show(backup)}/ (files/ and changes.patch); to bring them back:\n"
          f"  git apply {_show(backup / 'changes.patch')}")
    return 0


def _shown(path: str) -> str:
    """A path as git gave it, printable (a name that is not UTF-8 shows its bytes as \\x..)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _show(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    return str(path)
