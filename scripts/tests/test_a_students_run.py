"""A student's or trainer's own run never breaks the suite (issue #32, items 1 and 2).

The README's first command, `scripts/lab run 01`, replaces lab 01's committed run in the working
tree (its tracked results files are deleted, new ones written) and redraws the chapter's pages.
What such a run may change, and what the checks compare:
- the book's generated pages, the instructor guide's timings among them, follow the working
  tree's results: the run rewrites every page they feed, so the staleness checks hold;
- the tests that check the project's own checks on a committed run read it from git (HEAD), so
  the student's numbers do not move them;
- the provisioning tests copy the working tree as it is.

Here, on a scratch copy of the repository: a run written through the driver's own code (a
doctored copy of the committed run, with another duration and other rates, stands in for the
measurement), then exactly those checks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAB_RESULTS = "labs/01-non-blocking/results"

# What the driver's write step does at the end of `scripts/lab run 01` (pul.run._write_and_print),
# with the measurement replaced by the committed run, doctored.
STUDENTS_RUN = """
import copy, json, sys
from pathlib import Path
sys.path.insert(0, "scripts")
from pul import results
from pul.lab import resolve
from pul.run import RunOptions, Where, _write_and_print

import shutil
lab = resolve("01")
folder = lab.dir / "results"
old = results.load(folder / "latest.json")["started_at"]
old_stamp = next(p.name for p in folder.iterdir() if p.is_dir() and p.name.startswith(old[:10]))
stamp = "2031-05-06T07-08-09Z"
# The raw ab output of the new run: the committed run's, under the new run's name.
shutil.copytree(folder / old_stamp, folder / stamp)
data = json.loads((folder / "latest.json").read_text().replace(old_stamp + "/", stamp + "/"))
data["duration_s"] += 41
for v in data["variants"]:
    v["requests_per_sec"] *= 0.93
# `--variant NAME`: a run of some variants only.
if len(sys.argv) > 1:
    data["variants"] = [v for v in data["variants"] if v["name"] in sys.argv[1:]]
_write_and_print(lab, data, RunOptions(), Where(folder, folder / stamp, lab.dir / "target" / "pul"), stamp, None, [])
"""


def run(command: list[str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PUL_SMOKE_RESULTS"}
    return subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=300, **kwargs)


def fresh_clone(tmp_path_factory, *variants: str) -> Path:
    """The working tree, copied (as the provisioning tests copy it) and committed: a fresh clone.
    Lab 01's results are HEAD's, the run a fresh clone holds: where the README's own `scripts/lab
    run 01` came first, the working tree holds that run instead, and the doctored run below must
    replace the committed one, not a student's. Then the student's run (of these variants only,
    if any are named)."""
    copy = tmp_path_factory.mktemp("clone")
    subprocess.run(["bash", "-c", f'set -euo pipefail; . scripts/lib/provisioning-test.sh; '
                                  f'pul_worktree_tar . | tar -C "{copy}" -xf -'], cwd=REPO, check=True)
    shutil.rmtree(copy / LAB_RESULTS)
    subprocess.run(f'git archive HEAD {LAB_RESULTS} | tar -C "{copy}" -xf -', shell=True, cwd=REPO, check=True)
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "clone"]):
        subprocess.run(command, cwd=copy, check=True, capture_output=True)
    done = run([sys.executable, "-c", STUDENTS_RUN, *variants], copy)
    assert done.returncode == 0, done.stdout + done.stderr
    return copy


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    return fresh_clone(tmp_path_factory)


@pytest.fixture(scope="module")
def partial_clone(tmp_path_factory) -> Path:
    """`scripts/lab run 01 --variant java-blocking`: the chapter's claims about the other variants
    have nothing to read in it."""
    return fresh_clone(tmp_path_factory, "java-blocking")


def test_the_run_replaced_the_committed_one(clone):
    status = run(["git", "status", "--porcelain", "labs/01-non-blocking/results"], clone).stdout
    assert " D labs/01-non-blocking/results/" in status and "2031-05-06T07-08-09Z" in status, status
    latest = json.loads((clone / "labs/01-non-blocking/results/latest.json").read_text())
    assert latest["duration_s"] == json.loads(
        run(["git", "show", "HEAD:labs/01-non-blocking/results/latest.json"], clone).stdout)["duration_s"] + 41


def test_the_run_rewrote_the_instructor_timings_it_feeds(clone):
    changed = run(["git", "status", "--porcelain", "book/src/generated"], clone).stdout
    assert "book/src/generated/instructor-timings.md" in changed, changed


@pytest.mark.parametrize("check", [["scripts/lab", "report", "--check"], ["scripts/instructor-timings", "--check"]],
                         ids=" ".join)
def test_the_book_is_not_stale_after_it(clone, check):
    done = run(check, clone)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_run_of_one_variant_leaves_the_book_checks_passing_with_notes(partial_clone):
    done = run(["scripts/lab", "report", "--check"], partial_clone)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "your run has no answer to it (lab01 has no 'java_offloaded'" in done.stderr, done.stderr


def test_the_tests_of_the_committed_run_still_pass(clone):
    done = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
                "labs/01-non-blocking/tests", "scripts/tests/test_smoke_checks_can_fail.py",
                "scripts/tests/test_sampled_assertions.py", "scripts/tests/test_play3.py",
                # The book's claims about the committed runs, which read raw ab output too.
                "scripts/tests/test_claims.py"], clone)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_the_provisioning_tests_copy_it(clone, tmp_path):
    done = run(["bash", "-c", f'set -euo pipefail; . scripts/lib/provisioning-test.sh; '
                              f'pul_worktree_tar . | tar -C "{tmp_path}" -xf -'], clone)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "labs/01-non-blocking/results/2031-05-06T07-08-09Z.json").exists()
