"""What a measurement can show, asserted as such (issue #32, items 3 and 4), on doctored copies
of committed runs: each old assertion fails where the measurement was right, the new one holds,
and the new one still fails a wrong model.

A timeline is a series of instantaneous samples: the smoke tests assert what a sampler can show
(a median, a share of samples), never a single sample's extreme.

Lab 05: a thread that has answered its request but not yet gone back to its pool is counted busy while
the next request already holds another: lab 05's `fixed-c=1` showed 2 busy lanes in one sample
on a fresh machine, and the old check (`max(busy) <= c`) failed 3 runs in 4 there. Here the
committed run is doctored both ways: one lingering thread must pass, a pool that really keeps
more lanes busy than cars must fail.

Lab 03: the perfect convoy is the worst case of lockstep, a floor under the step, not a ceiling.
"""

from __future__ import annotations

import copy

import pytest

from pul.testing import committed_results, smoke_module

LAB05 = smoke_module("labs/05-concurrency-highway/tests/test_lab05.py")
RUN = committed_results("05-concurrency-highway")


def old_assertion(results: dict) -> None:
    """What the lab 05 smoke test asserted before: no sample above c below the knee."""
    lanes = results["pools"]["pools"]["lanes"]["threads"]
    for v in LAB05.sweep(results, "fixed-"):
        if v["concurrency"] <= lanes // 2:
            assert max(x for x in v["timeline"]["pools"]["lanes"]["busy"] if x is not None) <= v["concurrency"]


def with_busy(results: dict, name: str, every: int, extra: int = 1) -> dict:
    """`name`'s lanes, with `extra` more busy in every `every`-th sample."""
    doctored = copy.deepcopy(results)
    step = next(v for v in doctored["variants"] if v["name"] == name)
    busy = step["timeline"]["pools"]["lanes"]["busy"]
    for i in range(1, len(busy), every):
        busy[i] = step["concurrency"] + extra
    return doctored


def test_the_committed_run_passes_both():
    LAB05.check_the_timeline_shows_the_lanes_full_only_past_the_knee(RUN)
    old_assertion(RUN)


@pytest.mark.parametrize("name", ["fixed-c=1", "fixed-c=4"])
def test_one_lingering_thread_in_a_sample_fails_the_old_check_only(name):
    # One sample in the whole run, as the fresh machine saw.
    doctored = with_busy(RUN, name, every=10_000)
    with pytest.raises(AssertionError):
        old_assertion(doctored)
    LAB05.check_the_timeline_shows_the_lanes_full_only_past_the_knee(doctored)


@pytest.mark.parametrize("name", ["fixed-c=1", "fixed-c=2", "fixed-c=4"])
@pytest.mark.parametrize("every, caught_by", [(1, "median busy lanes"), (4, "share of samples with more lanes busy than cars")])
def test_a_pool_that_keeps_more_lanes_busy_than_cars_fails(name, every, caught_by):
    # Every sample, or one in four: no thread lingers that long; the lanes do more than the cars ask.
    with pytest.raises(AssertionError, match=f"{name} {caught_by}"):
        LAB05.check_the_timeline_shows_the_lanes_full_only_past_the_knee(with_busy(RUN, name, every=every))


# -- lab 03: lockstep is a range, not a ceiling (issue #32, item 3) ---------------------------

LAB03 = smoke_module("labs/03-jdbc-dispatcher/tests/test_lab03.py")
RUN03 = committed_results("03-jdbc-dispatcher")


def old_lockstep_assertion(results: dict) -> None:
    """What the lab 03 smoke test asserted before: the convoy a ceiling, at most 1.20 above it."""
    for v in results["variants"]:
        if v["name"].startswith("lockstep-pool="):
            assert 0.85 <= v["measured_over_predicted"] <= 1.20, v["name"]


def lockstep_at(results: dict, of_the_convoy: float) -> dict:
    """The committed run, its lockstep step at `of_the_convoy` times its convoy floor."""
    doctored = copy.deepcopy(results)
    v = next(v for v in doctored["variants"] if v["name"].startswith("lockstep-pool="))
    v["requests_per_sec"] = v["predicted_requests_per_sec"] * of_the_convoy
    v["measured_over_predicted"] = round(of_the_convoy, 3)
    return doctored


def test_lab03_the_committed_lockstep_step_passes_both():
    LAB03.check_the_sweep(RUN03)
    old_lockstep_assertion(RUN03)


def test_lab03_a_loosened_convoy_fails_only_the_old_ceiling():
    # A fresh machine's lockstep-pool=16 landed at 1.258 of its convoy: queries drifted apart.
    doctored = lockstep_at(RUN03, 1.258)
    with pytest.raises(AssertionError):
        old_lockstep_assertion(doctored)
    LAB03.check_the_sweep(doctored)


@pytest.mark.parametrize("of_the_convoy, caught_by", [(0.80, "over the convoy floor"),
                                                      (1.60, "lockstep-pool=32 req/s over")])
def test_lab03_a_step_outside_the_range_fails(of_the_convoy, caught_by):
    # Below the floor: a model that misses a cost; at the smooth prediction: no lockstep cost at all.
    with pytest.raises(AssertionError, match=caught_by):
        LAB03.check_the_sweep(lockstep_at(RUN03, of_the_convoy))
