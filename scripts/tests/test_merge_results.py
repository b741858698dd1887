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
    committed = [json.loads(p.read_text()) for p in REPO.glob("labs/*/results/**/*.json")]
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


# -- files from students' machines are untrusted ---------------------------------------------

def _results_copy(**machine) -> dict:
    if not COMMITTED:
        pytest.skip("no committed results yet")
    copy = json.loads(COMMITTED[0].read_text())
    copy["machine"].update(machine)
    copy["run_id"] = "hostile-run"
    return copy


def _merge(tmp_path: Path, *paths: Path) -> subprocess.CompletedProcess:
    # Run in tmp_path: a command that got through would write its marker here (or at an absolute path).
    return subprocess.run([*MERGE, *map(str, paths), "--out", str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)


def _table_rows_are_whole(table: str) -> None:
    """Every row of every table has as many cells as its header: no name broke out of its cell."""
    header = None
    for line in table.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = line.count("|")
        if header is None:
            header = cells
        assert cells == header, f"a row with {cells - 1} cells under a header of {header - 1}:\n{line}"


HOSTILE = {
    "backquotes": "`touch {marker}`",
    "dollar": "$(touch {marker})",
    "single quote": "x' . system('touch {marker}') . '",
    "double quote": 'x" . system("touch {marker}") . "',
    "newline": "x'\nsystem('touch {marker}')\n#",
    "pipe": "a | b | c",
    "html": "<script>alert(1)</script>",
}


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_variant_name_runs_nothing_and_is_skipped(tmp_path, kind):
    base, (first, bob, _) = room(tmp_path)
    marker = tmp_path / f"pwned-{kind.replace(' ', '-')}"
    hostile = _results_copy(cpu_model="Evil CPU")
    hostile["variants"][0]["name"] = HOSTILE[kind].format(marker=marker)
    (base / "mallory").mkdir()
    (base / "mallory" / "latest.json").write_text(json.dumps(hostile))
    done = _merge(tmp_path, base)
    assert not marker.exists(), f"merge-results ran a command from a results file ({kind})"
    assert done.returncode == 0, done.stderr
    assert "mallory" in done.stderr and "variants[0].name" in done.stderr
    table = (tmp_path / "out" / "room-results.md").read_text()
    assert "Evil CPU" not in table and "mallory" not in table
    assert "Apple M2 Pro" in table  # bob's file is merged
    _table_rows_are_whole(table)


@pytest.mark.parametrize("kind", ["backquotes", "dollar", "single quote", "pipe", "html"])
def test_a_hostile_folder_name_runs_nothing_and_is_skipped(tmp_path, kind):
    base, _ = room(tmp_path)
    # A folder name cannot hold a slash: the command writes its marker in the current folder.
    name = HOSTILE[kind].format(marker="pwned").replace("/", "_")
    (base / name).mkdir()
    (base / name / "latest.json").write_text(json.dumps(_results_copy(cpu_model="Evil CPU")))
    done = _merge(tmp_path, base)
    assert not (tmp_path / "pwned").exists()
    assert done.returncode == 0, done.stderr
    assert "folder name" in done.stderr
    table = (tmp_path / "out" / "room-results.md").read_text()
    assert "Evil CPU" not in table and "Apple M2 Pro" in table
    _table_rows_are_whole(table)


def test_hostile_machine_and_parameter_text_is_skipped_naming_the_field(tmp_path):
    base, _ = room(tmp_path)
    for student, change, field in (("m1", {"cpu_model": "CPU | x | y"}, "machine.cpu_model"),
                                   ("m2", {"jdk": "<img src=x onerror=alert(1)>"}, "machine.jdk")):
        (base / student).mkdir()
        (base / student / "latest.json").write_text(json.dumps(_results_copy(**change)))
    odd = _results_copy()
    odd["params"]["note"] = "`rm -rf ~`"
    (base / "m3").mkdir()
    (base / "m3" / "latest.json").write_text(json.dumps(odd))
    done = _merge(tmp_path, base)
    assert done.returncode == 0, done.stderr
    for student, field in (("m1", "machine.cpu_model"), ("m2", "machine.jdk"), ("m3", "params.note")):
        line = next(l for l in done.stderr.splitlines() if f"/{student}/" in l)
        assert "skipped" in line and field in line, done.stderr
    table = (tmp_path / "out" / "room-results.md").read_text()
    assert "<img" not in table and "rm -rf" not in table
    _table_rows_are_whole(table)


def test_gnuplot_strings_are_safe_whatever_reaches_them(tmp_path, monkeypatch):
    """Even a name that got past the checks cannot run a command through gnuplot."""
    if shutil.which("gnuplot") is None:
        pytest.skip("gnuplot not installed")
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "pwned"
    names = [f"`touch {marker}`", f"it's `touch {marker}`", f"a\nsystem('touch {marker}')", 'q"uote\\']
    runs = [{"_source": f"`touch {marker}` '\"", "variants": [{"name": n, "requests_per_sec": 10.0 + i}
                                                           for i, n in enumerate(names)]}]
    svg = merge.figure(f"01-x `touch {marker}`", runs)
    assert not marker.exists()
    assert "<svg" in svg and ("it&apos;s" in svg or "it's" in svg)


def test_files_that_fail_the_schema_are_reported_and_the_others_merged(tmp_path):
    base, _ = room(tmp_path)
    broken = {
        "text-rate": lambda d: d["variants"][0].update(requests_per_sec="fast"),
        "no-version": lambda d: d.pop("schema_version"),
        "negative": lambda d: d["variants"][0].update(failed=-1),
        "lab-path": lambda d: d.update(lab="../../etc"),
        "no-machine-cores": lambda d: d["machine"].pop("cores"),
    }
    for student, change in broken.items():
        data = _results_copy()
        change(data)
        (base / student).mkdir()
        (base / student / "latest.json").write_text(json.dumps(data))
    done = _merge(tmp_path, base)
    assert done.returncode == 0, done.stderr
    for student in broken:
        line = next(l for l in done.stderr.splitlines() if f"/{student}/latest.json" in l)
        assert line.startswith("skipped") and "results.schema.json" in line, line
    assert "variants[0].requests_per_sec" in done.stderr and "'schema_version'" in done.stderr
    table = (tmp_path / "out" / "room-results.md").read_text()
    assert "Apple M2 Pro" in table and "text-rate" not in table
    assert not (tmp_path / "etc.svg").exists()


def test_files_that_are_not_json_huge_or_links_out_of_the_folder_are_skipped(tmp_path):
    base, _ = room(tmp_path)
    (base / "x1").mkdir()
    (base / "x1" / "latest.json").write_bytes(b"\x89PNG\r\n\x1a\n not json")
    (base / "x2").mkdir()
    (base / "x2" / "latest.json").write_text('{"lab": NaN}')
    (base / "x3").mkdir()
    (base / "x3" / "latest.json").write_text("[" * 100_000 + "]" * 100_000)
    huge = base / "x4" / "latest.json"
    huge.parent.mkdir()
    with huge.open("wb") as handle:  # sparse: 21 MB that take no room
        handle.truncate(21 * 1024 * 1024)
    # A link from a student's folder to a file elsewhere on the instructor's machine.
    secret = tmp_path / "elsewhere" / "secret.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps(_results_copy(cpu_model="SECRET CPU")))
    (base / "x5").mkdir()
    (base / "x5" / "latest.json").symlink_to(secret)
    (base / "x6").symlink_to(secret.parent, target_is_directory=True)
    done = _merge(tmp_path, base)
    assert done.returncode == 0, done.stderr
    for student, why in (("x1", "not readable JSON"), ("x2", "NaN"), ("x3", "not readable JSON"),
                         ("x4", "larger than 20 MB"), ("x5", "outside")):
        line = next((l for l in done.stderr.splitlines() if f"/{student}/latest.json" in l), "")
        assert line.startswith("skipped") and why in line, (student, done.stderr)
    table = (tmp_path / "out" / "room-results.md").read_text()
    assert "SECRET CPU" not in table and "Apple M2 Pro" in table
    # Named on the command line, a link out of its own folder is skipped too.
    done = _merge(tmp_path, base / "x5" / "latest.json", base / "bob" / "latest.json")
    assert done.returncode == 0 and "outside" in done.stderr
    assert "SECRET CPU" not in (tmp_path / "out" / "room-results.md").read_text()
