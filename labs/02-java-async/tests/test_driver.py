"""Fast tests of lab 02's driver support: steps, servers, and the common-pool prediction."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pul.lab import REPO
from pul.run import group_by_server
from pul.testing import this_lab

LAB = this_lab(__file__)
COMMON_PARALLELISM = LAB.module("driver").COMMON_PARALLELISM
JVM_DEFAULT = LAB.module("driver").JVM_DEFAULT

PARAMS = dict(LAB.defaults)


def pools(common_threads, parallelism):
    return {"available_processors": 1, "pools": {
        "default": {"executor": "fork-join-executor", "threads": 8},
        "offload": {"executor": "thread-pool-executor", "threads": 100},
        "commonpool": {"executor": "ForkJoinPool.commonPool()" if common_threads else "a new thread per task",
                       "threads": common_threads, "parallelism": parallelism}}}


def step(name, params=PARAMS):
    return next(s for s in LAB.steps(params) if s.name == name)


def test_the_main_variants_share_a_server_with_the_modelled_common_pool():
    params = {**PARAMS, "common_parallelism": 7}
    groups = group_by_server(LAB.steps(params))
    assert [[s.name for s in group] for _, group in groups] == [
        ["blocking", "commonpool", "default-ec", "custom-ec", "ws"], [JVM_DEFAULT]]
    assert groups[0][0] == {COMMON_PARALLELISM: "7"}
    # The JVM must choose by itself on the second server: no property at all.
    assert groups[1][0] == {}


def test_predictions_follow_the_reported_pools():
    assert LAB.predict(step("blocking"), pools(3, 3), PARAMS).requests_per_sec == round(8 / 0.030, 1)
    assert LAB.predict(step("commonpool"), pools(3, 3), PARAMS).requests_per_sec == 100.0
    assert LAB.predict(step("custom-ec"), pools(3, 3), PARAMS).requests_per_sec == round(50 / 0.030, 1)
    assert LAB.predict(step("ws"), pools(3, 3), PARAMS).requests_per_sec == round(50 / 0.030, 1)


def test_a_thread_per_task_common_pool_bounds_nothing():
    jvm_default = step(JVM_DEFAULT)
    prediction = LAB.predict(jvm_default, pools(None, 1), PARAMS)
    assert prediction.requests_per_sec == round(50 / 0.030, 1)
    assert "new thread per task" in prediction.explanation
    assert prediction.facts["completable_future_executor"] == "a new thread per task"
    assert "completable_future_executor" not in jvm_default.extra  # predict() changes nothing


def test_common_parallelism_is_an_option_and_must_be_positive():
    lab = [sys.executable, str(REPO / "scripts" / "lab"), "run", "02"]
    help_text = subprocess.run([*lab, "--help"], capture_output=True, text=True).stdout
    assert "--common-parallelism" in help_text
    bad = subprocess.run([*lab, "--common-parallelism", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--common-parallelism must be at least 1" in bad.stderr


# custom-ec on a fresh machine of the reference kind (issue #32): its calibration, and what it
# measured, 414 req/s, with its offload threads swinging between all 50 and a handful busy.
FRESH_CALIBRATION = {"server_cpu_ms": 0.7921, "server_cores": 1, "load_cpu_ms": 0.0817, "load_cores": 1,
                     "jit_share": 0.017}
FRESH_RATE = 414.38


def test_identical_sleeps_are_predicted_from_the_convoy_up_to_the_smooth_prediction():
    from pul import model
    params = {**PARAMS, "work_ms": 100, "concurrency": 50}
    predicted = model.combine(LAB.predict(step("custom-ec", params), pools(None, 3), params), FRESH_CALIBRATION, 50)
    # The 50 requests in flight hold them back (500 req/s, below the core's 1,240): the convoy at the
    # core makes the range, and the bound keeps its name.
    assert predicted.bound_by == model.IN_FLIGHT and predicted.explanation.startswith(
        "in lockstep, from the perfect convoy, 50 requests / (100 ms wait + 50 x ")
    floor, smooth = predicted.requests_per_sec, predicted.upper
    # 50 / (100 ms + 50 x 0.81 ms) and the mean-value analysis of the same loop.
    assert floor == pytest.approx(50 / (0.100 + 50 * 0.000806), rel=0.01)
    assert smooth == pytest.approx(493.5, rel=0.01)
    # The smooth prediction alone (the old model) put the fresh run outside its band, 0.85-1.10:
    assert FRESH_RATE / smooth < 0.85
    # the range holds it, and still fails a step held back by the default dispatcher's 8 threads
    # (8 / 100 ms = 80 req/s): what the range is there to tell apart.
    assert FRESH_RATE / floor >= 0.85 and FRESH_RATE / smooth <= 1.10
    assert 80 / floor < 0.85


def test_the_tests_work_out_the_same_range_floor_from_a_record():
    """pul.testing.model_prediction, which the smoke tests compare the recorded prediction with,
    works the convoy's floor out again (it once gave the smooth end: 481.6 against 295.0)."""
    from pul import model
    from pul.testing import model_prediction
    params = {**PARAMS, "work_ms": 100, "concurrency": 50}
    predicted = model.combine(LAB.predict(step("custom-ec", params), pools(None, 3), params), FRESH_CALIBRATION, 50)
    record = {"bounds": predicted.bounds, "extra": predicted.facts}
    assert model_prediction(record) == pytest.approx(predicted.requests_per_sec, rel=1e-3)
