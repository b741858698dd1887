"""Lab 03's prediction: the bounds, and the queueing curve between them (no server needed)."""

import pytest

from pul.testing import this_lab

LAB = this_lab(__file__)
from pul.model import mean_value_analysis  # noqa: E402  (what the driver and report use)
REPORT = LAB.module("report")


def test_one_connection_is_never_queued():
    # 84 ms per request, nobody to queue behind: 1000 / 84.
    assert mean_value_analysis(1, busy_ms=84.0, cpu_ms=4.0) == pytest.approx(1000 / 84.0)


@pytest.mark.parametrize("connections", [2, 4, 8, 16, 21, 32, 64])
def test_never_above_either_bound(connections):
    rate = mean_value_analysis(connections, busy_ms=84.0, cpu_ms=4.0)
    assert rate <= connections * 1000 / 84.0 + 1e-9
    assert rate <= 1000 / 4.0 + 1e-9


def test_rises_with_the_pool_then_flattens_at_the_cpu_limit():
    rates = [mean_value_analysis(n, busy_ms=84.0, cpu_ms=4.0) for n in (2, 4, 8, 16, 32, 64, 128)]
    assert rates == sorted(rates)
    # Well below the knee (84 / 4 = 21 connections) it follows Little's law...
    assert rates[1] == pytest.approx(4 * 1000 / 84.0, rel=0.02)
    # ...at the knee queueing costs some 15-20%, and far beyond it the CPU limit is reached.
    at_knee = mean_value_analysis(21, busy_ms=84.0, cpu_ms=4.0)
    assert 0.75 * 250 < at_knee < 0.9 * 250
    assert rates[-1] == pytest.approx(250, rel=0.001)


def test_two_cores_double_the_ceiling():
    assert mean_value_analysis(200, busy_ms=84.0, cpu_ms=4.0, cores=2) == pytest.approx(500, rel=0.01)
    # and give the same answer as one core while nobody queues
    assert mean_value_analysis(1, busy_ms=84.0, cpu_ms=4.0, cores=2) == pytest.approx(1000 / 84.0)


def _params(*args):
    import argparse

    parser = argparse.ArgumentParser()
    LAB.add_arguments(parser)
    return LAB.params(parser.parse_args(list(args)))


def test_zero_skips_the_lockstep_step_and_means_no_wait():
    params = _params("--lockstep-pool", "0", "--wide-jitter-pool", "0", "--query-ms", "0")
    assert params["lockstep_pool"] == 0 and params["query_ms"] == 0
    assert [s.name for s in LAB.steps({**params, "sweep": "only"})] == [
        f"pool={n}" for n in (2, 4, 8, 16, 32, 64)]


def test_thorough_is_the_full_run_unless_told_otherwise():
    thorough = _params("--thorough")
    assert thorough["mode"] == "thorough" and thorough["requests"] == 1500
    assert [s.name for s in LAB.steps({**thorough, "sweep": "only"}) if s.name.startswith("pool=")] == [
        f"pool={n}" for n in (2, 4, 8, 16, 32, 48, 64)]
    assert _params("--thorough", "--pools", "4,16", "--requests", "300")["pools"] == "4,16"
    assert _params("--thorough", "--requests", "300")["requests"] == 300
    default = _params()
    assert default["mode"] == "default" and default["requests"] == LAB.defaults["requests"]
    assert default["pools"] == LAB.defaults["pools"]


def test_thorough_starts_a_server_per_set_up_and_the_default_two():
    from pul.run import group_by_server

    thorough = LAB.steps(_params("--thorough"))
    # default- and database-dispatcher share theirs; pool=64 does not follow oversized-connections.
    assert len(group_by_server(thorough)) == len(thorough) - 1
    groups = group_by_server(LAB.steps(_params()))
    assert [[s.name for s in group] for _, group in groups] == [
        ["default-dispatcher", "database-dispatcher", "oversized-dispatcher"],
        ["oversized-connections", "pool=2", "pool=4", "pool=8", "pool=16", "pool=32", "pool=64",
         "lockstep-pool=32", "wide-jitter-pool=64"]]


@pytest.mark.parametrize("args", [(), ("--pools", "2,8", "--lockstep-pool", "48", "--oversized", "40"),
                                  ("--sweep",), ("--no-sweep",)])
def test_the_default_mode_has_the_bounds_of_thorough(args):
    """Each step's dispatcher exists on its server with the step's threads, and the queries a
    step can have in flight, min(threads, connections), are the same as with --thorough."""
    thorough = {s.name: s for s in LAB.steps(_params("--thorough", "--pools", LAB.defaults["pools"], *args))}
    default = LAB.steps(_params(*args))
    assert sorted(s.name for s in default) == sorted(thorough)
    for step in default:
        sizes = [int(n) for n in step.setup["lab.dispatcher-sizes"].split(",") if n]
        connections = int(step.setup["lab.pool-size"])
        old = thorough[step.name]
        if step.pool.startswith("database-"):
            threads = int(step.pool.removeprefix("database-"))
            assert threads in sizes and step.endpoint == "sized"
            assert step.extra["bench_env"]["THREADS"] == str(threads)
        else:
            assert step.pool == old.pool and step.endpoint == old.endpoint
            threads = int(step.setup["lab.dispatcher-size"]) if step.pool == "database" else None
        old_connections = int(old.setup["lab.pool-size"])
        if threads is None:  # the default dispatcher: the same connections
            assert connections == old_connections
        else:
            assert threads == int(old.setup["lab.dispatcher-size"])
            assert min(threads, connections) == min(threads, old_connections)
        assert step.extra.get("query_jitter") == old.extra.get("query_jitter")
        assert step.extra["dispatcher_size"] == old.extra["dispatcher_size"] or threads is None


@pytest.mark.parametrize("mode", [(), ("--thorough",)])
def test_the_extra_steps_differ_from_their_sweep_step_only_in_the_jitter(mode):
    steps = {s.name: s for s in LAB.steps({**_params(*mode, "--pools", "16,64", "--lockstep-pool", "16",
                                                         "--wide-jitter-pool", "64"), "sweep": "only"})}
    assert list(steps) == ["pool=16", "pool=64", "lockstep-pool=16", "wide-jitter-pool=64"]
    for extra, base, jitter in (("lockstep-pool=16", "pool=16", "0"), ("wide-jitter-pool=64", "pool=64", "1")):
        if mode:  # a server of its own, started with another lab.query-jitter
            props = dict(steps[extra].setup)
            assert props.pop("lab.query-jitter") == jitter
            assert props == steps[base].setup
        else:  # the same server; the jitter is chosen per request
            assert steps[extra].setup == steps[base].setup
            env = dict(steps[extra].extra["bench_env"])
            assert env.pop("JITTER") == jitter and env == steps[base].extra["bench_env"]
        assert steps[extra].extra["query_jitter"] == float(jitter)


@pytest.mark.parametrize("option", ["--lockstep-pool", "--wide-jitter-pool"])
def test_extra_step_sizes_are_bounded(option):
    from pul.errors import UsageError

    with pytest.raises(UsageError, match="between 0"):
        _params(option, "91")


@pytest.mark.parametrize("option", ["--pool-size", "--concurrency", "--requests"])
def test_zero_is_refused_where_it_means_nothing(option):
    from pul.errors import UsageError

    with pytest.raises(UsageError, match="at least 1"):
        _params(option, "0")


def _calibrated(pairs):
    """A step per server (--thorough), each with its calibration: (d, the same work's wall time)."""
    return {"params": {"concurrency": 64, "query_ms": 80}, "pools": {"query_jitter": 0.5},
            "variants": [{"name": f"pool={2 ** i}", "requests_per_sec": 10.0 * 2 ** i, "service_ms": 83.0,
                          "extra": {"pool_size": 2 ** i, "postgres_cpu_ms_per_query": cpu, "query_alone_ms": wall,
                                    "postgres_cores": 1, "server": f"pool={2 ** i}"}}
                         for i, (cpu, wall) in enumerate(pairs, start=1)]}


def test_calibration_spread_names_the_range_of_the_servers_d():
    facts = REPORT.facts(_calibrated([(3.0, 3.2), (4.0, 4.3)]), LAB)
    assert facts["d_spread_ms"] == pytest.approx(1.0) and facts["d_ms"] == pytest.approx(3.5)
    assert "| 3.00 to 4.00 ms |" in REPORT.sweep_facts_table(_calibrated([(3.0, 3.2), (4.0, 4.3)]))
    assert "d_wall_correlation" not in facts  # two servers say nothing about it


def test_calibration_spread_says_whether_the_wall_time_followed_the_cpu():
    together = REPORT.facts(_calibrated([(3.0, 3.2), (3.5, 3.7), (3.9, 4.2), (3.2, 3.4)]), LAB)
    assert together["d_wall_correlation"] > 0.9
    apart = REPORT.facts(_calibrated([(3.0, 4.2), (3.5, 3.2), (3.9, 3.3), (3.2, 4.0)]), LAB)
    assert apart["d_wall_correlation"] < 0


def test_lockstep_waits_are_predicted_from_the_convoy_up_to_smooth_queueing():
    # 32 connections, 80 ms waits, 3 ms of PostgreSQL CPU per query on one core. A perfect convoy,
    # every query back at once, makes a cycle 80 ms + 32 x 3 ms: 32 / 0.176 s, the floor. Any drift
    # between the queries raises that, up to the smooth prediction of the same pool with varied
    # waits (mean-value analysis below one core / 3 ms = 333 req/s).
    from pul import model
    from pul.lab import Step

    pools = {"pools": {"database": {"threads": 32}, "connections": {"threads": 32}}, "query_ms": 80,
             "calibration": {"median_ms": 3.0, "postgres_cpu_ms": 3.0, "postgres_cores": 1}}
    params = {"postgres_cpus": "1"}
    jittered = Step(name="pool=32", endpoint="x", concurrency=64, requests=1, pool="database",
                    extra={"pool_size": 32})
    lockstep = Step(name="lockstep-pool=32", endpoint="x", concurrency=64, requests=1, pool="database",
                    extra={"pool_size": 32, "query_jitter": 0.0})
    smooth = model.combine(LAB.predict(jittered, pools, params), None, 64)
    assert smooth.bounds["database CPU"] == pytest.approx(333.3, abs=0.1) and smooth.upper is None
    ranged = model.combine(LAB.predict(lockstep, pools, params), None, 64)
    assert ranged.bound_by == "database CPU"
    assert ranged.requests_per_sec == pytest.approx(32 / 0.176, abs=0.1)
    assert ranged.upper == pytest.approx(smooth.requests_per_sec) and ranged.upper > 1.5 * ranged.requests_per_sec
    # The database's bound stays the utilisation law's: the convoy is a floor, not a ceiling.
    assert ranged.bounds["database CPU"] == smooth.bounds["database CPU"]
    assert ranged.explanation.startswith("in lockstep, from the perfect convoy, 32 queries / (80 ms wait + 32 x 3 ms")


def test_the_convoy_uses_the_shared_cores_cpu_calibrated_before_the_step():
    # The round before the step found 3.5 ms of CPU per request on the database's core (PostgreSQL,
    # ab, the driver): the convoy is 32 x 3.5 ms, not 32 x the 3 ms PostgreSQL's query took alone.
    from pul import model
    from pul.lab import Step

    pools = {"pools": {"database": {"threads": 32}, "connections": {"threads": 32}}, "query_ms": 80,
             "calibration": {"median_ms": 3.0, "postgres_cpu_ms": 3.0, "postgres_cores": 1}}
    lockstep = Step(name="lockstep-pool=32", endpoint="x", concurrency=64, requests=1, pool="database",
                    extra={"pool_size": 32, "query_jitter": 0.0})
    prediction = model.combine(LAB.predict(lockstep, pools, {"postgres_cpus": "1"}),
                               {"load_cores_cpu_ms": 3.5, "load_cpu_ms": 0.1, "load_cores": 1}, 64)
    assert prediction.bound_by == model.DATABASE_CPU
    assert prediction.requests_per_sec == pytest.approx(32 / 0.192, abs=0.1)
    assert "32 queries / (80 ms wait + 32 x 3.5 ms" in prediction.explanation
    # The smooth end counts the same 3.5 ms: one core / 3.5 ms = 286 req/s at most.
    assert prediction.facts[model.CONVOY]["smooth_requests_per_sec"] == prediction.upper < 286
    # Without that reading, the database's own CPU per query sets the convoy.
    alone = model.combine(LAB.predict(lockstep, pools, {"postgres_cpus": "1"}),
                          {"load_cpu_ms": 0.1, "load_cores": 1}, 64)
    assert alone.requests_per_sec == pytest.approx(32 / 0.176, abs=0.1)
