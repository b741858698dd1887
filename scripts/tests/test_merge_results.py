"""`scripts/merge-results` on the committed results plus copies that claim to come from other machines."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pul import merge

REPO = Path(__file__).resolve().parents[2]
MERGE = [sys.executable, str(REPO / "scripts" / "merge-results")]
COMMITTED = sorted(p for p in REPO.glob("labs/*/results/latest.json"))


def room(tmp_path: Path) -> tuple[Path, list[dict]]:
    """A folder per student: alice has the real committed results, bob and carol altered copies."""
    if not COMMITTED:
        pytest.skip("no committed results yet")
    base = tmp_path / "room"
    for source in COMMITTED:
        # alice sent her whole results/ folder: latest.json repeats one stamped file.
        shutil.copytree(source.parent, base / "alice" / "labs" / source.parent.parent.name / "results")
    first = json.loads(COMMITTED[0].read_text())
    others = []
    for student, cpu, cores, factor in (("bob", "Apple M2 Pro", 10, 1.5), ("carol", "Intel Core i5-8250U", 4, 0.6)):
        copy = json.loads(json.dumps(first))
        copy["machine"].update(cpu_model=cpu, cores=cores)
        copy["run_id"] = f"{student}-run"
        for v in copy["variants"]:
            v["requests_per_sec"] = round(v["requests_per_sec"] * factor, 2)
        (base / student).mkdir(parents=True)
        (base / student / "latest.json").write_text(json.dumps(copy))
        others.append(copy)
    (base / "carol" / "notes.json").write_text('{"not": "results"}')
    return base, [first, *others]


def test_merges_a_room_into_one_table_and_figure_per_lab(tmp_path):
    base, (first, bob, carol) = room(tmp_path)
    out = tmp_path / "out"
    done = subprocess.run([*MERGE, str(base), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    table = (out / "room-results.md").read_text()
    # Every machine appears once per lab, named by the folder it came from, with its facts.
    section = table.split(f"## {first['lab']}", 1)[1].split("\n## ", 1)[0]
    for who, cpu in (("alice", first["machine"]["cpu_model"]), ("bob", "Apple M2 Pro"), ("carol", "Intel Core i5-8250U")):
        rows = [r for r in section.splitlines() if f"| {who} |" in r]
        assert len(rows) == 1 and cpu in rows[0], section
    # The spread line compares the fastest and slowest machine: 1.5 / 0.6 = 2.5x.
    name = first["variants"][0]["name"]
    spread = next(r for r in section.splitlines() if r.startswith(f"| {name} |"))
    assert "2.50×" in spread
    assert "skipped" in done.stderr and "notes.json" in done.stderr
    svg = (out / f"room-{first['lab']}.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "bob" in svg and "carol" in svg
    # One figure per lab and set of parameters: a lab's folder may keep older runs made with others.
    committed = [json.loads(p.read_text()) for p in REPO.glob("labs/*/results/*.json")]
    assert len(list(out.glob("room-*.svg"))) == len({(r["lab"], json.dumps(r["params"], sort_keys=True))
                                                     for r in committed})


def test_runs_with_other_parameters_are_not_mixed(tmp_path):
    base, (first, _, _) = room(tmp_path)
    odd = json.loads(json.dumps(first))
    odd["params"] = {**odd["params"], "concurrency": 7}
    odd["run_id"] = "dave-run"
    (base / "dave").mkdir()
    (base / "dave" / "latest.json").write_text(json.dumps(odd))
    runs = merge.load_runs(merge.find_files([base]), warn=lambda m: None)
    grouped = merge.groups(runs)
    lab_groups = [key for key in grouped if key[0] == first["lab"]]
    assert len(lab_groups) == 2
    assert [r["_source"] for r in grouped[lab_groups[0]] + grouped[lab_groups[1]]].count("dave") == 1


def test_no_results_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    done = subprocess.run([*MERGE, str(tmp_path / "empty"), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no lab results found" in done.stderr
    done = subprocess.run([*MERGE, str(tmp_path / "missing")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no such file" in done.stderr


def test_a_student_who_ran_twice_counts_once_with_the_newest_run():
    older = {"lab": "01-x", "params": {"c": 1}, "_source": "dan", "started_at": "2026-01-01T10:00:00Z"}
    newer = {**older, "started_at": "2026-01-01T11:00:00Z"}
    other = {**older, "_source": "eve"}
    grouped = merge.groups([older, newer, other])
    (members,) = grouped.values()
    assert [m["_source"] for m in members] == ["dan", "eve"]
    assert members[0] is newer
