"""No half-written files, no lost measurement (issue #15, item 6).

Results and book files are written to a temporary file in the same folder, flushed, then
renamed over the old one: a failure part-way leaves the earlier file as it was and no temporary
file behind. `scripts/lab run` prints its table before it writes anything, and a results file
that is cut off or incomplete is named, with what is wrong, rather than shown as a traceback.
"""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pul import cli, errors, report, results, run

REPO = Path(__file__).resolve().parents[2]
LAB05 = REPO / "labs" / "05-concurrency-highway"
OLD, NEW = "2026-01-01T10-00-00Z", "2026-01-02T11-30-00Z"


class _HalfWriter:
    """A file whose write() stores the first half of the text, then finds the disk full."""

    def __init__(self, real):
        self._real = real

    def write(self, text):
        self._real.write(text[: len(text) // 2])
        self._real.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._real.close()

    def __getattr__(self, name):
        return getattr(self._real, name)


@pytest.fixture
def disk_full(monkeypatch):
    """Call it to fill the disk: from then on, every file opened for writing fills the disk
    half-way through its text (Path.write_text and os.fdopen both open files through io.open)."""
    real_open = io.open

    def half_open(file, mode="r", *args, **kwargs):
        opened = real_open(file, mode, *args, **kwargs)
        return _HalfWriter(opened) if "w" in mode else opened

    return lambda: monkeypatch.setattr(io, "open", half_open)


def files_in(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file()}


def previous_run(results_dir: Path) -> dict[str, str]:
    (results_dir / OLD).mkdir(parents=True)
    results.write({"run": OLD}, results_dir, OLD)
    return files_in(results_dir)


# -- results.write -----------------------------------------------------------

def test_a_disk_full_mid_write_leaves_the_previous_run_and_no_partial_file(tmp_path, disk_full):
    before = previous_run(tmp_path)
    disk_full()
    with pytest.raises(errors.WriteFailed) as failed:
        results.write({"run": NEW, "padding": "x" * 10_000}, tmp_path, NEW, replace=True)
    assert str(tmp_path / f"{NEW}.json") in str(failed.value)
    assert "No space left on device" in str(failed.value)
    # The earlier run is whole (replace=True removes it only after the new files are written),
    # and neither half a <stamp>.json nor a temporary file is left.
    assert files_in(tmp_path) == before
    assert (tmp_path / OLD).is_dir()


def test_a_failed_rename_leaves_the_previous_file_and_no_temporary_file(tmp_path, monkeypatch):
    before = previous_run(tmp_path)

    def no_room(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", no_room)
    with pytest.raises(errors.WriteFailed, match="No space left on device"):
        results.write({"run": NEW}, tmp_path, NEW, replace=True)
    assert files_in(tmp_path) == before


def test_latest_json_is_never_half_written(tmp_path, monkeypatch):
    """The stamped file is written, then latest.json fails: latest.json is the earlier run's."""
    before = previous_run(tmp_path)
    real_replace = os.replace

    def latest_fails(src, dst):
        if Path(dst).name == "latest.json":
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", latest_fails)
    with pytest.raises(errors.WriteFailed, match="latest.json"):
        results.write({"run": NEW}, tmp_path, NEW, replace=True)
    assert (tmp_path / "latest.json").read_text() == before["latest.json"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_successful_write_keeps_the_files_mode_and_leaves_nothing_else(tmp_path):
    previous_run(tmp_path)
    (tmp_path / "latest.json").chmod(0o644)
    results.write({"run": NEW}, tmp_path, NEW, replace=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["latest.json", f"{NEW}.json"])
    assert json.loads((tmp_path / "latest.json").read_text()) == {"run": NEW}
    assert (tmp_path / "latest.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / f"{NEW}.json").stat().st_mode & 0o077 != 0, "mkstemp's 0600 leaked"


# -- book files ----------------------------------------------------------------

def test_write_lab_leaves_the_previous_book_file_on_a_full_disk(tmp_path, monkeypatch, disk_full):
    book_file = tmp_path / "generated" / "table.md"
    book_file.parent.mkdir()
    book_file.write_text("the committed table\n")
    monkeypatch.setattr(report, "REPO", tmp_path)
    fake = SimpleNamespace(report=lambda data: {"generated/table.md": "a new table\n" * 100})
    disk_full()
    with pytest.raises(errors.WriteFailed, match="table.md"):
        report.write_lab(fake, {})
    assert book_file.read_text() == "the committed table\n"
    assert [p.name for p in book_file.parent.iterdir()] == ["table.md"]


def test_scripts_lab_report_leaves_the_previous_book_file_on_a_full_disk(tmp_path, monkeypatch, disk_full):
    book_file = tmp_path / "table.md"
    book_file.write_text("the committed table\n")
    monkeypatch.setattr(report, "render", lambda lab: {book_file: "a new table\n" * 100})
    disk_full()
    with pytest.raises(errors.WriteFailed, match="table.md"):
        cli.cmd_report(["report", "05"])
    assert book_file.read_text() == "the committed table\n"
    assert [p.name for p in tmp_path.iterdir()] == ["table.md"]


# -- scripts/lab run: the table first ----------------------------------------

def _fake_lab(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(name="05-concurrency-highway", title="A fake lab", dir=tmp_path / "lab",
                           table_columns=lambda data: None, summary_notes=lambda data: ["a summary note"])


@pytest.mark.parametrize("unwritable", ["under a file", "disk full"])
def test_the_table_is_printed_even_when_the_results_cannot_be_written(tmp_path, monkeypatch, capsys,
                                                                      unwritable):
    data = json.loads((LAB05 / "results" / "latest.json").read_text())
    if unwritable == "under a file":
        (tmp_path / "not_a_dir").write_text("a file\n")
        results_dir = tmp_path / "not_a_dir" / "results"
    else:
        results_dir = tmp_path / "results"
        results_dir.mkdir()

        def no_room(*_args):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "replace", no_room)
    where = run.Where(results_dir=results_dir, raw_dir=results_dir / NEW, work_dir=tmp_path)
    options = run.RunOptions(results_dir=results_dir)
    with pytest.raises(errors.WriteFailed) as failed:
        run._write_and_print(_fake_lab(tmp_path), data, options, where, NEW, None, [])
    out = capsys.readouterr().out
    assert "A fake lab" in out and "a summary note" in out
    assert "fixed-c=64" in out and "req/s" in out, "the measured table was not printed"
    assert str(results_dir / f"{NEW}.json") in str(failed.value)
    assert "--results-dir" in str(failed.value)
    assert failed.value.exit_code == 9


# -- a corrupt or partial latest.json ------------------------------------------

def scratch_checkout(tmp_path: Path) -> Path:
    """The driver and lab 05 with its committed results, as a fresh checkout would have them."""
    ignored = shutil.ignore_patterns("target", "project", "__pycache__", ".bsp")
    shutil.copytree(REPO / "scripts", tmp_path / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(LAB05, tmp_path / "labs" / LAB05.name, ignore=ignored)
    return tmp_path


def _truncated(text: str) -> str:
    return text[: len(text) // 3]


def _edited(change):
    def edit(text: str) -> str:
        data = json.loads(text)
        change(data)
        return json.dumps(data, indent=2)
    return edit


# Each corruption, and what the message must say besides the file's path.
CORRUPTIONS = {
    "cut off": (_truncated, ("is not valid JSON",)),
    "empty": (lambda text: "", ("is not valid JSON",)),
    "not an object": (lambda text: "[]\n", ("object",)),
    "no variants": (_edited(lambda d: d.pop("variants")), ("missing 'variants'",)),
    "a variant without its rate": (_edited(lambda d: d["variants"][3].pop("requests_per_sec")),
                                   ("variants[3]: missing 'requests_per_sec'",)),
    "a rate that is text": (_edited(lambda d: d["variants"][0].update(requests_per_sec="fast")),
                            ("variants[0].requests_per_sec", "number")),
    "machine cores null": (_edited(lambda d: d["machine"].update(cores=None)), ("machine.cores", "integer")),
    # Not in the schema, read by lab 05's report: the KeyError is caught where reports index results.
    "a key only the lab's report reads": (_edited(lambda d: d["pools"].pop("work_ms")), ("has no 'work_ms'",)),
}


@pytest.mark.parametrize("check", [False, True], ids=["report", "report --check"])
@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_scripts_lab_report_names_a_corrupt_latest_json(tmp_path, corruption, check):
    checkout = scratch_checkout(tmp_path)
    latest = checkout / "labs" / LAB05.name / "results" / "latest.json"
    change, messages = CORRUPTIONS[corruption]
    latest.write_text(change(latest.read_text()))
    out = subprocess.run([sys.executable, str(checkout / "scripts" / "lab"), "report", "05",
                          *(["--check"] if check else [])],
                         cwd=checkout, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == errors.BadResults.exit_code, out.stdout + out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert str(latest) in out.stderr and all(m in out.stderr for m in messages), out.stderr
    assert not (checkout / "book").exists(), "book files were written from a corrupt results file"


def test_every_committed_results_file_loads():
    for path in sorted((REPO / "labs").glob("*/results/*.json")):
        assert results.load(path)["variants"], path
