"""Lab 06's driver without a server: its options, steps and predictions."""

from __future__ import annotations

import argparse

import pytest

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
    names = [s.name for s in steps]
    # A fixed pool keeps the threads its first tasks start: virtual threads are measured before it.
    assert names.index("virtual-c=1000") < names.index("pool")
    assert high[-1].setup == {"lab.pool-size": "1000"}


def test_the_first_jdbc_variant_shares_the_first_server():
    steps = LAB.steps(params())
    first = next(s for s in steps if s.name == "jdbc-connections=4")
    assert first.setup == {} and LAB.server_properties(params())["lab.connections"] == "4"
    assert next(s for s in steps if s.name == "jdbc-connections=16").setup == {"lab.connections": "16"}
