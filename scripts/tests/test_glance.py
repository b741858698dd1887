"""The "At a glance" page's worked numbers (pul.glance): one generated file per rule, each included
by the page, computed from the labs' runs, and still a sentence where a run lacks what it reads."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from pul import glance
from pul.lab import all_labs
from pul.testing import committed_results

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "book" / "src" / "at-a-glance.md"


@pytest.fixture(scope="module")
def committed() -> dict[str, glance.Run]:
    """Every lab's committed run (git's HEAD), as the rules read it."""
    return {number: glance.Run(number, committed_results(lab_dir.name), lab)
            for number, lab_dir, lab in all_labs() if lab is not None}


def variant(runs: dict, number: str, name: str) -> dict:
    return next(v for v in runs[number].data["variants"] if v["name"] == name)


def test_the_page_includes_every_rule_and_nothing_else():
    included = set(re.findall(r"\{\{#include (generated/at-a-glance-[\w-]+\.md)\}\}", PAGE.read_text()))
    assert included == {str(glance.path(name).relative_to("book/src")) for name in glance.RULES}


def test_every_file_is_written_from_the_working_trees_runs():
    # What `scripts/lab report --check` compares: the committed files against the runs.
    for path, text in glance.artifacts().items():
        assert path.read_text() == text, f"{path} is stale: run `scripts/lab report`"


def test_littles_law_and_the_pool_bound_on_lab_01(committed):
    texts = glance.render(committed)
    blocking = variant(committed, "01", "java-blocking")
    rate, latency = blocking["requests_per_sec"], blocking["mean_ms"]
    assert f"*L* = *λ* × *W* = {rate * latency / 1000:.1f} requests" in texts[glance.path("littles-law")]
    c, threads, service = blocking["concurrency"], blocking["pool_threads"], blocking["service_ms"]
    bound = min(c, threads) * 1000 / service
    assert (f"min({c}, {threads}) ÷ {service / 1000:.3f} s = {bound:,.0f} req/s"
            in texts[glance.path("pool-bound")])


def test_the_knee_is_the_lanes_of_lab_05s_road(committed):
    text = glance.render(committed)[glance.path("knee")]
    lanes = committed["05"].data["pools"]["pools"]["lanes"]["threads"]
    assert f"*c*\\* = *m* = {lanes}." in text and f"*m* = {lanes} lanes" in text


def test_the_jdbc_rules_and_the_convoy_read_lab_03(committed):
    texts = glance.render(committed)
    facts = committed["03"].facts()
    assert f"≈ {facts['corner']:.0f} connections" in texts[glance.path("jdbc-sizing")]
    step = variant(committed, "03", "lockstep-pool=32")
    floor = step["extra"]["convoy"]["floor_requests_per_sec"]
    assert f"= {floor:,.0f} req/s" in texts[glance.path("convoy")]
    assert f"{step['requests_per_sec'] / floor:.2f} times the floor" in texts[glance.path("convoy")]


def test_the_example_works_the_question_with_lab_01s_cpu_per_request(committed):
    text = glance.render(committed)[glance.path("example")]
    assert "min(100, 8) ÷ 0.050 s = 160 req/s" in text and "100 ÷ 160/s = 625 ms" in text
    assert "100 ÷ 0.050 s = 2,000 req/s" in text
    cpu_ms = variant(committed, "01", "java-offloaded")["calibration"]["server_cpu_ms"]
    assert f"= {2000 * cpu_ms / 1000 / 4:.0%} busy" in text


@pytest.mark.parametrize("cores, threads", [(1, 8), (4, 8), (16, 16), (100, 64)])
def test_the_default_dispatcher_has_max_8_cores_at_most_64(cores, threads):
    assert glance.default_dispatcher_threads(cores) == threads


def test_a_run_of_a_few_variants_still_gives_every_file_a_sentence(committed):
    # `scripts/lab run NN --variant NAME`: a reader's run without what a rule reads.
    bare = {number: glance.Run(number, {**copy.deepcopy(run.data), "variants": []}, run.lab)
            for number, run in committed.items()}
    texts = glance.render(bare)
    assert set(texts) == {glance.path(name) for name in glance.RULES}
    assert "Lab 01's run has no `java-blocking` to work this rule on" in texts[glance.path("pool-bound")]
    assert "`scripts/lab run 04` measures it" in texts[glance.path("filter-cost")]


def test_no_run_at_all_says_so():
    texts = glance.render({})
    assert texts[glance.path("convoy")] == "Lab 03 has no run to work this rule on: `scripts/lab run 03` makes one.\n"
    # The question's arithmetic needs no run: only its CPU bound does.
    assert "160 req/s" in texts[glance.path("example")] and "busy" not in texts[glance.path("example")]
