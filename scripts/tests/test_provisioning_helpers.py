"""What the provisioning tests share (scripts/lib/provisioning-test.sh), on a scratch repository
(issue #32, item 2): the container test copies the working tree as it is after a student's run,
and a failing command never ends a provisioning test without a word."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HELPERS = REPO / "scripts" / "lib" / "provisioning-test.sh"
# What container-test did before: it failed ("Cannot stat") on a tracked file the working tree had
# lost, and its stderr went to /dev/null, so `set -e` ended the part without a word.
OLD_COPY = "git ls-files -co --exclude-standard -z | tar --null -T - -cf - 2>/dev/null"


def bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f"set -euo pipefail\nsay() {{ echo \"[test] $*\"; }}\n. {HELPERS}\n{script}"],
                          cwd=cwd, capture_output=True, timeout=60)


@pytest.fixture
def repo_after_a_run(tmp_path: Path) -> Path:
    """A checkout in which a run replaced a committed results file: one tracked file deleted,
    one new, one ignored."""
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / ".gitignore").write_text("target/\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "old-run.json").write_text("{}\n")
    (tmp_path / "README.md").write_text("hello\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "start")
    (tmp_path / "results" / "old-run.json").unlink()
    (tmp_path / "results" / "new-run.json").write_text("{}\n")
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "build.out").write_text("x\n")
    return tmp_path


def test_the_old_copy_failed_on_a_deleted_tracked_file(repo_after_a_run):
    assert bash(OLD_COPY + " >/dev/null", repo_after_a_run).returncode != 0


def test_the_copy_is_the_working_tree(repo_after_a_run, tmp_path_factory):
    archive = tmp_path_factory.mktemp("tar") / "repo.tar"
    done = bash(f"pul_worktree_tar {repo_after_a_run} >{archive}", Path("/"))
    assert done.returncode == 0, done.stderr.decode()
    names = subprocess.run(["tar", "-tf", str(archive)], capture_output=True, text=True, check=True).stdout.split()
    assert sorted(names) == [".gitignore", "README.md", "results/new-run.json"]


def test_a_failing_command_says_which_where_and_its_status(tmp_path):
    done = bash("pul_fail_loudly\nstep() { ls /no/such/place >/dev/null; }\nstep\necho never", tmp_path)
    assert done.returncode == 2
    assert b"never" not in done.stdout
    assert b"FAILED: `ls /no/such/place > /dev/null` exited 2 (line " in done.stdout + done.stderr


def test_a_handled_failure_is_not_reported(tmp_path):
    done = bash("pul_fail_loudly\nfalse || echo handled\nif ! false; then echo fine; fi", tmp_path)
    assert done.returncode == 0 and b"FAILED" not in done.stdout + done.stderr
    assert done.stdout.split(b"\n")[:2] == [b"handled", b"fine"]


# What container-test and vm-test did before: a missing sources.list made grep exit 2 though
# debian.sources matched, and under the ERR trap the substitution ended with no mirror at all,
# so mmdebstrap ran with "" ("did not find any indices"), on a fresh machine of the reference kind.
OLD_MIRROR = """old_mirror() {
  local uri
  uri=$(grep -hsE '^(URIs:|deb )' "$1"/etc/apt/sources.list.d/*.sources "$1"/etc/apt/sources.list 2>/dev/null |
    grep -v security | grep -oE 'https?://[^ ]+' | head -n 1)
  printf '%s\\n' "${uri:-http://deb.debian.org/debian}"
}
"""
SOURCES = ("Types: deb\nURIs: http://mirror.example.invalid/debian\nSuites: bookworm\n\n"
           "Types: deb\nURIs: http://mirror.example.invalid/debian-security\nSuites: bookworm-security\n")


@pytest.mark.parametrize("files, mirror", [
    ({"sources.list.d/debian.sources": SOURCES}, "http://mirror.example.invalid/debian"),
    ({"sources.list": "deb http://old.example.invalid/debian bookworm main\n"}, "http://old.example.invalid/debian"),
    ({}, "http://deb.debian.org/debian"),
], ids=["debian.sources only", "sources.list only", "neither"])
def test_the_host_mirror_is_found_whichever_source_files_exist(tmp_path, files, mirror):
    for name, text in files.items():
        path = tmp_path / "etc" / "apt" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "etc" / "apt" / "sources.list.d").mkdir(parents=True, exist_ok=True)
    # As the tests call it: the substitution an argument of mmdebstrap's.
    done = bash(f'pul_fail_loudly\necho "mirror=$(pul_host_mirror "{tmp_path}/")"', tmp_path)
    assert done.returncode == 0 and f"mirror={mirror}\n" in done.stdout.decode(), done
    old = bash(f'pul_fail_loudly\n{OLD_MIRROR}\necho "mirror=$(old_mirror "{tmp_path}")"', tmp_path)
    if files == {"sources.list.d/debian.sources": SOURCES}:
        assert "mirror=\n" in old.stdout.decode(), old  # the failure this fixes
