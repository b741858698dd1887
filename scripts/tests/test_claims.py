"""The prose's measured claims (pul.claims): read, evaluated against a run, and failing
`scripts/lab report --check` when a run makes one false."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import pytest

from pul import claims, cli
from pul.claims import Claim, ClaimError
from pul.lab import all_labs
from pul.testing import committed_results

REPO = Path(__file__).resolve().parents[2]


def run(*variants: dict, **params) -> dict:
    return {"variants": list(variants), "params": params}


def variant(name: str, **fields) -> dict:
    return {"name": name, **fields}


RUN = run(variant("pool=16", requests_per_sec=160.0, bound_by="threads", bounds={"threads": 171.2, "server CPU": 900},
                  probe={"p50_ms": 4.5}),
          variant("commonpool-jvm-default", requests_per_sec=1300.0, bound_by="requests in flight"),
          work_ms=100)


def verdicts(text: str, runs=None, committed=True, monkeypatch=None, book=None):
    if monkeypatch is not None:
        monkeypatch.setattr(claims, "committed", lambda _path: committed)
    claim = Claim(REPO / "book" / "src" / "x.md", 3, text)
    return claims.check(runs or {"03": (Path("/nonexistent/latest.json"), RUN)}, [claim])


@pytest.mark.parametrize("text", [
    'lab03.pool_16.bound_by == "threads"',
    "lab03.pool_16.requests_per_sec < lab03.commonpool_jvm_default.requests_per_sec",
    "0.9 <= lab03.pool_16.requests_per_sec / lab03.pool_16.bounds.threads <= 1.0",
    "lab03.pool_16.bounds.threads < lab03.pool_16.bounds.server_cpu and lab03.params.work_ms == 100",
    "max(lab03.pool_16.probe.p50_ms, 1) < 5",
])
def test_a_claim_the_run_bears_out_holds(text, monkeypatch):
    (verdict,) = verdicts(text, monkeypatch=monkeypatch)
    assert verdict.holds and verdict.binding


def test_a_false_claim_shows_what_the_run_has(monkeypatch):
    (verdict,) = verdicts('lab03.commonpool_jvm_default.bound_by == "server CPU"', monkeypatch=monkeypatch)
    assert not verdict.holds
    assert verdict.shown == ["lab03.commonpool_jvm_default.bound_by = 'requests in flight'"]


def test_a_chain_fails_where_any_link_does(monkeypatch):
    (verdict,) = verdicts("1 < lab03.pool_16.requests_per_sec < 100", monkeypatch=monkeypatch)
    assert not verdict.holds


@pytest.mark.parametrize("text, says", [
    ("lab03.pool_16.rate > 1", r"lab03\.pool_16 has no 'rate' \(it has: .*requests_per_sec"),
    ("lab03.pool_17.requests_per_sec > 1", "lab03 has no 'pool_17'"),
    ("lab05.c_1.requests_per_sec > 1", "lab05 has no committed run"),
    ("lab03.pool_16.bound_by > 1", "compares 'threads' with 1"),
    ("lab03.pool_16 > 1", "compares"),
])
def test_a_claim_naming_what_the_run_lacks_is_an_error(text, says, monkeypatch):
    with pytest.raises(ClaimError, match=says):
        verdicts(text, monkeypatch=monkeypatch)


@pytest.mark.parametrize("text, says", [
    ("lab03.pool_16.requests_per_sec >", "cannot read"),
    ("lab03.pool_16.requests_per_sec", "comparisons joined by `and`"),
    ("lab03.pool_16.requests_per_sec > 1 or True", "comparisons joined by `and`"),
    ("__import__('os').system('true') == 0", "may only call"),
    ("lab03.pool_16.requests_per_sec[0] > 1", "Subscript"),
    ("1 < 2", "names no lab"),
])
def test_an_unreadable_or_unsafe_claim_is_an_error(text, says, monkeypatch):
    with pytest.raises(ClaimError, match=says):
        verdicts(text, monkeypatch=monkeypatch)


def test_a_claim_reads_what_the_labs_report_computes(monkeypatch):
    monkeypatch.setattr(claims, "committed", lambda _path: True)
    claim = Claim(REPO / "book" / "src" / "x.md", 3, "lab03.facts.plateau_pool == 32")
    (verdict,) = claims.check({"03": (Path("/nonexistent"), RUN, {"plateau_pool": 32})}, [claim])
    assert verdict.holds
    with pytest.raises(ClaimError, match=r"lab03\.facts has no 'plateau_pool' \(it has: none\)"):
        claims.check({"03": (Path("/nonexistent"), RUN)}, [claim])


def test_a_claim_reads_the_machine_the_run_was_made_on(monkeypatch):
    monkeypatch.setattr(claims, "committed", lambda _path: True)
    made_on = {**RUN, "machine": {"load_average_at_start": 0.4, "jdk": "Debian 17.0.15",
                                  "steadiness": {"after": {"least_share": 0.9}}}}
    claim = Claim(REPO / "book" / "src" / "x.md", 3,
                  'lab03.machine.load_average_at_start < 1 and lab03.machine.jdk == "Debian 17.0.15" '
                  "and lab03.machine.steadiness.after.least_share >= 0.9")
    (verdict,) = claims.check({"03": (Path("/nonexistent"), made_on)}, [claim])
    assert verdict.holds
    assert "lab03.machine.steadiness.after.least_share = 0.9" in verdict.shown
    with pytest.raises(ClaimError, match=r"lab03\.machine has no 'cores' \(it has: jdk, load_average_at_start"):
        claims.check({"03": (Path("/nonexistent"), made_on)},
                     [Claim(REPO / "book" / "src" / "x.md", 3, "lab03.machine.cores == 2")])


def test_a_false_claim_on_a_readers_own_run_is_a_note_not_a_failure(monkeypatch):
    (verdict,) = verdicts('lab03.pool_16.bound_by == "connections"', committed=False, monkeypatch=monkeypatch)
    assert not verdict.holds and not verdict.binding


def test_a_claim_naming_what_a_readers_own_run_lacks_is_a_note_and_an_error_on_the_committed_run(monkeypatch):
    """`scripts/lab run 01 --variant java-blocking`, then the suite: the book part must not fail
    on the claims about the variants that run left out."""
    text = "lab03.pool_64.requests_per_sec > lab03.pool_16.requests_per_sec"
    (verdict,) = verdicts(text, committed=False, monkeypatch=monkeypatch)
    assert not verdict.holds and not verdict.binding
    assert "lab03 has no 'pool_64'" in verdict.shown[0]
    with pytest.raises(ClaimError, match="lab03 has no 'pool_64'"):
        verdicts(text, committed=True, monkeypatch=monkeypatch)


def test_claims_are_found_with_their_line_even_across_lines(tmp_path):
    (tmp_path / "a.md").write_text("Text.\n<!-- claim: lab03.pool_16.requests_per_sec\n  > 1 -->\nMore.\n")
    (found,) = claims.find(tmp_path)
    assert (found.line, found.text) == (2, "lab03.pool_16.requests_per_sec > 1")


def _book_runs() -> dict:
    """Each lab's run as committed (git's HEAD): a student's own run must not move this test."""
    runs = {}
    for _, _, lab in all_labs():
        if lab and (lab.dir / "results" / "latest.json").exists():
            data = committed_results(lab.dir.name)
            runs[lab.number] = (lab.dir / "results" / "latest.json", data, lab.facts(data))
    return runs


def test_the_book_makes_claims_and_every_one_holds_for_the_committed_runs():
    found = claims.find()
    assert len(found) >= 5
    false = [v.claim.where() for v in claims.check(_book_runs(), found) if not v.holds]
    assert not false, f"false claims: {false}"


def test_a_doctored_run_that_flips_a_claim_fails_report_check(tmp_path, monkeypatch, capsys):
    # The committed lab 02 run with one variant's bound moved: the chapter's claim about it turns false.
    doctored = copy.deepcopy(committed_results("02-java-async"))
    for v in doctored["variants"]:
        if v["name"] == "commonpool-jvm-default":
            v["bound_by"] = "server CPU"
    path = REPO / "labs" / "02-java-async" / "results" / "latest.json"
    # What lab 02's report computes of the doctored run: the chapter's other claims read it too.
    computed = next(lab for number, _, lab in all_labs() if number == "02").facts(doctored)
    monkeypatch.setattr(claims, "committed_runs", lambda _labs: {"02": (path, doctored, computed)})
    monkeypatch.setattr(claims, "committed", lambda _path: True)
    monkeypatch.setattr(cli.report, "stale", lambda _lab: [])
    assert cli.main(["report", "--check", "02"]) == 1
    said = capsys.readouterr().err
    assert "false claim: book/src/ch02-java-async.md:" in said
    assert "lab02.commonpool_jvm_default.bound_by = 'server CPU'" in said
    # The same doctored run as a reader's own (git: the file differs from HEAD's): a note only.
    monkeypatch.setattr(claims, "committed", lambda _path: False)
    assert cli.main(["report", "--check", "02"]) == 0
    assert "note: book/src/ch02-java-async.md:" in capsys.readouterr().err


def test_a_labs_results_are_its_own_once_any_file_in_them_differs_from_git(tmp_path):
    # Lab 04's report reads its --thorough run beside latest.json: a reader's own run of either makes
    # the lab's claims notes.
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    results = tmp_path / "results"
    (results / "thorough").mkdir(parents=True)
    (results / "latest.json").write_text("{}")
    (results / "thorough" / "latest.json").write_text("{}")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "runs"], check=True)
    assert claims.committed(results) and claims.committed(results / "latest.json")
    (results / "thorough" / "latest.json").write_text('{"mine": 1}')
    assert not claims.committed(results)
    assert claims.committed(results / "latest.json")
    # Outside a git checkout: the files are all there is.
    outside = tmp_path.parent / f"{tmp_path.name}-copy"
    outside.mkdir()
    assert claims.committed(outside)
