"""`scripts/lab reset --force` with file names git would quote or a shell would split: spaces,
non-ASCII letters, glob characters. Each must be backed up and reset like any other."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pul import exercises

ODD_NAMES = ["my notes é.txt", "naïve – ünïcode.conf", "tab\there.txt", "notes[1].txt", "star*.txt",
             'quote"d.txt', "-dash.txt"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def clone(tmp_path) -> Path:
    """A scratch repository with a lab whose files have odd names, tracked and committed."""
    repo = tmp_path / "repo"
    lab_dir = repo / "labs" / "01-demo"
    (lab_dir / "conf").mkdir(parents=True)
    (lab_dir / "conf" / "application.conf").write_text("pool-size = 100\n")
    for name in ODD_NAMES:
        (lab_dir / "conf" / name).write_text(f"start {name}\n")
    (lab_dir / "conf" / "1.txt").write_text("a file the glob notes[1].txt would match\n")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    return lab_dir


def test_changed_files_with_odd_names_are_listed_as_they_are(clone):
    for name in ODD_NAMES:
        (clone / "conf" / name).write_text("mine\n")
        (clone / "conf" / f"new {name}").write_text("new\n")
    changed, untracked = exercises.changed_files(clone, "HEAD")
    assert sorted(changed) == sorted(f"labs/01-demo/conf/{n}" for n in ODD_NAMES)
    assert sorted(untracked) == sorted(f"labs/01-demo/conf/new {n}" for n in ODD_NAMES)


def test_reset_with_force_restores_backs_up_and_removes_odd_names(clone, tmp_path):
    conf = clone / "conf"
    for name in ODD_NAMES:
        (conf / name).write_text(f"mine {name}\n")
    (conf / "new notes ü.txt").write_text("new\n")
    (conf / "gone é.txt").write_text("")  # untracked, then committed below: deleted in the work tree
    _git(clone.parent.parent, "-c", "user.name=t", "-c", "user.email=t@t", "add", "labs/01-demo/conf/gone é.txt")
    _git(clone.parent.parent, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "more")
    (conf / "gone é.txt").unlink()
    (conf / "1.txt").write_text("mine too\n")  # changed as well: reset must restore it, not skip it
    assert exercises.reset(clone, "HEAD", force=True, backup_root=tmp_path / "backups") == 0
    for name in ODD_NAMES:
        assert (conf / name).read_text() == f"start {name}\n", name
    assert (conf / "1.txt").read_text() == "a file the glob notes[1].txt would match\n"
    assert (conf / "gone é.txt").exists()
    assert not (conf / "new notes ü.txt").exists()
    backup = next((tmp_path / "backups").iterdir())
    for name in ODD_NAMES:
        assert (backup / "files" / "labs" / "01-demo" / "conf" / name).read_text() == f"mine {name}\n", name
    assert (backup / "files" / "labs" / "01-demo" / "conf" / "new notes ü.txt").read_text() == "new\n"
    assert exercises.changed_files(clone, "HEAD") == ([], [])
    # The patch brings everything back.
    repo = clone.parent.parent
    _git(repo, "apply", str(backup / "changes.patch"))
    assert (conf / "my notes é.txt").read_text() == "mine my notes é.txt\n"
    assert (conf / "new notes ü.txt").read_text() == "new\n" and not (conf / "gone é.txt").exists()


def test_an_untracked_file_with_a_glob_name_is_removed_alone(clone, tmp_path):
    """`git rm --cached -- conf/sta*fish.txt` as a pattern would also untrack conf/starfish.txt."""
    repo = clone.parent.parent
    conf = clone / "conf"
    (conf / "starfish.txt").write_text("tracked, unchanged\n")
    _git(repo, "add", "labs/01-demo/conf/starfish.txt")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "starfish")
    (conf / "sta*fish.txt").write_text("new\n")
    (conf / "star*.txt").unlink()  # tracked, deleted: reset brings it back
    assert exercises.reset(clone, "HEAD", force=True, backup_root=tmp_path / "b") == 0
    assert not (conf / "sta*fish.txt").exists() and (conf / "star*.txt").exists()
    assert _git(repo, "status", "--porcelain") == ""
    assert "labs/01-demo/conf/starfish.txt" in _git(repo, "ls-files").splitlines()
