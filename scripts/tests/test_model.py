"""The bottleneck model: every bound named, the smallest predicted."""

from __future__ import annotations

import pytest

from pul import model
from pul.lab import Lab, Prediction, Step

POOLS = {"pools": {"default": {"threads": 8}, "offload": {"threads": 100}}}
ONE_CORE = {"server_cpu_ms": 0.73, "server_cores": 1, "load_cpu_ms": 0.1, "load_cores": 1}


def _lab_prediction(pool: str) -> Prediction:
    step = Step(name="s", endpoint="s", concurrency=50, requests=1, pool=pool, service_ms=30)
    return Lab.predict(None, step, POOLS, {})


def test_a_pool_bigger_than_the_load_leaves_the_core_to_bind():
    # Little's law allows 50 / 30 ms = 1,667 req/s; one core at 0.73 ms a request allows 1,370.
    prediction = model.combine(_lab_prediction("offload"), ONE_CORE, 50)
    assert prediction.bound_by == model.SERVER_CPU
    assert prediction.requests_per_sec == pytest.approx(1 / 0.00073, rel=1e-3)
    assert prediction.bounds[model.IN_FLIGHT] == pytest.approx(50 / 0.030, rel=1e-3)
    assert prediction.bounds[model.LOAD_GENERATOR] == pytest.approx(10_000)
    assert "1 core / 0.73 ms" in prediction.explanation


def test_the_jit_compilers_share_of_the_core_serves_no_requests():
    # Lab 02's commonpool-jvm-default: the compiler used 15% of the core in the calibration round,
    # so 0.85 of a core at 0.698 ms a request allows 1,218 req/s, not 1,433.
    prediction = model.combine(Prediction(None, "none"), {**ONE_CORE, "server_cpu_ms": 0.698, "jit_share": 0.15}, 50)
    assert prediction.bound_by == model.SERVER_CPU
    assert prediction.requests_per_sec == pytest.approx(0.85 / 0.000698, rel=1e-3)
    assert "(1 core - 0.15 of a core the JIT compiler's) / 0.698 ms" in prediction.explanation
    # A quiet compiler leaves the plain arithmetic; an absurd share still leaves a bound.
    quiet = model.combine(Prediction(None, "none"), {**ONE_CORE, "jit_share": 0.004}, 50)
    assert "JIT" not in quiet.explanation
    # On four cores, half a core of compiling leaves 3.5 of them.
    four = model.combine(Prediction(None, "none"), {**ONE_CORE, "server_cores": 4, "jit_share": 0.5}, 50)
    assert four.bounds[model.SERVER_CPU] == pytest.approx(3.5 / 0.00073, rel=1e-3)
    busy = model.combine(Prediction(None, "none"), {**ONE_CORE, "jit_share": 1.7}, 50)
    assert busy.requests_per_sec == pytest.approx((1 - model.MAX_COMPILER_SHARE) / 0.00073, rel=1e-3)


def test_eight_threads_bind_before_the_core():
    prediction = model.combine(_lab_prediction("default"), ONE_CORE, 50)
    assert prediction.bound_by == model.THREADS
    assert prediction.requests_per_sec == pytest.approx(8 / 0.030, rel=1e-3)
    assert set(prediction.bounds) == {model.THREADS, model.SERVER_CPU, model.LOAD_GENERATOR}


def test_without_a_bound_of_its_own_the_cores_bind():
    # The echo: no pool, no wait; the server's core binds, or ab's if it is the cheaper one.
    prediction = model.combine(Prediction(None, "none"), ONE_CORE, 1)
    assert set(prediction.bounds) == {model.SERVER_CPU, model.LOAD_GENERATOR}
    assert prediction.bound_by == model.SERVER_CPU
    assert prediction.requests_per_sec == pytest.approx(1 / 0.00073, rel=1e-3)


def test_an_open_loop_step_has_no_load_generator_bound():
    offered = Prediction(200.0, "offered", bound_by=model.OFFERED, bounds={model.OFFERED: 200.0})
    prediction = model.combine(offered, ONE_CORE, 4000, open_loop=True)
    assert model.LOAD_GENERATOR not in prediction.bounds and model.IN_FLIGHT not in prediction.bounds
    assert prediction.bound_by == model.OFFERED


def test_no_calibration_leaves_the_labs_prediction():
    lab_only = _lab_prediction("default")
    prediction = model.combine(lab_only, None, 50)
    assert prediction.requests_per_sec == lab_only.requests_per_sec and prediction.bound_by == model.THREADS


def test_every_bound_has_its_arithmetic():
    prediction = model.combine(_lab_prediction("offload"), ONE_CORE, 50)
    assert set(prediction.arithmetic) == set(prediction.bounds)


def test_a_database_on_the_load_generators_core_shares_it_with_ab():
    # PostgreSQL 3 ms and ab 0.3 ms of one core per request: 1 / 3.3 ms, not 1 / 3 ms.
    lab03 = Prediction(333.3, "database", bound_by=model.DATABASE_CPU,
                       bounds={model.THREADS: 400.0, model.DATABASE_CPU: 333.3},
                       facts={model.SHARED_DATABASE: {"cores": 1, "cpu_ms": 3.0}})
    calibration = {"server_cpu_ms": 1.0, "server_cores": 1, "load_cpu_ms": 0.3, "load_cores": 1}
    prediction = model.combine(lab03, calibration, 64)
    assert prediction.bound_by == model.DATABASE_CPU
    assert prediction.requests_per_sec == pytest.approx(1 / 0.0033, rel=1e-3)
    assert model.LOAD_GENERATOR not in prediction.bounds


def test_a_shared_core_measured_before_the_step_gives_the_database_bound():
    # All the database's core spent per request in the calibration round (PostgreSQL, ab, the
    # driver): 3.9 ms, whatever the query timed alone said (4.7 ms here).
    lab03 = Prediction(212.8, "database", bound_by=model.DATABASE_CPU,
                       bounds={model.THREADS: 400.0, model.DATABASE_CPU: 212.8},
                       facts={model.SHARED_DATABASE: {"cores": 1, "cpu_ms": 4.7}})
    calibration = {"server_cpu_ms": 1.0, "server_cores": 1, "load_cpu_ms": 0.1, "load_cores": 1,
                   "load_cores_cpu_ms": 3.9}
    prediction = model.combine(lab03, calibration, 64)
    assert prediction.bound_by == model.DATABASE_CPU
    assert prediction.requests_per_sec == pytest.approx(1 / 0.0039, rel=1e-3)
    assert "c=64" in prediction.explanation and model.LOAD_GENERATOR not in prediction.bounds


# -- queueing for the core, near the corner of two bounds -------------------------------------

def _offloaded(rate: float, cpu_ms: float, bound_by: str = model.IN_FLIGHT) -> dict:
    bounds = {model.IN_FLIGHT: 50 / 0.030, model.SERVER_CPU: 1000 / cpu_ms}
    return {"name": "java-offloaded", "concurrency": 50, "service_ms": 30, "requests_per_sec": rate,
            "bounds": bounds, "bound_by": bound_by, "predicted_requests_per_sec": min(bounds.values()),
            "measured_over_predicted": rate / min(bounds.values()),
            "calibration": {"server_cpu_ms": cpu_ms, "server_cores": 1}}


def test_queueing_at_the_core_lands_below_both_bounds_near_their_corner():
    from pul import report
    v = _offloaded(1406, 0.572)
    sentence = report.queueing_sentence(v)
    rate = model.mean_value_analysis(50, 30 + 0.572, 0.572)
    assert rate < min(v["bounds"].values()) * 0.95
    assert f"{rate:,.0f} req/s; measured {1406 / rate:.2f} of that" in sentence
    assert "0.572 ms of the server's CPU" in sentence
    # Far from the corner (a tenth of the CPU), queueing costs next to nothing.
    far = model.mean_value_analysis(50, 30 + 0.0572, 0.0572)
    assert far == pytest.approx(50 / 0.0300572 , rel=0.01)


def test_queueing_counts_the_core_the_jit_compiler_took():
    from pul import report
    v = _offloaded(1175, 0.698)
    v["calibration"]["jit_share"] = 0.15
    sentence = report.queueing_sentence(v)
    rate = model.mean_value_analysis(50, 30 + 0.698 / 0.85, 0.698 / 0.85)
    assert f"{rate:,.0f} req/s" in sentence and "on the 85% of the core the JIT compiler left" in sentence


def test_no_queueing_sentence_where_threads_bind_or_nothing_waits():
    from pul import report
    blocking = {**_offloaded(247, 0.95), "bounds": {model.THREADS: 267, model.SERVER_CPU: 1051}}
    assert report.queueing_sentence(blocking) == ""
    echo = {**_offloaded(20000, 0.05), "service_ms": 0}
    assert report.queueing_sentence(echo) == ""
