"""One run per lab in the repository: a run written into a lab's own results/ replaces the
earlier one (git history keeps it); a results folder of the reader's choice keeps every run."""

from __future__ import annotations

import filecmp
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pul import results

REPO = Path(__file__).resolve().parents[2]
OLD, NEW = "2026-01-01T10-00-00Z", "2026-01-02T11-30-00Z"


def add_run(results_dir: Path, run_stamp: str) -> None:
    """A run as `scripts/lab run` leaves it: raw output in `<stamp>/`, then the results files."""
    raw = results_dir / run_stamp
    raw.mkdir(parents=True)
    (raw / "fast.ab.txt").write_text(f"ab output of {run_stamp}\n")
    results.write({"run": run_stamp, "variants": [{"ab_output": f"{run_stamp}/fast.ab.txt"}]},
                  results_dir, run_stamp)


def names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_stamp_pattern_matches_what_stamp_gives():
    assert results.STAMP.fullmatch(results.stamp(datetime(2026, 11, 22, 9, 5, 7, tzinfo=timezone.utc)))


def test_a_new_run_replaces_the_old_one(tmp_path):
    add_run(tmp_path, OLD)
    (tmp_path / NEW).mkdir()  # the new run's raw output, written while it measured
    results.write({"run": NEW}, tmp_path, NEW, replace=True)
    assert names(tmp_path) == {"latest.json", f"{NEW}.json", NEW}
    assert filecmp.cmp(tmp_path / "latest.json", tmp_path / f"{NEW}.json", shallow=False)


def test_an_interrupted_runs_raw_output_goes_too(tmp_path):
    add_run(tmp_path, OLD)
    (tmp_path / "2026-01-01T12-00-00Z").mkdir()  # interrupted: warm-up output, no results file
    (tmp_path / NEW).mkdir()
    results.write({"run": NEW}, tmp_path, NEW, replace=True)
    assert names(tmp_path) == {"latest.json", f"{NEW}.json", NEW}


def test_anything_not_named_like_a_run_is_kept(tmp_path):
    add_run(tmp_path, OLD)
    keep = {"notes.md", "summary.json", f"{OLD}.txt", f"{OLD}-mine", "2026-01-01.json", "plots", "link"}
    for name in ("notes.md", "summary.json", f"{OLD}.txt"):
        (tmp_path / name).write_text("mine\n")
    for name in (f"{OLD}-mine", "2026-01-01.json", "plots"):
        (tmp_path / name).mkdir()
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    (tmp_path / "2026-01-01T09-00-00Z").symlink_to(elsewhere)  # a link, even one named like a run
    keep.add("2026-01-01T09-00-00Z")
    results.write({"run": NEW}, tmp_path, NEW, replace=True)
    assert names(tmp_path) == keep | {"latest.json", f"{NEW}.json"}
    assert elsewhere.is_dir()


def test_a_results_folder_of_the_readers_choice_keeps_every_run(tmp_path):
    add_run(tmp_path, OLD)
    add_run(tmp_path, NEW)
    assert names(tmp_path) == {"latest.json", f"{OLD}.json", OLD, f"{NEW}.json", NEW}
    assert json.loads((tmp_path / "latest.json").read_text())["run"] == NEW


@pytest.mark.parametrize("failure", ["unwritable results", "copy to latest.json fails"])
def test_a_failed_write_leaves_the_old_run_in_place(tmp_path, monkeypatch, failure):
    add_run(tmp_path, OLD)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    data = {"run": NEW}
    if failure == "unwritable results":
        data["oops"] = object()  # not JSON: fails before anything is written
    else:
        def broken_copy(*args, **kwargs):
            raise OSError("disk full")
        monkeypatch.setattr(shutil, "copyfile", broken_copy)
    with pytest.raises((TypeError, OSError)):
        results.write(data, tmp_path, NEW, replace=True)
    assert (tmp_path / OLD / "fast.ab.txt").exists()
    assert {p: p.read_bytes() for p in before} == before  # latest.json still the old run's


# -- the committed results ----------------------------------------------------

# Each lab's committed run, and a second one a lab may keep in a folder of its own under results/
# (lab 04: results/thorough/, the --thorough run its report compares the default mode with).
COMMITTED = sorted({*REPO.glob("labs/*/results"), *(p.parent for p in REPO.glob("labs/*/results/*/latest.json"))})


def sub_runs(results_dir: Path) -> set[str]:
    """Folders in a results folder that hold a committed run of their own."""
    return {p.name for p in results_dir.iterdir() if (p / "latest.json").is_file()}


def referenced_paths(data, key: str = ""):
    """Relative paths a results file names: each variant's `ab_output` and its runs' `output`."""
    if isinstance(data, dict):
        for k, value in data.items():
            yield from referenced_paths(value, k)
    elif isinstance(data, list):
        for value in data:
            yield from referenced_paths(value, key)
    elif key in ("ab_output", "output") and isinstance(data, str):
        yield data


def test_there_are_committed_results():
    assert COMMITTED


@pytest.mark.parametrize("results_dir", COMMITTED, ids=[p.parent.name for p in COMMITTED])
def test_each_lab_commits_exactly_one_run(results_dir):
    latest = results_dir / "latest.json"
    stamped = [p for p in results_dir.glob("*.json") if p != latest]
    assert len(stamped) == 1, f"{results_dir}: one <stamp>.json besides latest.json, found {stamped}"
    run_stamp = stamped[0].stem
    assert filecmp.cmp(latest, stamped[0], shallow=False), "latest.json is a copy of the run's file"
    assert names(results_dir) - sub_runs(results_dir) == {"latest.json", f"{run_stamp}.json", run_stamp}
    assert results.earlier_runs(results_dir, run_stamp) == []


@pytest.mark.parametrize("results_dir", COMMITTED, ids=[p.parent.name for p in COMMITTED])
def test_every_path_latest_json_names_exists(results_dir):
    paths = list(referenced_paths(results.load(results_dir / "latest.json")))
    assert paths, "each variant names its raw ab output"
    missing = [p for p in paths if not (results_dir / p).is_file()]
    assert not missing, f"{results_dir}/latest.json names missing files: {missing[:5]}"


def test_raw_output_comes_from_the_working_tree_then_from_git_and_never_from_outside(tmp_path):
    """pul.results.raw_text: a replaced run's raw file as git's HEAD has it; a name that leaves the
    results folder (a record is untrusted input) reads nothing."""
    import subprocess
    folder = tmp_path / "results"
    (folder / "old").mkdir(parents=True)
    (folder / "old" / "ab.txt").write_text("committed\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "c"]):
        subprocess.run(command, cwd=tmp_path, check=True, capture_output=True)
    assert results.raw_text(folder, "old/ab.txt") == "committed\n"
    shutil.rmtree(folder / "old")  # a later run replaced it
    assert results.raw_text(folder, "old/ab.txt") == "committed\n"
    assert results.raw_text(folder, "new/ab.txt") is None
    assert results.raw_text(folder, "../secret.txt") is None
    assert results.raw_text(folder, str(tmp_path / "secret.txt")) is None


def test_the_labs_own_results_folders_keep_one_run_and_others_keep_every_run(tmp_path):
    """`--results-dir labs/NN/results/profile` replaces the committed --profile run, as `scripts/lab
    run NN` replaces results/ (a re-made profile run once left its predecessors beside it);
    a folder of the reader's choice keeps a history."""
    lab = tmp_path / "labs" / "05-x"
    (lab / "results" / "profile").mkdir(parents=True)
    assert results.keeps_one_run(lab, lab / "results")
    assert results.keeps_one_run(lab, lab / "results" / "profile")
    assert results.keeps_one_run(lab, lab / "results" / "play-3" / ".." / "profile")
    assert not results.keeps_one_run(lab, tmp_path / "mine")
    assert not results.keeps_one_run(lab, lab)
