"""Lab 02, measured for real: each way of running the work is bound by the pool it really uses.

The smoke run uses 100 ms of work instead of the chapter's 30 ms: at 30 ms the
variants that do not block Play's pool need more CPU than the server's single
core has (the chapter shows this), while at 100 ms every variant is bound by
threads (or by requests in flight) alone, which is what Little's law predicts.
"""

from __future__ import annotations

import pytest

from pul import timeline

from pul.testing import MODEL_BAND, by_name, check_the_model_predicted, run_lab, this_lab, within, within_model

# A measured run of the real lab (minutes): its lab's part of scripts/test runs it.
pytestmark = pytest.mark.slow

JVM_DEFAULT = this_lab(__file__).module("driver").JVM_DEFAULT
MAIN_VARIANTS = ("blocking", "commonpool", "default-ec", "custom-ec", "ws")
# 1,200 requests a variant, or 20 seconds, whichever comes first. The common pool serves 30 a
# second with 100 ms of work: its 600 or so in 20 s keep it from the short run that once measured
# 0.64 of its bound, its requests waiting up to seconds each in a pool that is no fair queue. The
# variants that free Play's pool serve up to 500 a second: 600 requests (12 per connection) held
# them to 0.82-0.85 of that bound on a fresh CI machine, mean latency 106-110 ms for 100 ms of
# work, in runs of 1.4 s whose start (50 requests at once on the server's one core) and end (the
# last connections finishing alone) weigh twice what they do in 24 per connection.
SMOKE = ("--work-ms", "100", "--concurrency", "50", "--requests", "1200", "--seconds", "20",
         *(arg for name in MAIN_VARIANTS for arg in ("--variant", name)))
# Where a warm-up did not settle: near the bound, no closer than one of lab 05's echo steps.
UNSETTLED = (0.75, 1.25)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return run_lab("02", *SMOKE, results_dir=tmp_path_factory.mktemp("lab02"), smoke=True)


def test_every_variant_ran_without_errors(smoke):
    variants = by_name(smoke)
    assert set(variants) >= set(MAIN_VARIANTS)
    for v in variants.values():
        assert v["failed"] == 0 and v["non_2xx"] == 0, v


def test_predictions_come_from_the_pools_the_server_reported(smoke):
    pools, v = smoke["pools"]["pools"], by_name(smoke)
    assert v["blocking"]["pool_threads"] == v["default-ec"]["pool_threads"] == pools["default"]["threads"]
    assert v["custom-ec"]["pool_threads"] == pools["offload"]["threads"]
    # The driver sized the common pool explicitly; the server must say it took effect,
    # and that CompletableFuture really used it.
    assert pools["commonpool"]["parallelism"] == smoke["params"]["common_parallelism"]
    assert pools["commonpool"]["executor"] == "ForkJoinPool.commonPool()"
    assert v["commonpool"]["pool_threads"] == pools["commonpool"]["threads"]


@pytest.mark.parametrize("name", ["blocking", "default-ec"])
def test_blocking_play_pool_is_bound_by_the_default_dispatcher(smoke, name):
    v = by_name(smoke)[name]
    assert v["bound_by"] == "threads", v["bounds"]
    within_model(name, v)


def test_commonpool_collapses_to_its_parallelism(smoke):
    v = by_name(smoke)["commonpool"]
    assert v["bound_by"] == "threads", v["bounds"]
    within_model("commonpool", v)


@pytest.mark.parametrize("name, pool", [("default-ec", "default"), ("commonpool", "commonpool")])
def test_the_timeline_shows_the_bound_pool_full(smoke, name, pool):
    """The pool the model names holds every thread busy in most samples, the work queued behind
    it; the offload pool, free of that bound, never fills."""
    v = by_name(smoke)[name]
    found = v["timeline"]["pools"][pool]
    within(f"{name} share of samples with every {pool} thread busy",
           timeline.share_at(found["busy"], v["pool_threads"]), 0.8, context=found)
    within(f"{name} share of samples with work queued on {pool}", timeline.share_at(found["queued"], 1), 0.5,
           context=found)
    custom = by_name(smoke)["custom-ec"]
    # Exact, not a band: with fewer requests in flight than the pool has threads, no sample can see
    # all of them busy.
    assert timeline.share_at(custom["timeline"]["pools"]["offload"]["busy"], custom["pool_threads"]) == 0


@pytest.mark.parametrize("name", ["custom-ec", "ws"])
def test_variants_that_free_plays_pool_reach_the_bound_the_model_names(smoke, name):
    v = by_name(smoke)[name]
    # No pool holds them back: the requests in flight bind, or the core if it runs out first
    # (ws makes two HTTP exchanges per request on the server's one core). Stuck on a small
    # pool, either would land far lower, and the model would name threads.
    assert min(v["bounds"], key=v["bounds"].get) in ("requests in flight", "server CPU"), v["bounds"]
    assert v["extra"]["queueing"]["in_service"] == v["concurrency"], v["extra"]
    check_the_model_predicted(v)
    # Fifty identical sleeps convoy at the server's core (pul.model.CONVOY): a range, from the
    # perfect convoy, every request back at once, up to the smooth mean-value prediction. On the
    # machines the bands were first sized on, custom-ec ran at 0.88-0.92 of the smooth end; on a
    # fresh one, 0.84, its offload threads swinging between 50 and a handful busy.
    # The range keeps the name of what binds (the requests in flight, or the core where ws's two
    # exchanges per request cost more).
    assert v["bound_by"] == min(v["bounds"], key=v["bounds"].get), (v["bounds"], v["bound_by"])
    assert "in lockstep" in v["prediction"], v["prediction"]
    upper = v["predicted_upper_requests_per_sec"]
    assert upper == pytest.approx(v["extra"]["convoy"]["smooth_requests_per_sec"]), v["extra"]
    within_model(name, v)


def test_the_jvm_sized_common_pool_meets_the_bound_the_model_names(smoke):
    # A thread per request, on a server of its own: no pool holds it back, so the requests in
    # flight bind, or the core (a new thread per request costs CPU). Only a default run has this
    # step (PUL_SMOKE_RESULTS): the smoke run leaves out its second server.
    v = by_name(smoke).get(JVM_DEFAULT)
    if v is None:
        pytest.skip(f"this run has no {JVM_DEFAULT} step")
    assert v["extra"]["completable_future_executor"] != "ForkJoinPool.commonPool()", v["extra"]
    assert v["bound_by"] in ("requests in flight", "server CPU"), v["bounds"]
    # Its fresh server's compiler has the longest tail of any set-up here: where its warm-up did
    # not settle, its calibration was not the steady state, and the table's note says so with what
    # the run measured (0.84, 0.84 and 1.03 in three runs, its compiler 10-15% busy when pinned).
    # Then it must still land near the bound, as lab 05 holds one echo step to.
    settled = v["warmup"]["settled"]
    low, high = MODEL_BAND if settled else UNSETTLED
    within_model(JVM_DEFAULT + ("" if settled else " (warm-up unsettled)"), v, (low, high))


def test_ordering(smoke):
    rate = {name: v["requests_per_sec"] for name, v in by_name(smoke).items()}
    # 3 common-pool threads < 8 default-dispatcher threads < 50 requests in flight.
    within("commonpool req/s over the slower of blocking and default-ec",
           rate["commonpool"] / min(rate["blocking"], rate["default-ec"]), high=0.6, context=rate)
    within("the slower of custom-ec and ws: req/s over the faster of blocking and default-ec",
           min(rate["custom-ec"], rate["ws"]) / max(rate["blocking"], rate["default-ec"]), 3, context=rate)
    # Async in form only: default-ec is no faster than blocking in the action.
    within("default-ec req/s against blocking's", rate["default-ec"], rate["blocking"] * (1 - 0.2),
           rate["blocking"] * (1 + 0.2), context=rate)
