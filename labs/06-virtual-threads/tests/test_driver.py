"""Lab 06's driver without a server: its options, steps and predictions."""

from __future__ import annotations

import argparse

import pytest

from pul import exercises, run
from pul.errors import UsageError
from pul.lab import Step
from pul.testing import this_lab

LAB = this_lab(__file__)


def pools(carriers=1, connections=4, default=8) -> dict:
    return {"pools": {"default": {"threads": default}, "pool": {"threads": 100}, "virtual": {"threads": None},
                      "carriers": {"threads": carriers}, "connections": {"threads": connections}},
            "calibration": {"mean_ms": 20.5}, "java_version": 25}


def params(**more) -> dict:
    return {**LAB.defaults, "postgres_cpus": "1", **more}


def test_every_runtime_a_step_names_is_declared():
    declared = {r.name for r in LAB.runtimes}
    assert {s.runtime for s in LAB.steps(params())} <= declared


def test_the_default_dispatcher_is_bound_by_its_threads():
    step = next(s for s in LAB.steps(params()) if s.name == "default")
    prediction = LAB.predict(step, pools(), params())
    assert prediction.bound_by == "threads" and prediction.requests_per_sec == pytest.approx(8 / 0.030, rel=1e-3)


def test_virtual_threads_bound_nothing_themselves():
    step = next(s for s in LAB.steps(params()) if s.name == "virtual")
    prediction = LAB.predict(step, pools(), params())
    assert prediction.bound_by == "requests in flight"
    assert prediction.facts["queueing"]["in_service"] == 50


def test_a_pinned_carrier_bounds_the_synchronized_variant():
    step = next(s for s in LAB.steps(params()) if s.name == "synchronized-jdk21")
    prediction = LAB.predict(step, pools(carriers=2), params())
    assert prediction.bound_by == "threads" and prediction.requests_per_sec == pytest.approx(2 / 0.030, rel=1e-3)


def test_the_connections_bound_jdbc():
    step = next(s for s in LAB.steps(params()) if s.name == "jdbc-connections=4")
    prediction = LAB.predict(step, pools(connections=4), params())
    assert prediction.bound_by == "connections"
    assert prediction.requests_per_sec == pytest.approx(4 / 0.0205, rel=1e-3)
    assert "queueing" not in prediction.facts


def test_no_connections_means_no_database_and_no_jdbc_variant():
    assert not [s for s in LAB.steps(params(connections="")) if s.name.startswith("jdbc")]


@pytest.mark.parametrize("text", ["0", "4,x", "91"])
def test_bad_connection_sizes_are_refused_before_any_work(text):
    parser = argparse.ArgumentParser()
    LAB.add_arguments(parser)
    with pytest.raises(UsageError, match="--connections"):
        LAB.params(parser.parse_args(["--connections", text]))


def test_the_footprint_variants_keep_the_high_load_and_their_own_thread_counts():
    steps = LAB.steps(params())
    high = [s for s in steps if s.extra.get("group") == "footprint"]
    assert [s.name for s in high] == ["virtual-c=1000", "pool-c=1000", "per-request-pool-c=1000"]
    assert all(s.concurrency == LAB.defaults["high_concurrency"] and s.watch_footprint for s in high)
    # Its own pool, sized by the high load: one server for all three.
    assert high[-1].pool == "per-request" and LAB.server_properties(params())["lab.high-concurrency"] == "1000"
    assert all(s.setup == {} and s.runtime == "jdk25" for s in high)


def test_the_pools_idle_threads_exit_so_that_each_footprint_is_its_own():
    # Akka keeps a thread-pool-executor's idle threads for 60 s: a pool that an earlier variant
    # started would be counted by every later one on the shared server.
    conf = (LAB.dir / "conf" / "application.conf").read_text()
    for dispatcher in ("offload-dispatcher", "per-request-dispatcher"):
        assert f"{dispatcher}.thread-pool-executor.keep-alive-time = 1s" in conf


def test_every_jdbc_variant_shares_the_first_server_and_sets_its_pool():
    steps = LAB.steps(params())
    jdbc = [s for s in steps if s.endpoint == "jdbc-virtual"]
    assert [s.name for s in jdbc] == ["jdbc-connections=4", "jdbc-connections=16"]
    assert LAB.server_properties(params())["lab.connections"] == "4"
    for step in jdbc:
        assert step.setup == {} and step.configure == {"lab.connections": f"/connections?size={step.extra['connections']}"}


def test_every_java_25_variant_shares_one_server_and_the_java_21_ones_another():
    groups = run.group_by_server(LAB.steps(params()))
    assert [[s.runtime for s in group][0] for _, group in groups] == ["jdk25", "jdk21"]
    assert all(len({s.runtime for s in group}) == 1 for _, group in groups)


def test_an_exercise_whose_app_decides_the_connections_posts_no_size():
    # size-the-connections: the student's conf/application.conf sets the pool; a POST would undo it.
    checked = exercises.at_dir(LAB, LAB.dir, app_decides=("connections",))
    for step in checked.steps(params()):
        assert "lab.connections" not in step.configure and "lab.connections" not in step.setup
    assert "lab.connections" not in checked.server_properties(params())


def test_the_query_is_timed_alone_for_about_a_second_of_queries():
    runs = LAB.module("driver").calibration_runs
    # The default 20 ms: as many as ever; an exercise's 200 ms: ten, not 53 taking 10.6 s.
    assert [runs(20), runs(200), runs(1), runs(5000)] == [50, 10, 50, 10]
