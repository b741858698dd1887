"""A command piped into `head` or `grep -q` exits quietly (issue #32): every subcommand that
prints, with its reader already gone, exits as it would have and prints no traceback.

The reader closes its end before the command writes anything, so the first write fails for
certain (with a real `| head -1` that depends on timing: a short output may fit in the pipe).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pul import census

REPO = Path(__file__).resolve().parents[2]

# (command, the exit code it has with a reader)
PRINTING = [
    (["scripts/lab", "list"], 0),
    (["scripts/lab", "--help"], 0),
    (["scripts/lab", "run", "01", "--help"], 0),
    (["scripts/lab", "serve", "01", "--help"], 0),
    (["scripts/lab", "build", "--help"], 0),
    (["scripts/lab", "check", "01", "--list"], 0),
    (["scripts/lab", "runtimes", "list"], 0),
    (["scripts/lab", "nosuchcommand"], 2),
    (["scripts/lab", "run", "99"], 2),
    (["scripts/doctor", "--help"], 0),
    (["scripts/instructor-timings", "--help"], 0),
    (["scripts/merge-results", "--help"], 0),
    (["scripts/with-postgres", "--help"], 0),
    (["scripts/openload", "--help"], 0),
    (["scripts/test", "--list"], 0),
    (["scripts/test", "--repeat", "0", "lab01"], 2),
]
# A shell script ends as a shell pipeline's writer does, by SIGPIPE, silently (the shell counts
# 141); the Python commands carry on and exit as they would have.
SIGPIPE = -13


def with_reader_gone(command: list[str], stderr_too: bool) -> subprocess.CompletedProcess:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=write_end,
                              stderr=write_end if stderr_too else subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("command, code", PRINTING, ids=[" ".join(c) for c, _ in PRINTING])
def test_stdout_closed(command, code):
    done = with_reader_gone(command, stderr_too=False)
    assert done.returncode == code or (command[0] == "scripts/test" and done.returncode == SIGPIPE), \
        done.stderr.decode()[-2000:]
    assert b"rror" not in done.stderr or code != 0, done.stderr.decode()[-2000:]
    assert b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr, done.stderr.decode()[-2000:]


@pytest.mark.parametrize("command, code", PRINTING, ids=[" ".join(c) for c, _ in PRINTING])
def test_stdout_and_stderr_closed(command, code):
    # `command 2>&1 | head`: nothing can be printed at all, and the exit code still says how it went.
    assert with_reader_gone(command, stderr_too=True).returncode in (code, SIGPIPE if command[0] == "scripts/test" else code)


def test_the_census_summary_too(tmp_path):
    (tmp_path / "census.json").write_text('{"repetitions": []}')
    read_end, write_end = os.pipe()
    os.close(read_end)
    code = (f"import sys; sys.path.insert(0, {str(REPO / 'scripts')!r}); from pul import census; "
            f"sys.exit(census.main(['--census-summary', {str(tmp_path)!r}]))")
    try:
        done = subprocess.run([sys.executable, "-c", code], stdout=write_end, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write_end)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode()
    assert census.summarise([])["repetitions"] == 0
