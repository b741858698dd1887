"""The bottleneck model: every bound named, the smallest predicted."""

from __future__ import annotations

import pytest

from pul import model
from pul.lab import Lab, Prediction, Step

POOLS = {"pools": {"default": {"threads": 8}, "offload": {"threads": 100}}}
ONE_CORE = {"server_cpu_ms": 0.73, "server_cores": 1, "load_cpu_ms": 0.1, "load_cores": 1}


def _lab_prediction(pool: str) -> Prediction:
    step = Step(name="s", endpoint="s", concurrency=50, requests=1, pool=pool, service_ms=30)
    return Lab.predict(Lab.__new__(Lab), step, POOLS, {})


def test_a_pool_bigger_than_the_load_leaves_the_core_to_bind():
    # Little's law allows 50 / 30 ms = 1,667 req/s; one core at 0.73 ms a request allows 1,370,
    # and queueing for it leaves less (the tests below).
    prediction = model.combine(_lab_prediction("offload"), ONE_CORE, 50)
    assert prediction.bound_by == model.SERVER_CPU
    assert prediction.bounds[model.SERVER_CPU] == pytest.approx(1 / 0.00073, rel=1e-3)
    assert prediction.requests_per_sec < prediction.bounds[model.SERVER_CPU]
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


def test_a_cpu_limit_is_the_servers_cores_and_the_arithmetic_names_it():
    # Half a CPU of quota on the one core: 0.5 / 0.73 ms = 685 req/s, the limit named.
    limited = model.combine(Prediction(None, "none"), {**ONE_CORE, "server_cores": 0.5, "cpu_limit": 0.5}, 1)
    assert limited.bound_by == model.SERVER_CPU
    assert limited.bounds[model.SERVER_CPU] == pytest.approx(0.5 / 0.00073, rel=1e-3)
    assert "0.5 CPU (the CPU limit) / 0.73 ms" in limited.explanation
    # A limit at or above the cores the server may use does not bind: the calibration records none.
    loose = model.combine(Prediction(None, "none"), ONE_CORE, 1)
    assert "1 core / 0.73 ms" in loose.explanation and "limit" not in loose.explanation


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

def test_with_every_request_in_service_queueing_for_the_core_sets_the_prediction():
    # Lab 01's java-offloaded: 50 in flight, each 30 ms asleep and 0.572 ms on the one core. Near
    # the corner of the two bounds (N* = 30.572 / 0.572 = 53) the loop lands well below both.
    prediction = model.combine(_lab_prediction("offload"), {**ONE_CORE, "server_cpu_ms": 0.572}, 50)
    rate = model.mean_value_analysis(50, 30 + 0.572, 0.572)
    assert prediction.requests_per_sec == pytest.approx(rate, abs=0.1)
    assert rate < min(prediction.bounds.values()) * 0.95
    assert prediction.bound_by == model.IN_FLIGHT  # the smaller bound is still the one named
    queueing = prediction.facts[model.QUEUEING]
    assert queueing["cpu_ms"] == pytest.approx(0.572) and queueing["in_service"] == 50
    assert f"mean-value analysis: 50 in service, each waiting 30 ms and using 0.572 ms of its core): " \
           f"{rate:,.0f} req/s" in prediction.explanation
    # Far from the corner (a tenth of the CPU), queueing costs next to nothing.
    far = model.combine(_lab_prediction("offload"), {**ONE_CORE, "server_cpu_ms": 0.0572}, 50)
    assert far.requests_per_sec == pytest.approx(50 / 0.0300572, rel=0.01)
    # Far past it (ten times the CPU), the core's bound.
    past = model.combine(_lab_prediction("offload"), {**ONE_CORE, "server_cpu_ms": 5.72}, 50)
    assert past.requests_per_sec == pytest.approx(1 / 0.00572, rel=0.01)


def test_mean_value_steps_are_chapter_3s_worked_table_one_connection_at_a_time():
    # S = 100 ms, of which d = 10 ms at one core: R(n) = d (1 + Q(n - 1)), λ(n) = n / (S - d + R(n)),
    # Q(n) = λ(n) R(n).
    rows = model.mean_value_steps(3, 100.0, 10.0)
    assert [row["n"] for row in rows] == [1, 2, 3]
    assert [row["at_cpu_ms"] for row in rows] == pytest.approx([10.0, 11.0, 12.178], abs=0.001)
    assert [row["requests_per_sec"] for row in rows] == pytest.approx([10.0, 19.802, 29.360], abs=0.001)
    assert [row["queue"] for row in rows] == pytest.approx([0.1, 0.2178, 0.3576], abs=0.0001)
    # Its last row is mean_value_analysis's answer, on one core and on several; none without connections.
    for cores in (1, 2):
        assert model.mean_value_steps(10, 100.0, 10.0, cores)[-1]["requests_per_sec"] == \
            model.mean_value_analysis(10, 100.0, 10.0, cores)
    assert model.mean_value_steps(0, 100.0, 10.0) == [] and model.mean_value_analysis(0, 100.0, 10.0) == 0.0


def test_queueing_counts_the_core_the_jit_compiler_took():
    calibration = {**ONE_CORE, "server_cpu_ms": 0.698, "jit_share": 0.15}
    prediction = model.combine(_lab_prediction("offload"), calibration, 50)
    rate = model.mean_value_analysis(50, 30 + 0.698 / 0.85, 0.698 / 0.85)
    assert prediction.requests_per_sec == pytest.approx(rate, abs=0.1)
    assert prediction.facts[model.QUEUEING]["cpu_ms"] == pytest.approx(0.698 / 0.85, rel=1e-3)


def test_no_queueing_where_threads_bind_or_no_cpu_was_calibrated():
    blocking = model.combine(_lab_prediction("default"), ONE_CORE, 50)
    assert model.QUEUEING not in blocking.facts
    assert blocking.requests_per_sec == pytest.approx(8 / 0.030, rel=1e-3)
    uncalibrated = model.combine(_lab_prediction("offload"), None, 50)
    assert model.QUEUEING not in uncalibrated.facts
    assert uncalibrated.requests_per_sec == pytest.approx(50 / 0.030, rel=1e-3)


def test_a_lower_bound_elsewhere_still_binds_below_the_queueing():
    # A load generator slower than the queueing loop: its bound is the prediction.
    slow_tool = {**ONE_CORE, "server_cpu_ms": 0.572, "load_cpu_ms": 1.0}
    prediction = model.combine(_lab_prediction("offload"), slow_tool, 50)
    assert prediction.bound_by == model.LOAD_GENERATOR and prediction.requests_per_sec == pytest.approx(1000)


def test_the_book_shows_the_queueing_arithmetic_beside_the_bound():
    from pul import report
    prediction = model.combine(_lab_prediction("offload"), {**ONE_CORE, "server_cpu_ms": 0.572}, 50)
    v = {"name": "java-offloaded", "concurrency": 50, "service_ms": 30, "requests_per_sec": 1450.0,
         "bounds": prediction.bounds, "bound_by": prediction.bound_by, "bounds_arithmetic": prediction.arithmetic,
         "predicted_requests_per_sec": prediction.requests_per_sec,
         "measured_over_predicted": 1450.0 / prediction.requests_per_sec,
         "calibration": {"server_cpu_ms": 0.572, "server_cores": 1, "rounds": 2, "server_cpu_ms_spread": [0.5, 0.6]},
         "server_cpu_ms_per_request": 0.6, "extra": prediction.facts}
    sentence = report.bound_sentence(v)
    assert "= 1,667 req/s; with queueing for the server CPU" in sentence
    assert f"measured 1,450 ({1450.0 / prediction.requests_per_sec:.2f})" in sentence
    table = report.bounds_markdown({"variants": [v]})
    assert f"| {prediction.requests_per_sec:,.0f} | 1,450 |" in table


def test_a_pool_in_lockstep_keeps_its_name_and_gets_a_range():
    """Lab 01's java-blocking on a 2-core Intel Xeon: 8 threads, 100 ms sleeps, 5.6 ms of CPU per
    request. The threads bind (80 req/s); in lockstep the 8 come back to the core together, so the
    prediction is a range from 8 / (0.1 s + 8 x 5.6 ms) = 55 req/s up to the mean-value analysis of
    those 8 threads; it measured 59 and 61."""
    step = Step(name="s", endpoint="s", concurrency=50, requests=1, pool="default", service_ms=100)
    lab = Lab.__new__(Lab)
    lab.LOCKSTEP = True
    prediction = model.combine(Lab.predict(lab, step, POOLS, {}), {**ONE_CORE, "server_cpu_ms": 5.6}, 50)
    assert prediction.bound_by == model.THREADS
    assert prediction.requests_per_sec == pytest.approx(8 / (0.1 + 8 * 0.0056), rel=1e-3)
    assert prediction.requests_per_sec < 59 < 61 < prediction.upper < 80
    # Without lockstep: the threads' bound alone, as before.
    plain = model.combine(Lab.predict(Lab.__new__(Lab), step, POOLS, {}), {**ONE_CORE, "server_cpu_ms": 5.6}, 50)
    assert plain.requests_per_sec == pytest.approx(80) and plain.upper is None


def test_requests_in_flight_in_lockstep_keep_their_name_and_get_a_range():
    """Lab 05's fixed road below its lanes on a 2-core Intel Xeon: 4 cars in flight, 20 ms of
    waiting each, 0.55 ms of CPU per request. The load generator's 4 in flight bind (200 req/s);
    in lockstep they come back to the core together: a range from 4 / (20 ms + 4 x 0.55 ms) up to
    the mean-value analysis, still named by the requests in flight (it measured 1.058 of the floor)."""
    facts = model.in_lockstep(model.loop_facts(4, 20))
    lab = Prediction(200.0, "4 in flight / 20 ms", facts=facts, bound_by=model.IN_FLIGHT,
                     bounds={model.IN_FLIGHT: 200.0}, arithmetic={model.IN_FLIGHT: "4 in flight / 20 ms"})
    prediction = model.combine(lab, {**ONE_CORE, "server_cpu_ms": 0.55, "load_cpu_ms": 0.07}, 4)
    assert prediction.bound_by == model.IN_FLIGHT
    assert prediction.requests_per_sec == pytest.approx(4 / (0.020 + 4 * 0.00055), rel=1e-3)
    assert prediction.requests_per_sec < prediction.upper < 200


def test_the_tests_hold_requests_in_flight_in_a_convoy_to_the_cores_band():
    """pul.testing.decided_at_the_core: the band of a step whose calibrated CPU makes its
    prediction. The renamed range above is one; a pool's threads in a convoy are not."""
    from pul.testing import decided_at_the_core
    in_flight = model.combine(Prediction(200.0, "", facts=model.in_lockstep(model.loop_facts(4, 20)),
                                         bound_by=model.IN_FLIGHT, bounds={model.IN_FLIGHT: 200.0}),
                              {**ONE_CORE, "server_cpu_ms": 0.55}, 4)
    step = Step(name="s", endpoint="s", concurrency=50, requests=1, pool="default", service_ms=100)
    lab = Lab.__new__(Lab)
    lab.LOCKSTEP = True
    threads = model.combine(Lab.predict(lab, step, POOLS, {}), {**ONE_CORE, "server_cpu_ms": 5.6}, 50)
    core = model.combine(_lab_prediction("offload"), {**ONE_CORE, "server_cpu_ms": 5.6}, 50)

    def record(p):
        return {"bound_by": p.bound_by, "extra": p.facts}
    assert core.bound_by == model.SERVER_CPU
    assert [decided_at_the_core(record(p)) for p in (in_flight, threads, core)] == [True, False, True]


def test_the_tests_accept_a_prediction_to_its_recorded_precision_and_no_further():
    """A census run's fixed-c=1 (1 in flight, 20 ms of waiting, 3.23 ms of CPU per request): the
    model's 43.05 req/s is recorded as 43.0, off by more than a thousandth."""
    from pul.testing import model_prediction, the_model_predicted
    loop = {"in_service": 1, "wait_ms": 20, "at": model.SERVER_CPU, "cpu_ms": 3.229, "cores": 1}
    record = {"bounds": {model.IN_FLIGHT: 50.0, model.SERVER_CPU: 309.7}, "extra": {model.QUEUEING: loop}}
    assert model_prediction(record) == pytest.approx(43.05, abs=0.01)
    assert the_model_predicted({**record, "predicted_requests_per_sec": 43.0})
    assert not the_model_predicted({**record, "predicted_requests_per_sec": 43.2})
    big = {"bounds": {model.IN_FLIGHT: 5000.0}, "extra": {}}
    assert the_model_predicted({**big, "predicted_requests_per_sec": 5004.0})
    assert not the_model_predicted({**big, "predicted_requests_per_sec": 5006.0})


def test_a_core_bound_step_is_judged_with_the_compiler_share_its_run_had():
    """pul.testing.with_the_runs_compiler: a census run's lab 05 c=2, 0.737 of its bound with the
    compiler on 16% of the core against 2% in its calibration, is 0.86 of what the core had left."""
    from pul.testing import with_the_runs_compiler
    v = {"bound_by": model.SERVER_CPU, "measured_over_predicted": 0.737, "jit_share": 0.16,
         "calibration": {"jit_share": 0.015}}
    assert with_the_runs_compiler(v) == pytest.approx(0.737 * 0.985 / 0.84)
    assert with_the_runs_compiler({**v, "bound_by": model.THREADS}) == 0.737
    assert with_the_runs_compiler({**v, "calibration": {}}) == 0.737


def _served(bound_by="server CPU", calibrated=0.34, during=0.22, rate=4478.0, jit=0.0):
    return {"bound_by": bound_by, "calibration": {"server_cpu_ms": calibrated}, "server_cpu_ms_per_request": during,
            "requests_per_sec": rate, "jit_share": jit}


def test_serving_drift_leaves_the_compilers_part_out():
    # Lab 05's c=64 in a census run: calibrated at 0.34 ms, served at 0.22 ms (-35%).
    assert model.serving_drift(_served()) == pytest.approx(0.22 / 0.34 - 1)
    # 0.38 ms a request during the run, of which the compiler's 24% of the core at 2,642 req/s is
    # 0.091 ms: 0.289 ms serving, against 0.59 calibrated.
    assert model.serving_drift(_served(calibrated=0.59, during=0.38, rate=2642, jit=0.24)) == \
        pytest.approx((0.38 - 0.24 * 1000 / 2642) / 0.59 - 1)
    # Only where the server's CPU is what predicts the step.
    assert model.serving_drift(_served(bound_by="threads")) is None
    assert model.serving_drift({**_served(), "calibration": {}}) is None


def test_a_step_is_measured_again_only_past_the_drift_named():
    from pul.run import remeasure_reason

    first = remeasure_reason({**_served(), "measured_over_predicted": 1.522})
    assert first["serving_drift"] == pytest.approx(-0.353, abs=1e-3)
    assert first["requests_per_sec"] == 4478.0 and first["measured_over_predicted"] == 1.522
    within = 0.34 * (1 - model.REMEASURE_DRIFT) + 0.001
    assert remeasure_reason({**_served(during=within), "measured_over_predicted": 1.3}) is None
    assert remeasure_reason({**_served(bound_by="threads"), "measured_over_predicted": 1.5}) is None


def _measured_again(durings, limit=model.REMEASURE_DRIFT):
    """pul.run's re-measuring of a step whose measurements served at `durings` ms a request in turn
    (calibrated at 0.34 ms each time): the record kept, the notes said, and the measurements made
    (True: the first)."""
    from pul.lab import Step
    from pul.progress import Progress
    from pul.run import _measured_until_they_agree

    durings, made, notes = list(durings), [], []
    progress = Progress(quiet=True)
    progress.note = notes.append

    def calibrated_and_measured(first):
        made.append(first)
        during = durings.pop(0)
        return {**_served(during=during), "measured_over_predicted": round(0.34 / during, 3), "extra": {}}, None

    step = Step(name="c=8", endpoint="echo", concurrency=8, requests=100, remeasure_drift=limit)
    record, _ = _measured_until_they_agree(step, calibrated_and_measured, progress)
    return record, notes, made


def test_a_step_is_measured_again_until_its_run_and_calibration_agree():
    # -35%, then +29%: measured a third time, at +3%, which is kept.
    record, notes, made = _measured_again([0.22, 0.44, 0.35, 0.99])
    assert made == [True, False, False] and record["server_cpu_ms_per_request"] == 0.35
    assert [r["serving_drift"] for r in record["extra"]["remeasured"]] == [-0.353, 0.294]
    assert len(notes) == 2 and all("calibrating and measuring it again" in n for n in notes)
    # Agreeing at once: one measurement, nothing recorded.
    record, notes, made = _measured_again([0.36])
    assert made == [True] and "remeasured" not in record["extra"] and not notes


def test_a_step_is_measured_at_most_three_times_and_says_the_core_is_not_steady():
    record, notes, made = _measured_again([0.22, 0.44, 0.45, 0.34])
    assert len(made) == model.MEASUREMENTS == 3 and record["server_cpu_ms_per_request"] == 0.45
    assert [r["serving_drift"] for r in record["extra"]["remeasured"]] == [-0.353, 0.294]
    assert "disagreed in all 3 measurements (serving drift -35%, +29%, +32%)" in notes[-1]
    assert "not steady" in notes[-1]
    # The record says so, for the tests' run_lab to measure the run again (pul.testing.host_moved).
    assert record["extra"][model.UNSTEADY] is True
    assert model.UNSTEADY not in _measured_again([0.22, 0.34])[0]["extra"]


def test_a_step_sets_its_own_limit():
    # +12% passes the default quarter but not a step's 10%.
    assert "remeasured" not in _measured_again([0.38])[0]["extra"]
    assert len(_measured_again([0.38, 0.34], limit=0.10)[2]) == 2


def _at_the_core(**changes):
    # Lab 06's virtual-c=1000 in a census run: a range at the core, 1,779-1,880 req/s from 0.532 ms
    # calibrated; it served 2,350 req/s at 0.427 ms a request (-20%), the core 99% busy.
    v = {"name": "virtual-c=1000", "bound_by": "server CPU", "requests_per_sec": 2349.63,
         "measured_over_predicted": 1.32, "predicted_upper_requests_per_sec": 1879.7,
         "server_cpu_ms_per_request": 0.427, "server_cpu_utilization": 0.99, "jit_share": 0.0,
         "calibration": {"server_cpu_ms": 0.532, "jit_share": 0.0}, "extra": {}}
    return {**v, **changes}


def test_a_step_at_the_core_is_checked_as_its_use_of_the_core_and_its_calibrations_drift():
    from pul.testing import check_at_the_core

    used, misses, unsteady = check_at_the_core(_at_the_core(), 0.15)
    # The run used all of the core (2,349.63 x 0.427 ms = 1.003); the calibration did not hold, by
    # more than a step with this limit is left at (the driver measures it again), while 1.25 of
    # the upper end is inside the band that limit allows (to 1.10 / 0.85).
    assert used == pytest.approx(1.003, abs=1e-3) and not unsteady
    assert [m.split(":")[0] for m in misses] == ["virtual-c=1000 serving drift"]
    # Measured three times and still off: named, not failed, if it used the core.
    earlier = [{"serving_drift": -0.2}, {"serving_drift": 0.18}]
    used, misses, unsteady = check_at_the_core(_at_the_core(extra={"remeasured": earlier}), 0.15)
    assert unsteady and misses == []
    # An idle core fails whatever the drift: the core did not bind.
    _, misses, _ = check_at_the_core(_at_the_core(server_cpu_utilization=0.5, server_cpu_ms_per_request=0.2,
                                                  requests_per_sec=2500.0), 0.15)
    assert any("server core busy" in m for m in misses)
    assert any("own CPU per request" in m for m in misses)


def test_a_step_the_run_hands_to_another_bound_is_checked_against_that_one():
    from pul.testing import check_at_the_core

    # Lab 06's pool-c=1000 in census run 2026-12-06-lab06-two-servers #4: named the core's (0.312 ms
    # calibrated, 3,205 req/s, under its 100 threads' 3,333), served at 0.267 ms (-14.5%, within
    # the quarter), so the core allowed 3,745 and the threads bound: 3,163 measured (0.95 of them),
    # the core 83% busy.
    v = {"name": "pool-c=1000", "bound_by": "server CPU", "requests_per_sec": 3162.91,
         "measured_over_predicted": 1.94, "predicted_upper_requests_per_sec": 3030.0,
         "server_cpu_ms_per_request": 0.267, "server_cpu_utilization": 0.83, "jit_share": 0.007,
         "bounds": {"threads": 3333.3, "server CPU": 3205.1, "load generator": 19455.3},
         "calibration": {"server_cpu_ms": 0.312, "jit_share": 0.0}, "extra": {}}
    _, misses, _ = check_at_the_core(v, 0.25, (0.85, 1.10))
    assert misses == []
    # Below the threads' band it still fails, against the threads.
    _, misses, _ = check_at_the_core({**v, "requests_per_sec": 2600.0}, 0.25, (0.85, 1.10))
    assert any("own CPU per request: 0.78" in m for m in misses)
    assert not any("server core busy" in m for m in misses)
    # With the run at its calibration's CPU the core stays the bound, and must be busy.
    _, misses, _ = check_at_the_core({**v, "server_cpu_ms_per_request": 0.319}, 0.25, (0.85, 1.10))
    assert any("server core busy" in m for m in misses)


def test_a_table_names_the_cpu_limit_where_it_was_the_servers_cores_and_its_use_is_a_share_of_it():
    limited = {"bound_by": model.SERVER_CPU, "server_cpu_utilization": 0.45,
               "calibration": {"server_cores": 0.5, "cpu_limit": 0.5}}
    loose = {"bound_by": model.SERVER_CPU, "server_cpu_utilization": 0.45, "calibration": {"server_cores": 1}}
    assert model.shown_bound(limited) == model.CPU_LIMIT == "CPU limit"
    assert model.shown_bound(loose) == model.SERVER_CPU
    assert model.shown_bound({"bound_by": model.THREADS, "calibration": limited["calibration"]}) == model.THREADS
    assert model.shown_bound({"bound_by": model.SERVER_CPU}) == model.SERVER_CPU
    # 0.45 CPU-seconds a second: 90% of a 0.5-CPU limit, 45% of a core.
    assert model.server_busy(limited) == 0.9 and model.server_busy(loose) == 0.45


def test_one_echo_in_flight_ranges_from_the_round_trip_in_series_to_the_core():
    """pul.model.ROUND_TRIP: with one request in flight the load generator's CPU runs in series with
    the server's (1 / (0.33 + 0.064 ms)); with 16 the core has work queued and the floor meets the
    bound, so no range. No load-generator CPU, or an open loop: no round trip."""
    calibration = {"server_cpu_ms": 0.33, "server_cores": 1, "load_cpu_ms": 0.064, "load_cores": 1}
    one = model.combine(Prediction(None, "echo", facts=model.round_trip_facts(1)), calibration, 1)
    assert one.bound_by == model.SERVER_CPU
    assert one.upper == pytest.approx(1000 / 0.33, abs=0.1)
    assert one.requests_per_sec == pytest.approx(1000 / (0.33 + 0.064), abs=0.1)
    assert "1 request / (0.33 ms of server CPU + 0.064 ms of load-generator CPU) = 2,538 req/s" in one.explanation
    sixteen = model.combine(Prediction(None, "echo", facts=model.round_trip_facts(16)), calibration, 16)
    assert sixteen.upper is None and model.ROUND_TRIP not in sixteen.facts
    assert sixteen.requests_per_sec == pytest.approx(1000 / 0.33, abs=0.1)
    alone = model.combine(Prediction(None, "echo", facts=model.round_trip_facts(1)),
                          {**calibration, "load_cpu_ms": None}, 1)
    assert alone.upper is None
    opened = model.combine(Prediction(None, "echo", facts=model.round_trip_facts(1)), calibration, 1, open_loop=True)
    assert opened.upper is None


def test_the_tests_hold_a_round_trip_step_to_the_floors_share_of_the_core():
    """pul.testing.check_at_the_core on a c=1 echo whose core idled while ab worked (a fresh
    machine's run: 0.84 busy, 0.926 of the core's bound): within the range, it passes; a core
    busy well below the round trip's share still fails."""
    from pul.testing import check_at_the_core, model_prediction, the_model_predicted
    calibration = {"server_cpu_ms": 0.33, "server_cores": 1, "load_cpu_ms": 0.064, "load_cores": 1}
    p = model.combine(Prediction(None, "echo", facts=model.round_trip_facts(1)), calibration, 1)

    def record(rate, busy_ms):
        return {"name": "c=1", "bound_by": p.bound_by, "bounds": p.bounds, "extra": p.facts,
                "calibration": calibration, "predicted_requests_per_sec": p.requests_per_sec,
                "predicted_upper_requests_per_sec": p.upper, "requests_per_sec": rate,
                "measured_over_predicted": round(rate / p.requests_per_sec, 3),
                "server_cpu_ms_per_request": busy_ms, "server_cpu_utilization": rate * busy_ms / 1000,
                "jit_share": 0.0, "extra_calibration": None}
    assert the_model_predicted(record(2540.0, 0.33)) and model_prediction(record(2540.0, 0.33)) < p.upper
    _, missed, _ = check_at_the_core(record(2545.0, 0.33), 0.25)
    assert missed == []
    _, missed, _ = check_at_the_core(record(1500.0, 0.33), 0.25)
    assert any("server core busy" in m for m in missed) and any("round trip's floor" in m for m in missed)
    # A census run the host slowed: c=1's core 0.72 busy, below the floor's 0.84 share less the slack.
    _, missed, _ = check_at_the_core(record(2182.0, 0.33), 0.25)
    assert any("server core busy" in m for m in missed), missed
    # The fresh clone's c=1: 0.926 of the core's bound and 0.84 busy, serving cheaper than calibrated.
    _, missed, _ = check_at_the_core(record(0.926 * 1000 / 0.33, 0.84 / (0.926 * 1000 / 0.33) * 1000), 0.25)
    assert missed == [], missed


def test_the_round_trip_queues_at_both_the_core_and_ab():
    """pul.model.round_trip_floor: exact mean-value analysis of two queues. One in flight: the sum
    of the two CPUs; two: each request finds the other at a queue part of the time (worked by hand:
    R = 0.33 x 1.8376 + 0.064 x 1.1624 ms, 2 / R); many: the core's bound."""
    assert model.round_trip_floor(1, 0.33, 1, 0.064) == pytest.approx(1000 / 0.394)
    assert model.round_trip_floor(2, 0.33, 1, 0.064) == pytest.approx(2000 / (0.33 * (1 + 0.33 / 0.394)
                                                                               + 0.064 * (1 + 0.064 / 0.394)))
    assert model.round_trip_floor(64, 0.33, 1, 0.064) == pytest.approx(1000 / 0.33, rel=1e-3)
    # ab's CPU larger than the server's: its thread is the loop's bottleneck.
    assert model.round_trip_floor(64, 0.1, 1, 0.2) == pytest.approx(1000 / 0.2, rel=1e-3)
    # Under a CPU limit of less than a core, no round trip.
    limited = model.combine(Prediction(None, "echo", facts=model.round_trip_facts(1)),
                            {"server_cpu_ms": 0.33, "server_cores": 0.5, "load_cpu_ms": 0.064, "load_cores": 1}, 1)
    assert limited.upper is None


def test_each_kind_of_range_names_its_ends_once_and_the_checks_keep_their_census_labels():
    """pul.model.RANGES: the table's sentence, the bounds list and the tests name a range's two ends
    from one place; the checks' labels are the ones the committed census records."""
    from pul import report
    from pul.testing import model_misses
    calibration = {"server_cpu_ms": 0.33, "server_cores": 1, "load_cpu_ms": 0.064, "load_cores": 1}
    p = model.combine(Prediction(None, "echo", facts=model.round_trip_facts(1)), calibration, 1)
    trip = {"name": "c=1", "bound_by": p.bound_by, "bounds": p.bounds, "extra": p.facts,
            "predicted_requests_per_sec": p.requests_per_sec, "predicted_upper_requests_per_sec": p.upper,
            "requests_per_sec": 100.0, "measured_over_predicted": round(100.0 / p.requests_per_sec, 3)}
    assert model.range_kind(trip) is model.RANGES[model.ROUND_TRIP]
    assert p.explanation.startswith(report.convoy_clause(trip) + " (")
    assert report.convoy_clause(trip) == (
        "from the round trip in series, 1 request / (0.33 ms of server CPU + 0.064 ms of load-generator CPU) = "
        "2,538 req/s, up to the core's bound, 3,030 req/s")
    assert " of the round trip, " in report.bound_sentence(trip) and " of the core's bound" in report.bound_sentence(trip)
    assert [m.split(":")[0] for m in model_misses("c=1", trip)] == ["c=1 over the round trip's floor"]
    convoy = {**trip, "extra": {model.CONVOY: {"in_service": 32, "wait_ms": 80, "at": model.DATABASE_CPU,
                                               "cpu_ms": 2.4, "cores": 1, "floor_requests_per_sec": 204.0}},
              "predicted_requests_per_sec": 204.0, "predicted_upper_requests_per_sec": 352.0,
              "requests_per_sec": 400.0, "measured_over_predicted": 1.96}
    assert model.range_kind(convoy) is model.RANGES[model.CONVOY]
    assert report.convoy_clause(convoy).startswith("in lockstep, from the perfect convoy, 32 queries / ")
    assert [m.split(":")[0] for m in model_misses("lockstep", convoy)] == ["lockstep over the smooth upper end"]
    assert model.range_kind({**convoy, "predicted_upper_requests_per_sec": None}) is None


def test_the_tests_hold_a_convoy_at_the_core_to_its_range_at_the_runs_own_cpu():
    """pul.testing.check_at_the_core on a c=50 step of identical 30-ms waits at the core, a range
    from the perfect convoy up to the smooth prediction (issue 32's lockstep model, at the server).
    Lab 06's `virtual` in a whole-suite run from a fresh clone: 1,231 req/s between its convoy
    (792) and its smooth prediction (1,423), the core 78% busy, failed the core's full bound
    (0.778 of it against 0.85) before. Census 2026-12-07-lab06-convoy's rep 9: synchronized-jdk25
    served cheaper than calibrated, so its 50 requests in flight (1,667 req/s) bound at the run's
    own CPU, and 1,358 req/s failed at 0.815 of them; its smooth prediction there is lower."""
    from pul.testing import check_at_the_core
    calibration = {"server_cpu_ms": 0.637, "server_cores": 1, "jit_share": 0.04}
    facts = model.in_lockstep(model.loop_facts(50, 30.0))
    p = model.combine(Prediction(1666.7, "50 in flight / 30 ms", facts=facts, bound_by=model.IN_FLIGHT),
                      calibration, 50)
    assert p.bound_by == model.SERVER_CPU and p.bounds[model.IN_FLIGHT] == 1666.7
    assert p.upper == pytest.approx(1423, abs=2)
    assert p.requests_per_sec == pytest.approx(792, abs=2)

    def record(rate, busy, jit=0.04):
        # `busy`: the core's share the requests used, the compiler's on top.
        return {"name": "virtual", "bound_by": p.bound_by, "bounds": p.bounds, "extra": p.facts,
                "calibration": calibration, "predicted_requests_per_sec": p.requests_per_sec,
                "predicted_upper_requests_per_sec": p.upper, "requests_per_sec": rate,
                "measured_over_predicted": round(rate / p.requests_per_sec, 3),
                "server_cpu_ms_per_request": (busy + jit) / rate * 1000,
                "server_cpu_utilization": busy + jit, "jit_share": jit}
    _, missed, _ = check_at_the_core(record(1231.0, 0.747), 0.25)
    assert missed == [], missed
    # Cheaper than calibrated (0.55 ms a request): the core's bound passes the requests in flight's.
    _, missed, _ = check_at_the_core(record(1358.0, 1358.0 * 0.55 / 1000), 0.25)
    assert missed == [], missed
    # Anywhere in the range at the run's own CPU passes (0.6 ms a request: 816-1,467 req/s) ...
    _, missed, _ = check_at_the_core(record(1000.0, 0.6), 0.25)
    assert missed == [], missed
    # ... and under the convoy, its core under the convoy's share (0.51 of it), fails.
    _, missed, _ = check_at_the_core(record(700.0, 0.42), 0.25)
    assert any("server core busy" in m for m in missed), missed
    assert any("over the smooth prediction at the run's own CPU per request: 0.477" in m for m in missed), missed
