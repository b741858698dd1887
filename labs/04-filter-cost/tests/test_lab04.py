"""Lab 04, measured for real: plain Filters cost more than EssentialFilters, and more of them cost more.

A short run (three set-ups with eight filters or none, and the baseline twice,
each on a fresh server, a few seconds each) on a shared two-core machine: the
assertions check the direction and rough size of the effect the chapter teaches, with margins that survive noise. The driver
itself checks, after each step, that the server ran the set-up being measured
and that every filter in the chain saw every request.
"""

from __future__ import annotations

import statistics

import pytest

from pul.testing import by_name, run_lab, this_lab

# A measured run of the real lab (minutes): its lab's part of scripts/test runs it.
pytestmark = pytest.mark.slow

analyse = this_lab(__file__).module("report").analyse

CHAIN = 8
# The baseline's repeat runs right after it (in the order given), on a fresh server: this
# VM's speed drifts by up to a fifth over several minutes (CI: a slow spell made `none` 19% slower
# than `none-again` five minutes later, its server's CPU per request 19% higher), and the check is
# about the warm-up reaching the same steady state, not about the machine.
SMOKE = ("--chain-lengths", f"1,{CHAIN}", "--repeat", "3", "--seconds", "2",
         "--variant", "none", "--variant", "none-again", "--variant", "plain-x1", "--variant", f"plain-x{CHAIN}",
         "--variant", f"essential-x{CHAIN}",
         # No progress lines: the output is the table and the summary, which scripts/test shows
         # for a passing run too (-rP), to see the margins the bounds must survive.
         "--quiet")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return run_lab("04", *SMOKE, results_dir=tmp_path_factory.mktemp("lab04"))


def test_every_set_up_ran_with_both_tools_and_no_errors(smoke):
    variants = by_name(smoke)
    assert set(variants) == {"none", "plain-x1", f"plain-x{CHAIN}", f"essential-x{CHAIN}", "none-again"}
    for v in variants.values():
        runs = v["extra"]["runs"]
        assert sorted(r["tool"] for r in runs) == ["ab"] * 3 + ["wrk"] * 3, v["name"]
        assert all(r["failed"] == 0 and r["non_2xx"] == 0 and r["complete"] > 0 for r in runs), v["name"]
        # verify_step recorded the classes the server really chained.
        assert len(v["extra"]["filters"]) == v["extra"]["chain_length"]


def test_plain_filters_cost_more_than_essential_filters(smoke):
    analysis = analyse(smoke)
    plain, essential = analysis["cost"][f"plain-x{CHAIN}"], analysis["cost"][f"essential-x{CHAIN}"]
    # Throughput: eight Filters take clearly more time per request than eight EssentialFilters ...
    assert plain["us"] > essential["us"] + CHAIN * 1.0, analysis["cost"]  # at least 1 µs per filter
    tool = analysis["reference_tool"]
    assert (analysis["tools"][f"plain-x{CHAIN}"][tool]["median"]
            < 0.8 * analysis["tools"][f"essential-x{CHAIN}"][tool]["median"])
    # ... and so does the server's CPU time, which other programs on the machine cannot inflate.
    assert plain["cpu_cost_us"] > essential["cpu_cost_us"], analysis["cost"]


def test_cost_grows_with_the_number_of_filters(smoke):
    cost = analyse(smoke)["cost"]
    assert cost[f"plain-x{CHAIN}"]["us"] > cost["plain-x1"]["us"], cost
    assert cost[f"plain-x{CHAIN}"]["cpu_cost_us"] > cost["plain-x1"]["cpu_cost_us"], cost


def check_the_spread_is_that_of_the_repeated_runs(results: dict, repeat: int) -> None:
    """The min, median and max the report gives each set-up and tool are those of that tool's own
    repetitions; each repetition is a measurement of its own (its number, its raw output), and
    they differ, as separate runs on a real machine always do: equal rates would be one
    measurement counted several times."""
    analysis = analyse(results)
    for v in results["variants"]:
        for tool in ("ab", "wrk"):
            runs = [r for r in v["extra"]["runs"] if r["tool"] == tool]
            where = (v["name"], tool, [(r["repetition"], r["output"], r["requests_per_sec"]) for r in runs])
            assert sorted(r["repetition"] for r in runs) == list(range(1, repeat + 1)), where
            assert len({r["output"] for r in runs}) == repeat, where
            rates = [r["requests_per_sec"] for r in runs]
            assert len(set(rates)) > 1, where
            summary = analysis["tools"][v["name"]][tool]
            assert ((summary["runs"], summary["min"], summary["median"], summary["max"])
                    == (repeat, min(rates), statistics.median(rates), max(rates))), (where, summary)


def test_the_spread_of_repeated_runs_is_recorded(smoke):
    check_the_spread_is_that_of_the_repeated_runs(smoke, int(SMOKE[SMOKE.index("--repeat") + 1]))


def test_every_warm_up_waited_for_the_jit(smoke):
    # Each set-up warmed up until the JIT compiler went quiet: on one core that takes tens of
    # seconds, and the first rounds run at a small fraction of the final rate.
    for v in by_name(smoke).values():
        rounds = v["warmup"]["rounds"]
        assert v["warmup"]["settled"], (v["name"], rounds)
        assert rounds[-1]["jit_share"] <= 0.10, (v["name"], rounds)
        assert rounds[0]["requests_per_sec"] < 0.8 * rounds[-1]["requests_per_sec"], (v["name"], rounds)


def test_the_baseline_repeats_on_a_fresh_server(smoke):
    # The same set-up on two servers, one after the other: the warm-up must have reached the
    # same steady state both times. Both tools saturate the server (server CPU 90-95%, each
    # tool's own core a third busy), so their runs are samples of one throughput: the median of
    # all six is steadier than either tool's three. Two-second runs on this shared machine vary by about 10% within one
    # server; the chapter asks for 10% on a quiet machine, the test for 15%.
    def median_of_all(name):
        return statistics.median(r["requests_per_sec"] for r in by_name(smoke)[name]["extra"]["runs"])

    first, again = median_of_all("none"), median_of_all("none-again")
    assert abs(first - again) <= 0.15 * max(first, again), (first, again)
