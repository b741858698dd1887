"""One contract for the Play side: the driver reads every lab's GET /pools.

Each lab is a standalone sbt project, so the code behind /pools is copied into it; labs/common
holds the one canonical copy of each file (labs/common/README.md). These tests fail when a lab's
copy drifts from it (package line aside), and check the committed runs' `pools` objects against
labs/common/pools.schema.json, the schema each lab's Play tests check the live /pools against.
"""

from __future__ import annotations

import copy
import difflib
import json
import shlex
import shutil
from pathlib import Path

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[2]
COMMON = Path("labs") / "common"
SCHEMA = REPO / COMMON / "pools.schema.json"

# Canonical file in labs/common -> the folder of each lab its copies live under.
CANONICAL = {
    "PoolReport.scala": "app",   # /pools for the Scala labs (01, 03, 04, 05)
    "PoolReport.java": "app",    # its Java port (lab 02)
    "PoolsSchema.java": "test",  # the Play tests' check of the live /pools against the schema
    "PoolTimeline.java": "app",  # the pools' timeline during a measured run (every lab)
    "TimelineCheck.java": "test",  # the Play tests' check of a live timeline's shape
    "CpuProfile.java": "app",  # the JFR profile of a measured run, for its flame graph (every lab)
    # The build's switch to Play 3 on Pekko (PUL_PLAY=3) and the renames it translates the sources
    # with: sbt build files, in every lab's project/ folder, copied whole (no package line).
    "PlayLine.scala": "project",
    "pekko-renames.txt": "project",
    "plugins.sbt": "project",  # the sbt plugin of each line, and the Play 3 version to raise
}
# Copies that are whole files: the build's own, outside any package.
WHOLE = {name for name, folder in CANONICAL.items() if folder == "project"}

# Keys /pools gained after some committed runs were recorded: with `scripts/lab serve` (runs
# since record a `target`) came process_cpu_seconds and properties, soon after jit_compile_seconds.
# A committed run without `target` predates them; a fresh run of its lab drops this allowance.
ADDED_SINCE_SERVE = ("process_cpu_seconds", "jit_compile_seconds", "properties")
# Keys /pools gained with the Play 3 builds (the server's Play and actor library): a committed run
# whose machine facts lack `actors` predates them.
ADDED_WITH_PLAY_3 = ("play", "actors")


def lab_dirs(root: Path) -> list[Path]:
    """The labs as the driver finds them (labs/common is not one: it does not start with two digits)."""
    return sorted(p for p in (root / "labs").glob("[0-9][0-9]-*") if p.is_dir())


def copies(root: Path) -> list[tuple[Path, Path]]:
    """(a lab's copy, its canonical file), for every copy under labs/NN-*/app or /test."""
    found = []
    for name, folder in CANONICAL.items():
        for lab in lab_dirs(root):
            paths = [lab / folder / name] if name in WHOLE else sorted((lab / folder).rglob(name))
            found += [(path, root / COMMON / name) for path in paths if path.is_file()]
    return found


def package_line(text: str) -> str | None:
    return next((line for line in text.splitlines() if line.startswith("package ")), None)


def without_package(text: str) -> list[str]:
    """The file's lines without its (first) package line: the one line a copy may change."""
    lines = text.splitlines()
    index = next((i for i, line in enumerate(lines) if line.startswith("package ")), None)
    return lines if index is None else lines[:index] + lines[index + 1:]


def drift(copy_path: Path, canonical: Path, root: Path) -> str | None:
    """None when the copy equals the canonical file apart from the package line; else what differs and the fix."""
    copy_text, canonical_text = copy_path.read_text(), canonical.read_text()
    if without_package(copy_text) == without_package(canonical_text):
        return None
    copy_rel, canonical_rel = copy_path.relative_to(root), canonical.relative_to(root)
    diff = "\n".join(difflib.unified_diff(without_package(canonical_text), without_package(copy_text),
                                          fromfile=f"{canonical_rel} (canonical)", tofile=str(copy_rel),
                                          lineterm=""))
    package = package_line(copy_text) or package_line(canonical_text)
    return (f"{copy_rel} differs from {canonical_rel} beyond its package line:\n{diff}\n"
            f"Fix: make the change in {canonical_rel} if every lab needs it, then copy the canonical file "
            f"over each copy, keeping the copy's package line ({package!r}), e.g.\n"
            f"  (echo {shlex.quote(package or '')}; sed 1d {canonical_rel}) > {copy_rel}\n"
            f"A lab-specific part belongs in the lab's own code (its Diagnostics controller adds it "
            f"around the common report), not in its copy.")


def check_copies(root: Path) -> list[str]:
    return [problem for copy_path, canonical in copies(root)
            if (problem := drift(copy_path, canonical, root)) is not None]


# --- the copies -------------------------------------------------------------------------------

def test_each_canonical_file_starts_with_its_package_line():
    """The fix the failure message prints (`sed 1d`) replaces line 1."""
    for name in set(CANONICAL) - WHOLE:
        first = (REPO / COMMON / name).read_text().splitlines()[0]
        assert first.startswith("package "), f"{COMMON / name}: line 1 should be its package line, is {first!r}"


def test_copies_are_found_where_the_labs_keep_them():
    found = copies(REPO)
    for name in CANONICAL:
        assert any(p.name == name for p, _ in found), f"no lab has a copy of {COMMON / name}"
    # Every lab builds on either Play line.
    for lab in lab_dirs(REPO):
        for name in WHOLE:
            assert (lab / "project" / name).is_file(), f"{lab.relative_to(REPO)}/project has no {name}: copy {COMMON / name}"
    # Every lab's Play tests check its /pools against the schema.
    for lab in lab_dirs(REPO):
        assert list((lab / "test").rglob("PoolsSchema.java")), (
            f"{lab.relative_to(REPO)}/test has no PoolsSchema.java: copy {COMMON / 'PoolsSchema.java'} "
            f"into it (with the test package's name) and call PoolsSchema.assertMatches on its /pools answer")


@pytest.mark.parametrize("copy_path", [p for p, _ in copies(REPO)], ids=lambda p: str(p.relative_to(REPO)))
def test_every_copy_equals_the_canonical_file_apart_from_its_package_line(copy_path):
    problem = drift(copy_path, REPO / COMMON / copy_path.name, REPO)
    assert problem is None, problem


def test_a_drifted_copy_fails_with_its_name_a_diff_and_the_fix(tmp_path):
    """The check on a scratch tree: a new package line passes, any other edit fails."""
    (tmp_path / COMMON).mkdir(parents=True)
    canonical = tmp_path / COMMON / "PoolReport.scala"
    shutil.copy(REPO / COMMON / "PoolReport.scala", canonical)
    copy_path = tmp_path / "labs" / "97-copy" / "app" / "metrics" / "PoolReport.scala"
    copy_path.parent.mkdir(parents=True)
    lines = canonical.read_text().splitlines(keepends=True)
    copy_path.write_text("package metrics\n" + "".join(lines[1:]))
    assert check_copies(tmp_path) == []

    edited = [line.replace('"live_threads"', '"alive_threads"') for line in lines[1:]]
    assert edited != lines[1:], "the line this test edits is gone from the canonical file"
    copy_path.write_text("package metrics\n" + "".join(edited))
    problems = check_copies(tmp_path)
    assert len(problems) == 1
    message = problems[0]
    assert message.startswith("labs/97-copy/app/metrics/PoolReport.scala differs from labs/common/PoolReport.scala")
    assert "--- labs/common/PoolReport.scala (canonical)" in message
    assert "+++ labs/97-copy/app/metrics/PoolReport.scala" in message
    assert any(line.startswith("-") and '"live_threads"' in line for line in message.splitlines())
    assert any(line.startswith("+") and '"alive_threads"' in line for line in message.splitlines())
    assert "(echo 'package metrics'; sed 1d labs/common/PoolReport.scala) > " \
           "labs/97-copy/app/metrics/PoolReport.scala" in message

    # The printed fix restores the copy.
    copy_path.write_text("package metrics\n" + "".join(lines[1:]))
    assert check_copies(tmp_path) == []


# --- the schema -------------------------------------------------------------------------------

def schema() -> dict:
    return json.loads(SCHEMA.read_text())


def errors(schema_: dict, instance: dict) -> list[str]:
    validator = jsonschema.validators.validator_for(schema_)(schema_)
    return sorted(f"{e.json_path}: {e.message}" for e in validator.iter_errors(instance))


def test_the_schema_is_a_valid_json_schema():
    s = schema()
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.validators.validator_for(s).check_schema(s)


# Every committed run: the chapter's, and those beside it (Play 3, a profile, a longer run, ...).
COMMITTED = sorted([*REPO.glob("labs/[0-9][0-9]-*/results/latest.json"),
                    *REPO.glob("labs/[0-9][0-9]-*/results/*/latest.json")])


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(REPO)))
def test_committed_pools_match_the_schema(path):
    results = json.loads(path.read_text())
    pools = results.get("pools")
    assert isinstance(pools, dict), f"{path.relative_to(REPO)} has no pools object"
    s = schema()
    older = (ADDED_SINCE_SERVE if "target" not in results else ()) + \
        (ADDED_WITH_PLAY_3 if "actors" not in results["machine"] else ())
    if older:
        s = copy.deepcopy(s)
        s["required"] = [key for key in s["required"] if key not in older]
    found = errors(s, pools)
    assert not found, (f"{path.relative_to(REPO)}: its pools (the server's /pools) do not match "
                       f"{SCHEMA.relative_to(REPO)}:\n  " + "\n  ".join(found))


def a_report() -> dict:
    """A /pools answer as lab 01 gives it."""
    return {"process_cpu_seconds": 5.08, "jit_compile_seconds": 4.308, "properties": {"pul.lab": "01-non-blocking"},
            "available_processors": 2, "play": "2.9.11", "actors": "Akka 2.6.21",
            "pools": {"default": {"dispatcher": "akka.actor.default-dispatcher", "executor": "fork-join-executor",
                                  "threads": 8, "live_threads": 3},
                      "offload": {"dispatcher": "offload-dispatcher", "executor": "thread-pool-executor",
                                  "threads": 7, "live_threads": 0}},
            "work_ms": 5}


def test_the_schema_allows_what_labs_add():
    report = a_report()
    report["postgresql"] = {"version": "PostgreSQL 15"}
    report["pools"]["connections"] = {"threads": 20, "idle": 20}  # lab 03's HikariCP pool
    report["pools"]["commonpool"] = {"parallelism": 1, "executor": "a new thread per task", "threads": None}
    assert errors(schema(), report) == []


@pytest.mark.parametrize("break_it, where", [
    (lambda r: r.pop("available_processors"), "'available_processors' is a required property"),
    (lambda r: r.pop("jit_compile_seconds"), "'jit_compile_seconds' is a required property"),
    (lambda r: r["pools"].pop("default"), "'default' is a required property"),
    (lambda r: r["pools"]["offload"].pop("threads"), "'threads' is a required property"),
    (lambda r: r["pools"]["offload"].update(threads="7"), "$.pools.offload.threads"),
    (lambda r: r["pools"]["offload"].update(threads=0), "$.pools.offload.threads"),
    (lambda r: r.update(properties={"lab.pool-size": 7}), "$.properties.lab.pool-size"),
], ids=["no available_processors", "no jit_compile_seconds", "no default pool", "a pool without threads",
        "threads as a string", "no threads", "a property not a string"])
def test_the_schema_rejects_what_the_driver_cannot_read(break_it, where):
    report = a_report()
    assert errors(schema(), report) == []
    break_it(report)
    found = errors(schema(), report)
    assert any(where in e for e in found), found
