"""A timeline is a series of instantaneous samples: the smoke tests assert what a sampler can
show (a median, a share of samples), never a single sample's extreme (issue #32, item 4).

A thread that has answered its request but not yet gone back to its pool is counted busy while
the next request already holds another: lab 05's `fixed-c=1` showed 2 busy lanes in one sample
on a fresh machine, and the old check (`max(busy) <= c`) failed 3 runs in 4 there. Here the
committed run is doctored both ways: one lingering thread must pass, a pool that really keeps
more lanes busy than cars must fail.
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
