"""Lab 06, measured for real on Java 21 and 25: what virtual threads change and what they do not.

One smoke run of every variant at the lab's defaults (a shorter run per step): the effects the
chapter teaches, each against the bound the model names.
"""

from __future__ import annotations

import pytest

from pul import model, timeline
from pul.testing import (by_name, check_at_the_core, check_the_model_predicted, decided_at_the_core, run_lab,
                         this_lab, within, within_model)

# A measured run of the real lab (minutes): its lab's part of scripts/test runs it.
pytestmark = pytest.mark.slow

# The default run, as the committed run has it (PUL_SMOKE_RESULTS checks that run the same way).
# `virtual-jdk21` warms the Java 21 server up before `synchronized-jdk21`, whose 33 requests a
# second never would. Alone on a cold server, a fresh machine's synchronized-jdk21 spent 20 ms of
# CPU per request (2 ms warm), its one carrier waiting for the core behind the JIT compiler: 0.84
# of its bound.
SMOKE = ("--seconds", "3")
LAB = this_lab(__file__)
# The model's band: a measurement this close to the bound it names (pul.model) confirms the model.
BAND = (0.85, 1.10)
# A step the server's core binds is calibrated on rounds of a second or so, and on a noisy CI
# machine its CPU per request moved between its calibration and its measured run by up to a
# fifth: pool-c=1000 measured 1.18 of its bound in a clean-clone CI run whose steadiness probe
# ran the core at 57-73% of its speed. A step the core binds is checked with its run's use of
# the core and its calibration's drift apart (in_band); one whose range the calibrated CPU per
# request makes without the core binding it must land within this wider band. A bound that were
# wrong (the threads' instead of the core's, a core too many) would miss it by far more.
CPU_STEP_BAND = (0.75, 1.25)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    # Its steps are held to steady cores' bounds: a run the host slowed is measured again, twice at
    # most (census 2026-12-07-lab06-convoy, rep 10: the probe at 62% of the core's fastest after
    # the run, jdbc-connections=16 at 0.70 of its 16 connections' bound, the core 62% busy;
    # 2026-12-07-lab06-unsteady: every failure a run whose one measurement again the probes saw
    # slowed too), and so is one with a step whose calibration never held (2026-12-07-lab06-range,
    # rep 1: per-request-pool-c=1000 at +51%, -33%, -35% of it, the core 82% busy, both probes
    # steady). The load generator's core is probed too: PostgreSQL runs there.
    return run_lab("06", *SMOKE, results_dir=tmp_path_factory.mktemp("lab06"), smoke=True,
                   again_if_slowed=2, unsteady_is_slowed=True)


def in_band(v: dict) -> None:
    """On its bound, or within its range (the lab's identical sleeps: pul.model.CONVOY). Where the
    server's core binds, the run's use of the core (for a convoy, its range worked at the run's
    own CPU per request) and its calibration's drift apart (pul.testing.check_at_the_core, at the
    step's re-measure limit); where the calibrated CPU per request makes a range at the core
    without binding it, the core's band."""
    if model.serving_drift(v) is not None:
        # The driver's default re-measure limit, a quarter: at c=1000 a calibration round (a burst
        # of a thousand connections) and the run differ by more than lab 05's echo steps do, and
        # not by chance. A census run served virtual-c=1000 at 0.427 ms against 0.532 ms
        # calibrated (-20%); with 15%, one of the two repetitions of census 2026-12-06-lab06-core
        # measured it three times, off by more than that each time (its part took 296 s, the
        # other's 245 s).
        _, misses, _ = check_at_the_core(v, model.REMEASURE_DRIFT, BAND)
        assert not misses, (misses, v)
        return
    within_model(v["name"], v, CPU_STEP_BAND if decided_at_the_core(v) else BAND)


def test_every_variant_ran_without_errors_on_its_runtime(smoke):
    for v in smoke["variants"]:
        assert v["failed"] == 0 and v["non_2xx"] == 0, v
        assert v["extra"]["java_version"] == (21 if v["runtime"] == "jdk21" else 25), v["name"]
    assert set(smoke["machine"]["runtimes"]) == {"jdk21", "jdk25"}


def test_the_default_dispatcher_is_bound_by_its_threads(smoke):
    v = by_name(smoke)["default"]
    assert v["bound_by"] == "threads" and v["pool_threads"] == smoke["pools"]["pools"]["default"]["threads"]
    in_band(v)


@pytest.mark.parametrize("name", ["pool", "virtual", "synchronized-jdk25", "virtual-jdk21"])
def test_blocking_off_the_dispatcher_reaches_the_bound_the_model_names(smoke, name):
    v = by_name(smoke).get(name)
    if v is None:
        pytest.skip(f"{name} is not in this run (PUL_SMOKE_RESULTS names a run without it)")
    # 50 in flight, each in service: their queueing for the core is in the prediction.
    assert v["extra"]["queueing"]["in_service"] == v["concurrency"], v["extra"]
    check_the_model_predicted(v)
    in_band(v)


def test_virtual_threads_need_no_pool_of_the_loads_size(smoke):
    v = by_name(smoke)
    within("virtual req/s over default's", v["virtual"]["requests_per_sec"] / v["default"]["requests_per_sec"], 3)
    pool = v["pool"]["requests_per_sec"]
    within("virtual req/s against pool's", v["virtual"]["requests_per_sec"], pool * (1 - 0.25), pool * (1 + 0.25))


def test_synchronized_pins_on_java_21_only(smoke):
    v = by_name(smoke)
    pinned = v["synchronized-jdk21"]
    assert pinned["bound_by"] == "threads" and pinned["extra"]["carriers"] == pinned["pool_threads"]
    in_band(pinned)
    within("synchronized-jdk25 req/s over synchronized-jdk21's",
           v["synchronized-jdk25"]["requests_per_sec"] / pinned["requests_per_sec"], 10)


@pytest.mark.parametrize("kind", ["virtual", "pool", "per-request-pool"])
def test_a_thousand_in_flight_reach_their_bound(smoke, kind):
    v = by_name(smoke).get(f"{kind}-c={smoke['params']['high_concurrency']}")
    if v is None:
        pytest.skip(f"{kind} is not in this run (PUL_SMOKE_RESULTS names a run without it)")
    in_band(v)


def test_virtual_threads_need_a_fraction_of_the_pools_threads(smoke):
    c = smoke["params"]["high_concurrency"]
    v = by_name(smoke)
    pool, virtual = v[f"pool-c={c}"], v[f"virtual-c={c}"]
    # The 100-thread pool's threads on top of the JVM's own; virtual threads add a few carriers.
    within(f"pool-c={c} peak threads minus virtual-c={c}'s",
           pool["footprint"]["threads_max"] - virtual["footprint"]["threads_max"], 0.9 * pool["pool_threads"])
    within(f"virtual-c={c} peak threads", virtual["footprint"]["threads_max"], high=c / 10)
    per_request = v.get(f"per-request-pool-c={c}")
    if per_request:
        # A thread per request in flight, and their stacks in resident memory: each thread touched
        # at least a page of its own (4 KiB), which the virtual-thread variant, counted earlier on
        # the same server, did not have. Census 2026-12-06-lab06-two-servers: 12-26 MB more for
        # ~1,000 threads (the ratio of the two, 0.971-0.987, said the same with a margin of 1-3%).
        # The sampler's peak counts a thread only while its request is on the server: the ones in
        # ab or in a socket queue at that instant have none, and the JVM's own threads add ~40.
        # Censuses 2026-12-07-lab06-convoy and -unsteady: 918-1,044 in twenty runs (984 failed a
        # bound of c itself, 918 kept 2% above 0.9 c on a slowed core), against virtual-c=1000's
        # peak of at most c / 10 above.
        within(f"per-request-pool-c={c} peak threads", per_request["footprint"]["threads_max"], 0.8 * c)
        added = per_request["footprint"]["threads_max"] - virtual["footprint"]["threads_max"]
        within(f"per-request-pool-c={c} resident MB over virtual-c={c}'s",
               per_request["footprint"]["rss_max_mb"] - virtual["footprint"]["rss_max_mb"], added * 4 / 1024)


def test_the_connections_bound_jdbc_on_virtual_threads(smoke):
    jdbc = sorted((v for v in smoke["variants"] if v["name"].startswith("jdbc-")),
                  key=lambda v: v["extra"]["connections"])
    assert len(jdbc) >= 2
    for v in jdbc:
        # 16 connections ask for about half of the core: on a slowed core (a CI run's steadiness
        # probe at 56-74%) the model named the server's CPU there, and it must meet that bound.
        assert v["bound_by"] in ("connections", "server CPU"), v["bounds"]
        in_band(v)
    small, large = jdbc[0], jdbc[-1]
    assert small["bound_by"] == "connections", small["bounds"]
    # More connections, more throughput: in proportion while they bind.
    ratio = large["requests_per_sec"] / small["requests_per_sec"]
    expected = large["extra"]["connections"] / small["extra"]["connections"]
    if large["bound_by"] == "connections":
        within(f"{large['name']} req/s over {small['name']}'s", ratio, expected * (1 - 0.2), expected * (1 + 0.2))
    else:
        within(f"{large['name']} req/s over {small['name']}'s (CPU bound)", ratio, expected / 2)


def median(values: list) -> float:
    known = sorted(x for x in values if x is not None)
    return known[len(known) // 2]


def test_the_timeline_shows_the_connections_held_at_their_limit(smoke):
    v = by_name(smoke)["jdbc-connections=4"]
    connections = v["timeline"]["pools"]["connections"]
    # Bound by connections: all 4 in use in most samples, the other virtual threads waiting. Most:
    # over half. Between two queries a connection waits for the next virtual thread to reach the
    # one core, longer on a slow one: 0.92-0.93 of the samples on an AMD EPYC, 0.71 on an Intel
    # Xeon whose run still met the connections' bound (0.98).
    within(f"{v['name']} share of samples with all 4 connections in use", timeline.share_at(connections["active"], 4),
           0.5, context=connections)
    within(f"{v['name']} median virtual threads awaiting a connection", median(connections["awaiting"]),
           v["concurrency"] / 2, context=connections)


def test_the_timeline_shows_the_pool_at_littles_law_and_virtual_threads_without_one(smoke):
    c = smoke["params"]["high_concurrency"]
    v = by_name(smoke)
    pool, virtual = v[f"pool-c={c}"], v[f"virtual-c={c}"]
    # Busy threads = rate x the time each holds one: at least the work time, at most the pool.
    busy = median(pool["timeline"]["pools"]["pool"]["busy"])
    within(f"pool-c={c} median busy threads", busy, 0.8 * pool["requests_per_sec"] * smoke["params"]["work_ms"] / 1000,
           pool["pool_threads"])
    # A thousand virtual threads in flight, and the JVM's platform threads stay few.
    threads = virtual["timeline"]["jvm_threads"]
    within(f"virtual-c={c} median JVM threads", median(threads), high=c / 10, context=threads)
    # A share, not the max: an instantaneous sample can catch a passing thread (counts are whole: > c / 10 is >= this).
    within(f"virtual-c={c} share of samples with more JVM threads than c / 10", timeline.share_at(threads, c // 10 + 1),
           high=0.10, context=threads)


def test_the_timeline_reads_the_virtual_thread_scheduler_on_java_24_and_later(smoke):
    # jdk.management.VirtualThreadSchedulerMXBean (Java 24 and later): the carriers busy (virtual
    # threads mounted), the virtual threads queued for one, the carriers started. On Java 21 the
    # JDK has no such interface, and the timeline has no such gauges.
    if "scheduler_gauges" not in smoke["pools"]:
        pytest.skip("a run made before the server had the scheduler's gauges (PUL_SMOKE_RESULTS names an older run)")
    c = smoke["params"]["high_concurrency"]
    v = by_name(smoke)
    virtual, older = v[f"virtual-c={c}"], v["virtual-jdk21"]
    assert "carriers" not in older["timeline"]["pools"], older["timeline"]["pools"].keys()
    carriers = virtual["timeline"]["pools"].get("carriers") or {}
    assert {"busy", "queued", "threads"} <= carriers.keys(), virtual["timeline"]["pools"].keys()
    # A carrier runs one virtual thread at a time: the mounted ones are at most the carriers started
    # (a share of samples, not every one: each read is the JDK's estimate).
    # No virtual thread here blocks where the scheduler compensates with a carrier more (its
    # Thread.sleep unmounts it): the carriers started stay within the parallelism /pools reports.
    within(f"virtual-c={c} median carriers started", median(carriers["threads"]), 1,
           smoke["pools"]["pools"]["carriers"]["threads"], context=carriers)
    over = [b for b, t in zip(carriers["busy"], carriers["threads"]) if b is not None and t is not None and b > t]
    within(f"virtual-c={c} share of samples with more virtual threads mounted than carriers",
           len(over) / len(carriers["busy"]), high=0.10, context=carriers)
