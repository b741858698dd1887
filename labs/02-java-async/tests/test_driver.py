"""Fast tests of lab 02's driver support: steps, servers, and the common-pool prediction."""

from __future__ import annotations

import subprocess
import sys

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
