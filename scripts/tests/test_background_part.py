"""scripts/test's background part (provisioning, beside the quiet parts): however it ends, its
own duration and status reach the caller (issue #32, item 2: "FAILED in ?s", then a part
collected long after it died)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_with_stubbed_tools(tmp_path: Path, instead: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`scripts/test ARGS` with python3 stubbed so that `python3 -m pul.tools` (install_tools, a
    part's first command) runs the bash commands INSTEAD, which end it; any other python3 is the
    real one. Each part's log goes under tmp_path/out."""
    stub = tmp_path / "bin"
    stub.mkdir()
    real = subprocess.run(["bash", "-c", "command -v python3"], capture_output=True, text=True).stdout.strip()
    (stub / "python3").write_text(f'#!/bin/bash\n[[ " $* " == *" pul.tools "* ]] && {{ {instead}; }}\n'
                                  f'exec {real} "$@"\n')
    (stub / "python3").chmod(0o755)
    full_env = dict(os.environ, PATH=f"{stub}:{os.environ['PATH']}", PUL_TEST_OUTPUT=str(tmp_path / "out"), **env)
    return subprocess.run([str(REPO / "scripts" / "test"), *args], env=full_env, cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def test_a_part_that_fails_inside_a_function_still_reports_its_time_and_status(tmp_path):
    """The EXIT trap once named the part as $2, which inside a function is the function's own
    (unset, under set -u): the part then died with "$2: unbound variable", status 1 instead of its
    own and no time. Here the book part fails at its first command, in install_tools."""
    done = run_with_stubbed_tools(tmp_path, "exit 3", "--run-part", "book", PUL_TEST_BACKGROUND="1")
    assert done.returncode == 3, done.stderr
    assert "unbound variable" not in done.stderr, done.stderr
    assert (tmp_path / "out" / "book.seconds").read_text().strip().isdigit()


def test_a_failed_part_s_error_lines_come_last(tmp_path):
    """CI shows a long log's first and last lines only: each failed part's error lines are
    repeated just before the totals, so that the last lines say what failed, not only where."""
    done = run_with_stubbed_tools(tmp_path, 'echo "scripts/lab: error: the stub refuses" >&2; exit 3', "book")
    assert done.returncode == 1, done.stdout + done.stderr
    tail = done.stdout.splitlines()[-4:]
    assert tail[0] == "--- book failed:", done.stdout
    assert tail[1] == "scripts/lab: error: the stub refuses", done.stdout
    assert tail[-1] == "0 passed, 1 failed", done.stdout


def test_each_part_says_the_cpu_its_commands_used(tmp_path):
    """Where the quiet phase's minutes go: its parts share two full cores, so a part's CPU, not its
    time, says what it costs. A stubbed book part burns about a second of CPU in a child."""
    burn = ("python3 -c \"exec('import time\\\\nt = time.process_time()\\\\n"
            "while time.process_time() - t < 1.2: pass')\"; exit 3")
    done = run_with_stubbed_tools(tmp_path, burn, "book")
    line = next(l for l in done.stdout.splitlines() if l.startswith("=== book: FAILED in "))
    assert ", CPU 1s " in line, line
