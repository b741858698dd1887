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


def report_of(number: str):
    """A lab's report.py, where its rules of the page live (its GLANCE)."""
    return next(lab for n, _, lab in all_labs() if n == number).module("report")


def variant(runs: dict, number: str, name: str) -> dict:
    return next(v for v in runs[number].data["variants"] if v["name"] == name)


NUMBER = r"(\d[\d,]*(?:\.\d+)?)"


def _n(text: str) -> float:
    return float(text.replace(",", ""))


def _same(shown: str, value: float) -> bool:
    """`shown` is `value` written to as many decimals as `shown` has."""
    digits = len(shown.split(".")[1]) if "." in shown else 0
    return shown.replace(",", "") == f"{value:.{digits}f}"


def arithmetic_slips(text: str) -> list[str]:
    """Every worked formula of the page's shapes whose result is not its shown inputs' arithmetic:
    A ÷ B ms|s = C req/s, min(...) ÷ B s = C req/s, A ÷ B/s = C ms|s, A/s × B s = C or ≈ C,
    A × B ms ÷ C ms ≈ D, n ÷ (w ms + n × D ms ÷ k) = C req/s."""
    slips = []
    for a, b, unit, c in re.findall(rf"(?<![\d.,(]){NUMBER} ÷ {NUMBER} (ms|s) = {NUMBER} req/s", text):
        if not _same(c, _n(a) / _n(b) * (1000 if unit == "ms" else 1)):
            slips.append(f"{a} ÷ {b} {unit} = {c} req/s")
    for args, b, c in re.findall(rf"min\(([\d, ]+)\) ÷ {NUMBER} s = {NUMBER} req/s", text):
        if not _same(c, min(_n(x) for x in args.split(", ")) / _n(b)):
            slips.append(f"min({args}) ÷ {b} s = {c} req/s")
    for a, b, c, unit in re.findall(rf"{NUMBER} ÷ {NUMBER}/s = {NUMBER} (ms|s)\b", text):
        if not _same(c, _n(a) / _n(b) * (1000 if unit == "ms" else 1)):
            slips.append(f"{a} ÷ {b}/s = {c} {unit}")
    for a, b, c in re.findall(rf"{NUMBER}/s × {NUMBER} s [=≈] {NUMBER}", text):
        if not _same(c, _n(a) * _n(b)):
            slips.append(f"{a}/s × {b} s = {c}")
    for a, b, c, d in re.findall(rf"{NUMBER} × {NUMBER} ms ÷ {NUMBER} ms ≈ {NUMBER}", text):
        if not _same(d, _n(a) * _n(b) / _n(c)):
            slips.append(f"{a} × {b} ms ÷ {c} ms ≈ {d}")
    for n, w, n2, cpu, k, c in re.findall(
            rf"{NUMBER} ÷ \({NUMBER} ms \+ {NUMBER} × {NUMBER} ms ÷ {NUMBER}\) = {NUMBER} req/s", text):
        if not _same(c, _n(n) * 1000 / (_n(w) + _n(n2) * _n(cpu) / _n(k))):
            slips.append(f"{n} ÷ ({w} ms + {n2} × {cpu} ms ÷ {k}) = {c} req/s")
    return slips


def test_the_page_includes_every_rule_and_nothing_else():
    included = set(re.findall(r"\{\{#include (generated/at-a-glance-[\w-]+\.md)\}\}", PAGE.read_text()))
    assert included == {str(glance.path(name).relative_to("book/src")) for name in glance.rules()}


def test_each_rule_lives_in_the_lab_whose_run_it_works_and_the_driver_names_no_lab():
    # scripts/pul is the generic driver (CONTRIBUTING.md): no variant of a lab is named there.
    found = glance.rules()
    assert found["knee"][0] == "05" and found["example"][0] == "01"
    source = (REPO / "scripts" / "pul" / "glance.py").read_text()
    names = {v["name"] for _, lab_dir, lab in all_labs() if lab is not None
             for v in (committed_results(lab_dir.name) or {}).get("variants", [])}
    # Names of more than one word (java-blocking, pool=32): a plain word such as "blocking" is prose.
    named = [n for n in names if re.search(r"[-=]", n) and re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", source)]
    assert not named


def test_two_labs_with_one_rule_name_is_an_error(monkeypatch):
    class Report:
        GLANCE = {"knee": lambda run: ""}

    class FakeLab:
        def module(self, name):
            return Report

    monkeypatch.setattr(glance, "all_labs", lambda: [("01", None, FakeLab()), ("02", None, FakeLab())])
    with pytest.raises(glance.LabError, match="labs 01 and 02 both have the rule 'knee'"):
        glance.rules()


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
    corner = facts["cores"] * round(facts["hold_ms"], 1) / round(facts["d_ms"], 2)
    assert f"≈ {corner:.0f} connections" in texts[glance.path("jdbc-sizing")]
    step = variant(committed, "03", "lockstep-pool=32")
    convoy = step["extra"]["convoy"]
    n, wait, cpu = convoy["in_service"], round(convoy["wait_ms"]), round(convoy["cpu_ms"], 2)
    floor = round(n * 1000 / (wait + n * cpu / convoy["cores"]))
    assert f"= {floor:,.0f} req/s" in texts[glance.path("convoy")]
    assert f"{round(step['requests_per_sec']) / floor:.2f} times the floor" in texts[glance.path("convoy")]


def test_the_convoys_requests_in_service_are_the_least_of_c_t_and_n(committed):
    # Lab 03's lockstep step of the default mode: fewer dispatcher threads than connections, so the
    # threads, not the connections, are the requests in service.
    step = variant(committed, "03", "lockstep-pool=32")
    c, extra = step["concurrency"], step["extra"]
    threads, connections = extra["dispatcher_size"], extra["connections"]
    n = min(c, threads, connections)
    assert n == extra["convoy"]["in_service"]
    assert (f"*n* = min(*c*, *T*, *N*) = min({c}, {threads}, {connections}) = {n} requests in service"
            in glance.render(committed)[glance.path("convoy")])


def test_every_worked_result_is_the_arithmetic_of_its_shown_inputs(committed):
    for path, text in glance.render(committed).items():
        assert not arithmetic_slips(text), f"{path}: {arithmetic_slips(text)}"


def test_the_slip_finder_finds_a_slip():
    assert arithmetic_slips("4 ÷ 0.377 ms = 10,621 req/s") == ["4 ÷ 0.377 ms = 10,621 req/s"]
    assert arithmetic_slips("4,451/s × 0.00055 s ≈ 2.5") == ["4,451/s × 0.00055 s = 2.5"]
    assert arithmetic_slips("4 ÷ 0.377 ms = 10,610 req/s and 50 ÷ 32.9/s = 1.52 s") == []


def _run_with(number: str, variants: list[dict], **data) -> glance.Run:
    lab = next(lab for n, _, lab in all_labs() if n == number)
    return glance.Run(number, {"variants": variants, **data}, lab)


def test_a_bound_is_worked_from_the_cpu_per_request_as_shown(committed):
    # The review's slips: D = 0.21997 ms shows as 0.220 ms, and 1 ÷ 0.220 ms is 4,545, not the
    # 4,546 that the unrounded D gives; lab 01's D = 0.3766 ms shows as 0.377 ms, and 4 cores
    # allow 10,610 req/s at that price, not 10,621.
    echo = copy.deepcopy(variant(committed, "05", "c=64"))
    echo["calibration"].update(server_cpu_ms=0.21997, jit_share=0.0)
    echo["bounds"]["server CPU"] = 4546.1
    steps = [copy.deepcopy(variant(committed, "05", "c=1")), echo]
    text = report_of("05").glance_utilisation_law(_run_with("05", steps, pools=committed["05"].data["pools"]))
    assert "1 ÷ 0.220 ms = 4,545 req/s" in text and not arithmetic_slips(text)
    offloaded = copy.deepcopy(variant(committed, "01", "java-offloaded"))
    offloaded["calibration"]["server_cpu_ms"] = 0.3766
    text = report_of("01").glance_example(_run_with("01", [offloaded]))
    assert "4 ÷ 0.377 ms = 10,610 req/s" in text and not arithmetic_slips(text)


@pytest.mark.parametrize("r1_ms, knee", [(0.5504, "2.4"), (0.554, "2.5")])
def test_the_echos_knee_is_worked_from_w1_and_the_plateau_as_shown(committed, r1_ms, knee):
    data = copy.deepcopy(committed["05"].data)
    first = next(v for v in data["variants"] if v["name"] == "c=1")
    first["mean_ms"] = r1_ms
    best = max((v for v in data["variants"] if v["name"].startswith("c=")), key=lambda v: v["requests_per_sec"])
    best["requests_per_sec"] = 4450.54
    text = report_of("05").glance_knee(glance.Run("05", data, committed["05"].lab))
    assert f"4,451/s × {r1_ms / 1000:.6f} s ≈ {knee}." in text and not arithmetic_slips(text)
    report = committed["05"].lab.module("report")
    assert f"≈ **{knee}**" in report.model_sentences(data)
    assert any(f"knee at c* = plateau x W1 = {knee}." in note for note in report.summary_notes(data))


def test_a_filter_slope_below_the_noise_is_not_resolved():
    # Chapter 4: a slope is resolved only when ten filters cost more than the noise.
    assert report_of("04").filter_slope(0.15, 12.9) == "not resolved (10 × its slope below the noise)"
    assert report_of("04").filter_slope(-0.4, 12.9).startswith("not resolved")
    assert report_of("04").filter_slope(7.7, 12.9) == "7.7 µs"
    assert report_of("04").filter_slope(0.15, None) == "0.15 µs"


def test_lab_04s_essential_filters_are_not_resolved_and_its_filters_are(committed):
    facts = committed["04"].facts()
    text = glance.render(committed)[glance.path("filter-cost")]
    for name, label in (("scala_essential_filter_us", "Scala `EssentialFilter`"),
                        ("java_essential_filter_us", "Java `EssentialFilter`"),
                        ("scala_filter_us", "Scala `Filter`"), ("java_filter_us", "Java `Filter`")):
        resolved = 10 * facts[name] >= facts["noise_us"]
        assert (f"a {label} not resolved" in text) == (not resolved), label


def test_the_pinned_rows_latency_is_c_over_lambda_and_says_why_abs_mean_is_short(committed):
    pinned = variant(committed, "06", "synchronized-jdk21")
    rate = round(pinned["requests_per_sec"], 1)
    text = glance.render(committed)[glance.path("virtual-threads")]
    assert f"*W* = *c* ÷ *λ* = {pinned['concurrency']} ÷ {rate:,.1f}/s = {pinned['concurrency'] / rate:.2f} s" in text
    assert "is shorter because it times only the requests that finished" in text
    # A run whose ab mean agrees with Little's law needs no excuse for it.
    agreeing = {**pinned, "mean_ms": 1000 * pinned["concurrency"] / pinned["requests_per_sec"]}
    text = report_of("06").pinned_latency(agreeing)
    assert "shorter" not in text and "`ab` timed a mean of" in text


def test_the_example_works_the_question_with_lab_01s_cpu_per_request(committed):
    text = glance.render(committed)[glance.path("example")]
    assert "min(100, 8) ÷ 0.050 s = 160 req/s" in text and "100 ÷ 160/s = 625 ms" in text
    assert "100 ÷ 0.050 s = 2,000 req/s" in text
    cpu_ms = round(variant(committed, "01", "java-offloaded")["calibration"]["server_cpu_ms"], 3)
    assert f"= {2000 * cpu_ms / 1000 / 4:.0%} busy" in text


def test_the_example_bounds_a_jdbc_call_by_plays_default_connections():
    # play-jdbc's reference.conf: hikaricp.maximumPoolSize = 10 (Play 2.9.11 and 3.0.9).
    assert glance.PLAY_MAX_POOL_SIZE == 10
    text = glance.render({})[glance.path("example")]
    assert "min(100, 100, 10) ÷ 0.050 s = 200 req/s" in text and "100 ÷ 200/s = 500 ms" in text


@pytest.mark.parametrize("cores, threads", [(1, 8), (4, 8), (16, 16), (100, 64)])
def test_the_default_dispatcher_has_max_8_cores_at_most_64(cores, threads):
    assert glance.default_dispatcher_threads(cores) == threads


def test_a_run_of_a_few_variants_still_gives_every_file_a_sentence(committed):
    # `scripts/lab run NN --variant NAME`: a reader's run without what a rule reads.
    bare = {number: glance.Run(number, {**copy.deepcopy(run.data), "variants": []}, run.lab)
            for number, run in committed.items()}
    texts = glance.render(bare)
    assert set(texts) == {glance.path(name) for name in glance.rules()}
    assert "Lab 01's run has no `java-blocking` to work this rule on" in texts[glance.path("pool-bound")]
    assert "`scripts/lab run 04` measures it" in texts[glance.path("filter-cost")]


def test_no_run_at_all_says_so():
    texts = glance.render({})
    assert texts[glance.path("convoy")] == "Lab 03 has no run to work this rule on: `scripts/lab run 03` makes one.\n"
    # The question's arithmetic needs no run: only its CPU bound does.
    assert "160 req/s" in texts[glance.path("example")] and "busy" not in texts[glance.path("example")]
