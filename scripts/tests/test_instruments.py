"""One contract for the Play side: the driver reads every lab's GET /pools, its timeline and its
profile through the instruments, which live once, in labs/instruments (an sbt subproject of every
lab's build, labs/sbt/build/Instruments.scala), never in a lab. These tests fail when a lab holds a
copy of an instrument or of the shared build code, or does not wire the module in; and they check
the committed runs' `pools` objects against labs/instruments/pools.schema.json, the schema each
lab's Play tests check the live /pools against.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[2]
MODULE = Path("labs") / "instruments"
SHARED_BUILD = Path("labs") / "sbt"
SCHEMA = REPO / MODULE / "pools.schema.json"

# Keys /pools gained after some committed runs were recorded: with `scripts/lab serve` (runs
# since record a `target`) came process_cpu_seconds and properties, soon after jit_compile_seconds.
# A committed run without `target` predates them; a fresh run of its lab drops this allowance.
ADDED_SINCE_SERVE = ("process_cpu_seconds", "jit_compile_seconds", "properties")
# Keys /pools gained with the Play 3 builds (the server's Play and actor library): a committed run
# whose machine facts lack `actors` predates them.
ADDED_WITH_PLAY_3 = ("play", "actors")


def lab_dirs(root: Path) -> list[Path]:
    """The labs as the driver finds them (labs/instruments and labs/sbt are not: no two digits)."""
    return sorted(p for p in (root / "labs").glob("[0-9][0-9]-*") if p.is_dir())


def shared_names(root: Path) -> set[str]:
    """The names of the module's and the shared build's files: none of them belongs in a lab."""
    return {p.name for folder in (MODULE, SHARED_BUILD) for p in (root / folder).rglob("*")
            if p.is_file() and p.suffix in (".java", ".scala", ".txt", ".json", ".routes")}


# What every lab's build has to say to use the module: its project, the dependency, the routes
# (labs/sbt/build/Instruments.scala, labs/instruments/conf/instruments.routes), and which class
# names its pools (instruments.LabPools).
WIRING = {
    "build.sbt": [r"lazy val instruments = Instruments\.project\b",
                  r"\.dependsOn\(instruments % Instruments\.Uses\)"],
    "conf/routes": [r"(?m)^->\s+/\s+instruments\.Routes\s*$"],
    "conf/application.conf": [r'(?m)^instruments\.pools = "[\w.]+"\s*$'],
    "project/plugins.sbt": [r"addSbtPlugin\(PlayPlugin\.module\)", r'"sbt" / "build"'],
    "project/project/build.sbt": [r'"sbt" / "plugin"'],
}


def problems(root: Path) -> list[str]:
    """What keeps a lab from using the instruments as one module: a copy of a shared file, or a
    missing line of its wiring."""
    found = []
    names = shared_names(root)
    for lab in lab_dirs(root):
        name = lab.relative_to(root)
        for path in sorted(lab.rglob("*")):
            relative = path.relative_to(lab)
            if path.is_file() and path.name in names and relative.parts[0] not in ("target", "results"):
                found.append(f"{name}/{relative} is a copy of a file the labs share ({MODULE} or {SHARED_BUILD}): "
                             f"delete it; the lab's build uses the shared one")
        for file, patterns in WIRING.items():
            text = (lab / file).read_text() if (lab / file).is_file() else ""
            for pattern in patterns:
                if not re.search(pattern, text):
                    found.append(f"{name}/{file} lacks {pattern!r}: see CONTRIBUTING.md, \"How a lab is built\"")
    return found


# --- the module -------------------------------------------------------------------------------

def test_no_lab_holds_an_instrument_and_every_lab_uses_the_module():
    assert problems(REPO) == []


def test_the_module_is_where_the_labs_find_it():
    assert {"PoolReport.scala", "PoolReport.java", "PoolTimeline.java", "CpuProfile.java", "LabPools.java",
            "Instruments.scala", "PoolsSchema.java", "TimelineCheck.java", "pools.schema.json",
            "instruments.routes", "PlayLine.scala", "PlayPlugin.scala", "pekko-renames.txt"} <= shared_names(REPO)


def test_a_copied_instrument_or_a_lab_without_the_module_is_named(tmp_path):
    """The check on a scratch tree: lab 01 as it is passes; a copy of PoolTimeline.java in it, and
    a build.sbt without the dependency, are each named."""
    for folder in (MODULE, SHARED_BUILD):
        shutil.copytree(REPO / folder, tmp_path / folder)
    lab = tmp_path / "labs" / "01-non-blocking"
    for file in WIRING:
        (lab / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "labs" / "01-non-blocking" / file, lab / file)
    assert problems(tmp_path) == []

    shutil.copy(REPO / MODULE / "app" / "instruments" / "PoolTimeline.java", lab / "PoolTimeline.java")
    build = lab / "build.sbt"
    build.write_text(build.read_text().replace(".dependsOn(instruments % Instruments.Uses)", ""))
    found = problems(tmp_path)
    assert len(found) == 2, found
    assert found[0].startswith("labs/01-non-blocking/PoolTimeline.java is a copy of a file the labs share")
    assert found[1].startswith("labs/01-non-blocking/build.sbt lacks")


def test_every_labs_play_tests_check_its_pools_against_the_schema():
    for lab in lab_dirs(REPO):
        assert any("PoolsSchema.assertMatches(" in p.read_text() for p in (lab / "test").rglob("*.java")), (
            f"{lab.relative_to(REPO)}/test: no Play test calls instruments.PoolsSchema.assertMatches on /pools")


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
