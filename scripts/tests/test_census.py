"""The flake census (`scripts/test --repeat N PART`, pul.census) on a stand-in repository whose
scripts/test is a stub: fresh clones, every band recorded, logs kept per repetition, a summary that
counts failures and margins, bad arguments refused before any work, nothing left after Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pul import census
from pul.procs import wait_until
from pul.testing import CENSUS_VARIABLE, band_miss, margin

REPO = Path(__file__).resolve().parents[2]

# A stand-in scripts/test: part "fake" records one band whose value comes from a counter outside
# the clone (so each repetition differs), fails on the third call, and sleeps if asked to.
STUB = """#!/usr/bin/env bash
set -u
if [[ ${1:-} == --list ]]; then echo "fake   a stand-in part"; echo "other  another"; exit 0; fi
count_file=COUNTER
n=$(( $(cat "$count_file" 2>/dev/null || echo 0) + 1 )); echo "$n" >"$count_file"
mkdir -p test-output
echo "log of call $n" >test-output/fake.log
if [[ -f SLEEP ]]; then sleep 60 & echo "$!" >SLEEP_PID_FILE; wait; fi
value=$(python3 -c "print(0.8 + 0.1 * $n)")
echo "{\\"test\\": \\"t.py::test_x\\", \\"band\\": \\"x\\", \\"value\\": $value, \\"low\\": 0.85, \\"high\\": 1.1, \\"margin\\": $(python3 -c "print(round(min(($value - 0.85) / 0.85, (1.1 - $value) / 1.1), 4))"), \\"held\\": true}" >>"$PUL_CENSUS_FILE"
if [[ $n -eq 3 ]]; then
  echo "FAILED t.py::test_x - boom"; echo "=== fake: FAILED in 2s (log: test-output/fake.log)"; exit 1
fi
echo "=== fake: PASSED in 1s"
"""


def running(pid: int) -> bool:
    """Alive and not a zombie waiting for its parent to collect it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / "scripts" / "test").write_text(STUB.replace("COUNTER", str(tmp_path / "counter"))
                                          .replace("SLEEP_PID_FILE", str(tmp_path / "sleep.pid")))
    (repo / "scripts" / "test").chmod(0o755)
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "x"]):
        subprocess.run(command, cwd=repo, check=True, capture_output=True)
    return repo


def test_margin_is_the_share_of_the_nearer_edge():
    assert margin(1.0, 0.85, 1.10) == pytest.approx(0.1 / 1.1)
    assert margin(0.80, 0.85, 1.10) == pytest.approx(-0.05 / 0.85)
    assert margin(3.0, 2.0, None) == pytest.approx(0.5)
    assert margin(0.0, None, 0.0) == 0


def test_band_miss_records_no_band_of_a_test_that_measures_nothing(tmp_path, monkeypatch):
    # This test is not marked slow: pul.pytest_census leaves PUL_CENSUS_MEASURED unset.
    monkeypatch.setenv(CENSUS_VARIABLE, str(tmp_path / "bands.jsonl"))
    assert band_miss("doctored", 0.8, 0.85, 1.10) is not None
    assert not (tmp_path / "bands.jsonl").exists()


def test_band_miss_records_every_band_of_a_measured_test_held_or_not(tmp_path, monkeypatch):
    out = tmp_path / "bands.jsonl"
    monkeypatch.setenv(CENSUS_VARIABLE, str(out))
    monkeypatch.setenv("PUL_CENSUS_MEASURED", "1")  # as pul.pytest_census sets it for a `slow` test
    assert band_miss("ok", 1.0, 0.85, 1.10) is None
    assert "0.8 outside 0.85 .. 1.1 (missed by 5.9%)" in band_miss("low", 0.8, 0.85, 1.10)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["band"], r["held"]) for r in records] == [("ok", True), ("low", False)]
    assert records[0]["test"].endswith("test_band_miss_records_every_band_of_a_measured_test_held_or_not")


def test_three_repetitions_from_fresh_clones(stand_in, tmp_path):
    folder = tmp_path / "census"
    assert census.repeat(stand_in, 3, ["fake"], folder) == 1  # the third repetition failed
    data = json.loads((folder / "census.json").read_text())
    assert [r["parts"]["fake"]["passed"] for r in data["repetitions"]] == [True, True, False]
    assert data["repetitions"][2]["failed_tests"] == ["t.py::test_x"]
    # Each repetition's part log kept apart; the clones gone.
    assert [(folder / f"rep-0{k}" / "fake.log").read_text() for k in (1, 2, 3)] == \
        [f"log of call {k}\n" for k in (1, 2, 3)]
    assert not (stand_in / "test-output").exists()
    summary = census.summarise(data["repetitions"])
    assert summary["parts"]["fake"] == {"runs": 3, "passed": 2, "seconds_min": 1, "seconds_median": 1,
                                        "seconds_max": 2}
    [band] = summary["bands"]
    assert band["runs"] == 3 and band["failed"] == 0
    assert band["value_min"] == pytest.approx(0.9) and band["value_max"] == pytest.approx(1.1)
    assert band["margin_min"] == pytest.approx(0.0, abs=1e-3)
    text = (folder / "summary.md").read_text()
    assert "| fake | 3 | 2/3 |" in text and "x (on its edge)" in text  # 1.1 is exactly the high edge


def test_merged_censuses_count_all_their_repetitions(stand_in, tmp_path, capsys):
    census.repeat(stand_in, 1, ["fake"], tmp_path / "a")
    census.repeat(stand_in, 1, ["fake"], tmp_path / "b")
    assert census.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "SUMMARY.md") == 0
    assert "# Test census: 2 repetitions" in (tmp_path / "SUMMARY.md").read_text()


@pytest.mark.parametrize("count, parts, message", [
    (0, ["fake"], "1 to 100"), (2, [], "name the parts"), (2, ["fake", "nosuch"], "unknown part(s) nosuch")])
def test_bad_arguments_are_refused_before_any_clone(stand_in, tmp_path, count, parts, message):
    with pytest.raises(census.CensusError, match=message.replace("(", r"\(").replace(")", r"\)")):
        census.repeat(stand_in, count, parts, tmp_path / "census")
    assert not (tmp_path / "census").exists() and not (tmp_path / "counter").exists()


def test_a_folder_that_is_no_census_is_refused(tmp_path):
    (tmp_path / "census.json").write_text("[1, 2]")
    with pytest.raises(census.CensusError, match="not a census"):
        census.merge([tmp_path], None)


def start_census(stand_in: Path, tmp_path: Path) -> subprocess.Popen:
    """census.repeat(2 repetitions of part "fake") in a session of its own, its clones under tmp_path."""
    code = f"import sys; sys.path.insert(0, {str(REPO / 'scripts')!r}); from pul import census; " \
           f"sys.exit(census.repeat(__import__('pathlib').Path({str(stand_in)!r}), 2, ['fake'], " \
           f"__import__('pathlib').Path({str(tmp_path / 'census')!r})))"
    return subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ, TMPDIR=str(tmp_path)),
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_ctrl_c_stops_the_repetition_and_leaves_no_clone(stand_in, tmp_path):
    (stand_in / "SLEEP").write_text("")
    subprocess.run(["git", "add", "SLEEP"], cwd=stand_in, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "s"],
                   cwd=stand_in, check=True)
    driver = start_census(stand_in, tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "sleep.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        os.killpg(driver.pid, signal.SIGINT)
        assert driver.wait(30) == 130, driver.stderr.read()
        assert "stopped" in driver.stderr.read()
        assert not list(tmp_path.glob("pul-census-*")), "the clone was left behind"
        sleeper = int((tmp_path / "sleep.pid").read_text())
        assert wait_until(lambda: not running(sleeper), 10), "the repetition's processes were left running"
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)


def test_a_process_in_a_session_of_its_own_that_writes_after_the_stop_is_waited_for(stand_in, tmp_path):
    """A driver under the repetition cleans up after SIGTERM and may write into the clone after
    scripts/test has gone (a census stopped this way ended in "Directory not empty: 'clone'"); one
    in a session of its own is not in scripts/test's either. The census waits for both, then
    removes the clone, without a traceback."""
    late = tmp_path / "late.pid"
    (stand_in / "SLEEP").write_text("")
    stub = (stand_in / "scripts" / "test").read_text().replace(
        'if [[ -f SLEEP ]]; then',
        f'setsid bash -c \'trap "sleep 1; echo late >late.txt; exit 0" TERM; echo $$ >{late}; '
        f'sleep 60 & wait\' &\nif [[ -f SLEEP ]]; then')
    (stand_in / "scripts" / "test").write_text(stub)
    subprocess.run(["git", "add", "-A"], cwd=stand_in, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "s"],
                   cwd=stand_in, check=True)
    driver = start_census(stand_in, tmp_path)
    try:
        assert wait_until(lambda: (tmp_path / "sleep.pid").exists() and late.exists(), 30)
        os.killpg(driver.pid, signal.SIGTERM)
        assert driver.wait(60) == 130
        stderr = driver.stderr.read()
        assert "Traceback" not in stderr and "stopped" in stderr, stderr
        assert not list(tmp_path.glob("pul-census-*")), "the clone was left behind"
        assert not running(int(late.read_text())), "the process in a session of its own was left running"
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        if late.exists() and running(int(late.read_text())):
            os.kill(int(late.read_text()), signal.SIGKILL)


def test_only_a_test_marked_slow_is_measured(monkeypatch):
    from types import SimpleNamespace

    from pul import pytest_census

    monkeypatch.delenv(pytest_census.MEASURED_VARIABLE, raising=False)
    slow = SimpleNamespace(get_closest_marker=lambda name: object() if name == "slow" else None)
    fast = SimpleNamespace(get_closest_marker=lambda name: None)
    pytest_census.pytest_runtest_setup(slow)
    assert os.environ[pytest_census.MEASURED_VARIABLE] == "1"
    pytest_census.pytest_runtest_setup(fast)
    assert pytest_census.MEASURED_VARIABLE not in os.environ


def test_merged_censuses_show_each_ones_passes_side_by_side(stand_in, tmp_path):
    """Before and after a fix: the third call of the stand-in part fails, so census "before" (two
    repetitions: calls 1, 2) passes 2/2 and "after" (calls 3, 4) 1/2."""
    census.repeat(stand_in, 2, ["fake"], tmp_path / "before")
    census.repeat(stand_in, 2, ["fake"], tmp_path / "after")
    text = census.merged_summary([tmp_path / "before", tmp_path / "after"])
    assert "| part | `before` | `after` |" in text and "| fake | 2/2 | 1/2 |" in text
    # One census alone needs no such table.
    assert "Parts by census" not in census.merged_summary([tmp_path / "before"])


def test_passes_in_a_row_count_from_the_last_failure_in_the_order_runs_started():
    """Censuses given out of order are taken in the order they started; a failure resets the count,
    and a part missing from a repetition neither counts nor resets."""
    def rep(commit, **parts):
        return {"commit": commit, "parts": {p: {"passed": ok, "seconds": 1} for p, ok in parts.items()},
                "failed_tests": [], "bands": []}
    later = ("b", {"started_at": "2026-12-07T10:00:00Z",
                   "repetitions": [rep("2222222", lab=True, other=True), rep("2222222", lab=True)]})
    earlier = ("a", {"started_at": "2026-12-07T09:00:00Z",
                     "repetitions": [rep("1111111", lab=True, other=True), rep("1111111", lab=False, other=True)]})
    rows = census.passes_in_a_row([later, earlier])
    assert rows["lab"] == {"passes": 2, "since": {"census": "b", "repetition": 1, "commit": "2222222"},
                           "last_failure": {"census": "a", "repetition": 2, "commit": "1111111"}}
    assert rows["other"] == {"passes": 3, "since": {"census": "a", "repetition": 1, "commit": "1111111"},
                             "last_failure": None}
    text = census.summary_markdown(census.summarise([]), [later, earlier])
    assert "| lab | 2 | `b` rep 1 (2222222) | `a` rep 2 (1111111) |" in text
    assert "| other | 3 | `a` rep 1 (1111111) | – |" in text


def test_every_repetition_tests_the_commit_the_census_started_on(stand_in, tmp_path):
    """A commit made while the census runs (here, by the part itself, into the repository the
    census clones) must not reach the later repetitions."""
    stub = stand_in / "scripts" / "test"
    stub.write_text(stub.read_text().replace(
        'mkdir -p test-output\n',
        f'mkdir -p test-output\ngit -C "{stand_in}" -c user.name=t -c user.email=t@example.invalid '
        'commit -q --allow-empty -m "made meanwhile"\n'))
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qam", "stub"],
                   cwd=stand_in, check=True)
    folder = tmp_path / "census"
    census.repeat(stand_in, 2, ["fake"], folder)
    data = json.loads((folder / "census.json").read_text())
    assert [r["commit"] for r in data["repetitions"]] == [data["commit"]] * 2
    head = subprocess.run(["git", "-C", str(stand_in), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert head.strip() != data["commit"]  # the commits were made, and left out


def test_a_run_made_otherwise_says_how_in_the_summary(stand_in, tmp_path):
    """A repetition recorded by hand (the README's commands on a fresh machine, without the census's
    band file) carries `how`, and the summary's line for it says so."""
    census.repeat(stand_in, 1, ["fake"], tmp_path / "census")
    path = tmp_path / "census" / "census.json"
    data = json.loads(path.read_text())
    assert "bands not recorded" not in census.merged_summary([tmp_path / "census"])
    data["how"] = "the README's commands on a fresh machine; bands not recorded"
    path.write_text(json.dumps(data))
    assert "; the README's commands on a fresh machine; bands not recorded" in census.merged_summary([tmp_path / "census"])


def test_a_part_line_gives_its_cpu_seconds_where_it_has_them():
    """The quiet phase's length is its parts' CPU over two cores: the census keeps each part's."""
    parts, failed = census.parse_log("=== labs: PASSED in 604s, CPU 1012s\n"
                                     "=== book: FAILED in 5s, CPU 4s (in the background, beside labs;"
                                     " collected after 983s) (log: test-output/book.log)\n"
                                     "=== lab01: PASSED in 163s\n"
                                     "FAILED t.py::test_x - boom\n")
    assert parts == {"labs": {"passed": True, "seconds": 604, "cpu": 1012},
                     "book": {"passed": False, "seconds": 5, "cpu": 4},
                     "lab01": {"passed": True, "seconds": 163, "cpu": None}}
    assert failed == ["t.py::test_x"]
