"""Fast tests of lab 02's report: the generated sentences the chapter leans on."""

from __future__ import annotations

from pul.testing import committed_results, this_lab

LAB = this_lab(__file__)
REPORT = LAB.module("report")
JVM_DEFAULT = LAB.module("driver").JVM_DEFAULT


def variant(name, rps, cpu_ms, jit_share):
    return {"name": name, "requests_per_sec": rps, "server_cpu_ms_per_request": cpu_ms, "jit_share": jit_share}


def test_the_cpu_sentence_takes_the_compilers_part_out():
    # 0.2 of a core compiling at 1,000 req/s is 0.2 ms a request.
    sentence = REPORT.cpu_sentence(variant(JVM_DEFAULT, 1000, 1.0, 0.2), variant("custom-ec", 1600, 0.4, 0.0))
    assert sentence == (f"{JVM_DEFAULT}: the server spent 1.00 ms of CPU per request, against 0.40 ms for custom-ec "
                        "(2.5x); the JIT compiler's threads took 0.20 and 0.00 ms of that, which leaves 0.80 and "
                        "0.40 ms (2.0x).")


def test_the_cpu_sentence_needs_both_variants():
    assert REPORT.cpu_sentence(None, variant("custom-ec", 1600, 0.4, 0.0)) is None
    assert REPORT.cpu_sentence(variant(JVM_DEFAULT, 1000, 1.0, None), variant("custom-ec", 1600, 0.4, 0.0)).endswith(
        "(2.5x).")


def test_the_committed_summary_compares_the_thread_per_task_cpu_with_custom_ec():
    results = committed_results(LAB.dir.name)
    assert any(n.startswith(f"{JVM_DEFAULT}: the server spent") for n in REPORT.summary_notes(results))


def test_facts_count_the_variants_with_a_predicted_range():
    results = {"variants": [{"name": "blocking", "predicted_upper_requests_per_sec": None},
                            {"name": "custom-ec", "predicted_upper_requests_per_sec": 1613.1}]}
    assert REPORT.facts(results, LAB)["predicted_ranges"] == 1


def test_timeline_facts_give_each_pools_median_and_most_per_variant():
    timeline = {"pools": {"commonpool": {"busy": [3, 3, 2, None], "queued": [47, 40, 47]}}}
    facts = REPORT.timeline_facts({"variants": [{"name": "commonpool", "timeline": timeline}, {"name": "ws"}]})
    assert facts == {"commonpool_busy_median_commonpool": 3, "commonpool_busy_max_commonpool": 3,
                     "commonpool_queued_median_commonpool": 47, "commonpool_queued_max_commonpool": 47}


def test_the_committed_profile_gives_the_facts_the_chapter_reads():
    facts = REPORT.facts(committed_results(LAB.dir.name), LAB)
    for setup in ("commonpool_jvm_default", "custom_ec"):
        for name in ("requests_per_sec", "cpu_ms", "jit_share", "samples", "task", "thread_start",
                     "thread_per_task", "default_dispatcher"):
            assert f"profile_{name}_{setup}" in facts
