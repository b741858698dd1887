"""Children that die with the driver (SIGHUP), scripts/with-postgres's exit code and stdin, the private
bench lock, passwords in JDBC URLs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from pul import postgres
from pul.errors import LabError
from pul.procs import RUN_ID_VARIABLE, processes_with_run_id, wait_until
from pul.progress import Progress
from pul.run import bench_lock

REPO = Path(__file__).resolve().parents[2]
WITH_POSTGRES = [sys.executable, str(REPO / "scripts" / "with-postgres")]
# A database that is never connected to: with-postgres then starts no cluster.
NO_CLUSTER = {"DATABASE_URL": "postgresql://lab:pw@127.0.0.1:9/none"}


def with_postgres(*command: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*WITH_POSTGRES, *command], cwd=REPO, env={**os.environ, **NO_CLUSTER, **(env or {})},
                          capture_output=True, text=True, timeout=60, **kwargs)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


class Background:
    """scripts/with-postgres COMMAND in a session of its own, like a terminal job, with its own run id."""

    def __init__(self, *command: str, log: Path, env: dict | None = None):
        self.token = "test" + uuid.uuid4().hex[:10]
        self.log = log
        self._out = log.open("w")
        self.popen = subprocess.Popen([*WITH_POSTGRES, *command], cwd=REPO, stdin=subprocess.DEVNULL,
                                      stdout=self._out, stderr=subprocess.STDOUT, start_new_session=True,
                                      env={**os.environ, **(env or {}), RUN_ID_VARIABLE: self.token})

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def children(self, named: str | None = None) -> list[int]:
        """The run's processes but with-postgres itself (which carries the run id it was given), or
        those whose command is `named`."""
        return [pid for pid in processes_with_run_id(self.token) if pid != self.popen.pid
                and (named is None or _comm(pid) == named)]

    def wait_for(self, text: str, timeout: float = 60) -> None:
        ok = wait_until(lambda: text in self.output() or self.popen.poll() is not None, timeout, 0.05)
        assert ok and text in self.output(), self.output()

    def kill_everything(self) -> None:
        for pid in processes_with_run_id(self.token) + [self.popen.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.popen.wait(10)
        self._out.close()


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


# -- SIGHUP -------------------------------------------------------------------------------------

def test_sighup_raises_interrupted_with_exit_code_129():
    # In a child: before the fix, SIGHUP's default action would end the test process itself.
    code = ("import os, signal, sys\n"
            f"sys.path.insert(0, {str(REPO / 'scripts')!r})\n"
            "from pul.procs import Interrupted, signals_raise, signals_deferred\n"
            "try:\n"
            "    with signals_raise():\n"
            "        os.kill(os.getpid(), signal.SIGHUP)\n"
            "except Interrupted as stop:\n"
            "    print('raised', stop.exit_code)\n"
            "try:\n"
            "    with signals_deferred():\n"
            "        os.kill(os.getpid(), signal.SIGHUP)\n"
            "        print('deferred')\n"
            "except Interrupted as stop:\n"
            "    print('re-raised', stop.exit_code)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.stdout.split("\n") == ["raised 129", "deferred", "re-raised 129", ""], (done.returncode, done.stderr)


def test_sighup_stops_with_postgres_and_its_command(tmp_path):
    job = Background("sleep", "600", log=tmp_path / "out.log", env=NO_CLUSTER)
    try:
        assert wait_until(lambda: job.children("sleep"), 30, 0.05)
        os.kill(job.popen.pid, signal.SIGHUP)
        assert job.popen.wait(30) == 128 + signal.SIGHUP, job.output()
        assert wait_until(lambda: not processes_with_run_id(job.token), 5)
        assert "SIGHUP received" in job.output()
    finally:
        job.kill_everything()


