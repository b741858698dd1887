"""A test session stopped by SIGTERM or SIGHUP cleans up as after Ctrl-C (pul.pytest_signals)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1]

# A test that makes a scratch folder, says where, and waits inside it to be stopped.
SLEEPER = textwrap.dedent("""
    import os, pathlib, tempfile, time

    def test_waits_in_a_scratch_folder():
        with tempfile.TemporaryDirectory() as scratch:
            pathlib.Path(os.environ["SCRATCH_NOTE"]).write_text(scratch)
            time.sleep(60)
""")


def _start_sleeper(tmp_path: Path, stop: int, action) -> tuple[subprocess.Popen, Path]:
    """A pytest session running SLEEPER with `stop` set to `action` from its start (whatever this
    session inherited: CI under nohup ignores SIGHUP), once its test is inside its scratch folder:
    the session and that folder."""
    (tmp_path / "test_sleeper.py").write_text(SLEEPER)
    note = tmp_path / "scratch.txt"
    session = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "pul.pytest_signals",
                                "-p", "no:cacheprovider", str(tmp_path / "test_sleeper.py")],
                               cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(SCRIPTS),
                                                  "SCRATCH_NOTE": str(note)},
                               preexec_fn=lambda: signal.signal(stop, action),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    # The note is whole once it names a folder (write_text creates the file before it writes).
    while not (note.exists() and note.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return session, Path(note.read_text())


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_a_stopped_session_removes_what_its_test_made(tmp_path, stop):
    session, scratch = _start_sleeper(tmp_path, stop, signal.SIG_DFL)
    try:
        assert scratch.is_dir()
        session.send_signal(stop)
        output, _ = session.communicate(timeout=30)
    finally:
        if session.poll() is None:
            session.kill()
    assert not scratch.exists(), output
    # pytest's code for a session the user interrupted.
    assert session.returncode == pytest.ExitCode.INTERRUPTED, output


def test_a_session_started_with_the_hang_up_ignored_keeps_ignoring_it(tmp_path):
    # As under `nohup`: SIGHUP ignored from the start.
    session, _ = _start_sleeper(tmp_path, signal.SIGHUP, signal.SIG_IGN)
    try:
        session.send_signal(signal.SIGHUP)
        time.sleep(1)
        assert session.poll() is None, session.communicate()[0]
        session.send_signal(signal.SIGTERM)
        output, _ = session.communicate(timeout=30)
    finally:
        if session.poll() is None:
            session.kill()
    assert session.returncode == pytest.ExitCode.INTERRUPTED, output
