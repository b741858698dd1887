"""Children that die with the driver (SIGHUP, SIGKILL, a later run's clean-up), scripts/with-postgres's
exit code and stdin, the private bench lock, passwords in JDBC URLs."""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from pul import postgres, procs
from pul.errors import LabError
from pul.procs import RUN_ID_VARIABLE, processes_with_run_id, wait_until
from pul.progress import Progress
from pul.run import bench_lock

# What the driver puts in its children's environments (pul.procs; spelled out here so that this file
# also runs, and fails, against the code before the watchdog).
DRIVER_VARIABLE, NAME_VARIABLE = "PUL_DRIVER", "PUL_CHILD"

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


# -- SIGKILL: the watchdog -----------------------------------------------------------------------

def _watchdogs_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"pul.watchdog" in cmdline and any(arg.startswith(f"{pid}:".encode()) for arg in cmdline):
            found.append(int(entry.name))
    return found


def _fake_child(tag: str, name: str) -> subprocess.Popen:
    """A `sleep` that looks like a child of the driver with this tag."""
    return subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL,
                            env={**os.environ, DRIVER_VARIABLE: tag, RUN_ID_VARIABLE: "fake" + uuid.uuid4().hex[:8],
                                 NAME_VARIABLE: name})


def _dead_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


def _tag_of_this_process() -> str:
    """What procs.driver_tag() gives in this process: PID:START:UID."""
    start = Path("/proc/self/stat").read_text().rpartition(")")[2].split()[19]
    return f"{os.getpid()}:{start}:{os.geteuid()}"


def test_sigkill_of_the_driver_stops_its_command_and_nothing_else(tmp_path):
    # Another run's child (its driver, this test, is alive): the watchdog must leave it alone.
    other = _fake_child(_tag_of_this_process(), "another run's server")
    job = Background("sh", "-c", "sleep 600 & sleep 601", log=tmp_path / "out.log", env=NO_CLUSTER)
    try:
        assert wait_until(lambda: len(job.children("sleep")) == 2, 30, 0.05)
        os.kill(job.popen.pid, signal.SIGKILL)
        job.popen.wait(10)
        assert wait_until(lambda: not processes_with_run_id(job.token), 20), processes_with_run_id(job.token)
        assert wait_until(lambda: not _watchdogs_of(job.popen.pid), 10), "the watchdog did not exit"
        assert other.poll() is None, "the watchdog stopped another run's process"
    finally:
        job.kill_everything()
        other.kill()
        other.wait()


def test_the_watchdog_exits_with_a_driver_that_ends_normally(tmp_path):
    code = (f"import sys; sys.path.insert(0, {str(REPO / 'scripts')!r})\n"
            "from pul.procs import Children\n"
            "children = Children()\n"
            "child = children.start(['sleep', '0.2'])\n"
            "child.wait()\n"
            "children.stop_all()\n"
            "print('done', flush=True)\n"
            "import time; time.sleep(30)\n")
    driver = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert driver.stdout.readline() == "done\n"
        assert len(_watchdogs_of(driver.pid)) == 1, "one watchdog while the driver runs"
        driver.terminate()
        driver.wait(10)
        assert wait_until(lambda: not _watchdogs_of(driver.pid), 10)
    finally:
        driver.kill()
        driver.wait()
    # A normal exit (atexit) waits for its watchdog.
    done = subprocess.run([sys.executable, "-c", code.replace("import time; time.sleep(30)\n", "")],
                          capture_output=True, text=True, timeout=30)
    assert done.stdout == "done\n", done.stderr


def _postgres_available() -> bool:
    from pul import tools

    return all(tools.locate(tool) for tool in (tools.INITDB, tools.POSTGRES))


@pytest.mark.skipif(not _postgres_available(), reason="PostgreSQL (initdb, postgres) is not installed")
def test_sigkill_of_with_postgres_stops_postgres_and_removes_its_directory(tmp_path):
    started = time.monotonic()
    job = Background("sleep", "600", log=tmp_path / "out.log", env={"DATABASE_URL": ""})
    try:
        job.wait_for("database: a throwaway cluster")
        base = Path(re.search(r"cluster in (\S+)", job.output()).group(1))
        assert base.is_dir()
        postmasters = job.children("postgres")
        assert postmasters, "no postgres process carries the run id"
        os.kill(job.popen.pid, signal.SIGKILL)
        job.popen.wait(10)
        assert wait_until(lambda: not processes_with_run_id(job.token), 30), processes_with_run_id(job.token)
        assert wait_until(lambda: not base.exists(), 10), f"{base} is still there"
        # Every process of the cluster (its backends' environments are their process titles; a zombie
        # waits for PID 1 to reap it).
        ps = subprocess.run(["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True).stdout
        assert not [line for line in ps.splitlines() if str(base) in line and line.split()[1][0] != "Z"]
        assert not [line for line in ps.splitlines() if int(line.split()[0]) in postmasters
                    and line.split()[1][0] != "Z"]
    finally:
        job.kill_everything()
        shutil.rmtree(base if "base" in locals() else tmp_path / "none", ignore_errors=True)
    print(f"took {time.monotonic() - started:.1f}s")


# -- a later run cleans up after a killed one --------------------------------------------------

def test_clean_leftovers_stops_a_dead_drivers_processes_and_spares_live_and_other_users(tmp_path):
    from pul import watchdog

    assert (procs.DRIVER_VARIABLE, procs.NAME_VARIABLE) == (DRIVER_VARIABLE, NAME_VARIABLE)
    uid = os.geteuid()
    dead = f"{_dead_pid()}:1:{uid}"
    live = procs.driver_tag()
    assert live == _tag_of_this_process()
    other_user = f"{_dead_pid()}:1:{uid + 1}"
    server, db = _fake_child(dead, "play server"), _fake_child(dead, "postgres")
    kept = [_fake_child(live, "live server"), _fake_child(other_user, "other user's server")]
    for name, tag in (("dead", dead), ("live", live), ("other", other_user), ("unmarked", None)):
        directory = tmp_path / f"{watchdog.POSTGRES_PREFIX}{name}"
        directory.mkdir()
        if tag:
            (directory / watchdog.OWNER_FILE).write_text(f"{DRIVER_VARIABLE}={tag}\n")
    try:
        said = io.StringIO()
        done = watchdog.clean_leftovers(temp_dir=tmp_path, stream=said)
        assert server.wait(10) == -signal.SIGTERM and db.wait(10) == -signal.SIGTERM
        assert all(p.poll() is None for p in kept), "a live run's or another user's process was stopped"
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            f"{watchdog.POSTGRES_PREFIX}{name}" for name in ("live", "other", "unmarked")]
        lines = said.getvalue().splitlines()
        assert f"cleaned up after an earlier run that was killed: play server (PID {server.pid})" in lines
        assert f"cleaned up after an earlier run that was killed: postgres (PID {db.pid})" in lines
        assert ("cleaned up after an earlier run that was killed: "
                f"{tmp_path / (watchdog.POSTGRES_PREFIX + 'dead')}") in lines
        assert len(lines) == len(done) == 3
        # Nothing left: a second clean-up says nothing.
        assert watchdog.clean_leftovers(temp_dir=tmp_path, stream=io.StringIO()) == []
    finally:
        for p in (server, db, *kept):
            p.kill()
            p.wait()


def test_a_start_cleans_up_after_a_driver_killed_with_its_watchdog(tmp_path):
    job = Background("sleep", "600", log=tmp_path / "out.log", env=NO_CLUSTER)
    try:
        assert wait_until(lambda: job.children("sleep"), 30, 0.05)
        [sleeper] = job.children("sleep")
        assert wait_until(lambda: _watchdogs_of(job.popen.pid), 10)
        for pid in _watchdogs_of(job.popen.pid) + [job.popen.pid]:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        assert job.children() == [sleeper], "the sleep should outlive both"
        done = with_postgres("true")
        assert done.returncode == 0, done.stderr
        assert f"cleaned up after an earlier run that was killed: sleep (PID {sleeper})" in done.stderr
        assert wait_until(lambda: not processes_with_run_id(job.token), 5)
    finally:
        job.kill_everything()
