"""scripts/with-postgres's exit code and stdin, passwords in JDBC URLs, the private bench lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pul import postgres
from pul.errors import LabError
from pul.progress import Progress
from pul.run import bench_lock

REPO = Path(__file__).resolve().parents[2]
WITH_POSTGRES = [sys.executable, str(REPO / "scripts" / "with-postgres")]
# A database that is never connected to: with-postgres then starts no cluster.
NO_CLUSTER = {"DATABASE_URL": "postgresql://lab:pw@127.0.0.1:9/none"}


def with_postgres(*command: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*WITH_POSTGRES, *command], cwd=REPO, env={**os.environ, **NO_CLUSTER, **(env or {})},
                          capture_output=True, text=True, timeout=60, **kwargs)


# -- scripts/with-postgres: exit code, stdin, no password shown --------------------------------

def test_with_postgres_exits_128_plus_n_when_signal_n_ends_the_command():
    done = with_postgres("sh", "-c", "kill -TERM $$")
    assert done.returncode == 128 + signal.SIGTERM, done.stderr


def test_with_postgres_passes_the_exit_code_of_a_command_that_exits():
    assert with_postgres("sh", "-c", "exit 7").returncode == 7


def test_with_postgres_gives_the_command_its_stdin():
    done = with_postgres("sh", "-c", "read x; echo got $x", input="hello\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "got hello"


@pytest.mark.parametrize("url", [
    "jdbc:postgresql://db.example:5432/shop?user=lab&password=s3cr3t-Pw",
    "jdbc:postgresql://db.example:5432/shop?password=s3cr3t-Pw&user=lab",
    "jdbc:postgresql://db.example:5432/shop?user=lab&PASSWORD=s3cr3t-Pw#x",
    "postgresql://lab:s3cr3t-Pw@db.example:5432/shop",
    "postgresql://lab@db.example:5432/shop?password=s3cr3t-Pw&sslmode=disable",
    "postgresql://lab@db.example:5432/shop?sslmode=require&sslpassword=s3cr3t-Pw",
])
def test_a_password_in_database_url_is_never_shown(url):
    found = postgres.from_url(url)
    assert "s3cr3t" not in found.description and "***" in found.description
    assert "s3cr3t" not in str(found.facts())
    done = with_postgres("true", env={"DATABASE_URL": url})
    assert done.returncode == 0, done.stderr
    assert "s3cr3t" not in done.stdout + done.stderr and "***" in done.stderr


def test_masking_keeps_everything_but_the_password():
    assert (postgres.redact("jdbc:postgresql://h:5432/db?user=u&password=p&ssl=true")
            == "jdbc:postgresql://h:5432/db?user=u&password=***&ssl=true")
    assert postgres.redact("jdbc:postgresql://h/db?user=u") == "jdbc:postgresql://h/db?user=u"


# -- the bench lock ---------------------------------------------------------------------------

def test_the_bench_lock_is_in_a_private_directory_of_this_user_not_in_tmp(monkeypatch):
    from pul.run import lock_path

    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    path = lock_path()
    assert not path.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve()), path
    assert not path.resolve().is_relative_to("/tmp"), path
    info = path.parent.lstat()
    assert info.st_uid == os.geteuid() and not info.st_mode & 0o022, oct(info.st_mode)


def test_the_bench_lock_is_in_xdg_runtime_dir_when_there_is_one(monkeypatch, tmp_path):
    from pul.run import lock_path

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("PUL_BENCH_LOCK_HELD", raising=False)
    assert lock_path() == tmp_path / "play-under-load" / "bench.lock"
    assert (tmp_path / "play-under-load").stat().st_mode & 0o777 == 0o700
    with bench_lock(Progress(quiet=True)):
        assert lock_path().is_file()


def test_a_symbolic_link_at_the_bench_lock_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("PUL_BENCH_LOCK_HELD", raising=False)
    (tmp_path / "play-under-load").mkdir(mode=0o700)
    victim = tmp_path / "somebody-elses-file"
    (tmp_path / "play-under-load" / "bench.lock").symlink_to(victim)
    with pytest.raises(LabError, match="symbolic link"):
        with bench_lock(Progress(quiet=True)):
            pass
    assert not victim.exists()


def test_a_lock_directory_others_can_write_to_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("PUL_BENCH_LOCK_HELD", raising=False)
    (tmp_path / "play-under-load").mkdir()
    (tmp_path / "play-under-load").chmod(0o777)
    with pytest.raises(LabError, match="nobody else can write"):
        with bench_lock(Progress(quiet=True)):
            pass


