"""Lab 01, measured for real: the effect the chapter teaches, and a driver that cleans up.

The smoke run uses 100 ms of work instead of the chapter's 30 ms: at 30 ms the
offloaded variants need more CPU than the server's single core has (the chapter
shows this), while at 100 ms both variants are bound by threads alone, which is
the regime Little's law predicts here.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from pul import playline, timeline
from pul.procs import processes_with_run_id
from pul.testing import (
    SMOKE_RESULTS_VARIABLE, by_name, check_the_model_predicted, Driver, run_lab, within,
    within_model)

# A measured run of the real lab (minutes): its lab's part of scripts/test runs it.
pytestmark = pytest.mark.slow

SMOKE = ("--work-ms", "100", "--concurrency", "50", "--seconds", "4")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return run_lab("01", *SMOKE, results_dir=tmp_path_factory.mktemp("lab01"), smoke=True)


def test_every_variant_ran_without_errors(smoke):
    variants = by_name(smoke)
    assert set(variants) == {"java-blocking", "java-offloaded", "scala-blocking", "scala-offloaded"}
    for v in variants.values():
        assert v["failed"] == 0 and v["non_2xx"] == 0, v


def check_offloading_triples_throughput(run: dict, language: str) -> None:
    v = by_name(run)
    within(f"{language}-offloaded req/s over {language}-blocking's",
           v[f"{language}-offloaded"]["requests_per_sec"] / v[f"{language}-blocking"]["requests_per_sec"], 3,
           context=v)


def check_blocking_is_bound_by_the_default_dispatcher(run: dict, language: str) -> None:
    v = by_name(run)[f"{language}-blocking"]
    # The prediction came from the threads the server reported, not from this test.
    assert v["pool"] == "default" and v["pool_threads"] == run["pools"]["pools"]["default"]["threads"]
    assert v["bound_by"] == "threads", v["bounds"]
    within_model(f"{language}-blocking", v)


def check_offloaded_reaches_the_bound_the_model_names(run: dict, language: str) -> None:
    v = by_name(run)[f"{language}-offloaded"]
    # 50 in flight on a 100-thread pool: the load itself, unless the core binds first.
    assert v["bound_by"] in ("requests in flight", "server CPU"), v["bounds"]
    # All 50 in service: the prediction counts their queueing for the core.
    assert v["extra"]["queueing"]["in_service"] == 50, v["extra"]
    check_the_model_predicted(v)
    within_model(f"{language}-offloaded", v)


@pytest.mark.parametrize("language", ["java", "scala"])
def test_offloading_triples_throughput(smoke, language):
    check_offloading_triples_throughput(smoke, language)


@pytest.mark.parametrize("language", ["java", "scala"])
def test_blocking_is_bound_by_the_default_dispatcher(smoke, language):
    check_blocking_is_bound_by_the_default_dispatcher(smoke, language)


@pytest.mark.parametrize("language", ["java", "scala"])
def test_offloaded_reaches_the_bound_the_model_names(smoke, language):
    check_offloaded_reaches_the_bound_the_model_names(smoke, language)


@pytest.mark.parametrize("language", ["java", "scala"])
def test_the_timeline_shows_which_pool_binds(smoke, language):
    """Blocking: the default dispatcher's threads all busy in most samples, the bound the table
    names. Offloaded: the offload pool holds what Little's law says, rate x work time, and the
    default dispatcher has threads to spare."""
    v = by_name(smoke)
    blocking, offloaded = v[f"{language}-blocking"], v[f"{language}-offloaded"]
    size = blocking["pool_threads"]
    within(f"{language}-blocking share of samples with every default thread busy",
           timeline.share_at(blocking["timeline"]["pools"]["default"]["busy"], size), 0.8,
           context=blocking["timeline"])
    within(f"{language}-offloaded share of samples with every default thread busy",
           timeline.share_at(offloaded["timeline"]["pools"]["default"]["busy"], size), high=0.2,
           context=offloaded["timeline"])
    # Little's law on the pool: busy threads = rate x the time each holds one, at least the work
    # time (longer where the request waits for the core meanwhile), at most the requests in flight.
    busy = sorted(x for x in offloaded["timeline"]["pools"]["offload"]["busy"] if x is not None)
    little = offloaded["requests_per_sec"] * offloaded["service_ms"] / 1000
    within(f"{language}-offloaded median busy offload threads", busy[len(busy) // 2], 0.8 * little,
           offloaded["concurrency"], context=(busy, little))


def test_every_bound_was_calibrated_before_its_run(smoke):
    for v in smoke["variants"]:
        assert {"threads", "server CPU", "load generator"} <= set(v["bounds"]) or \
            {"requests in flight", "server CPU", "load generator"} <= set(v["bounds"]), v["bounds"]
        assert v["calibration"]["rounds"] >= 1 and v["calibration"]["server_cpu_ms"] > 0


def test_status_stays_fast_only_when_work_is_offloaded(smoke):
    v = by_name(smoke)
    # Blocked dispatcher: Play's own request handling waits for a free thread.
    within("scala-blocking status p50 over scala-offloaded's",
           v["scala-blocking"]["probe"]["p50_ms"] / v["scala-offloaded"]["probe"]["p50_ms"], 5)


def test_a_repeat_run_agrees_within_15_percent(smoke, tmp_path):
    if os.environ.get(SMOKE_RESULTS_VARIABLE):
        pytest.skip(f"{SMOKE_RESULTS_VARIABLE} names a run to check: a repeat needs a new run")
    # The variant whose rate the server's core and the JIT move most: a thread-bound one repeats
    # by construction.
    again = by_name(run_lab("01", *SMOKE, "--variant", "scala-offloaded", results_dir=tmp_path))
    first = by_name(smoke)
    for name in again:
        within(f"{name} repeat run's req/s against the first run's", again[name]["requests_per_sec"],
               first[name]["requests_per_sec"] * (1 - 0.15), first[name]["requests_per_sec"] * (1 + 0.15))


# SIGHUP: the terminal closed or `vagrant ssh` dropped (SIGKILL: test_signals.py).
@pytest.mark.lifecycle
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_interrupting_a_run_leaves_no_process_behind(tmp_path, signum):
    driver = Driver("01", "--results-dir", str(tmp_path), "--no-report", log=tmp_path / "driver.log")
    try:
        # Mid-run: the server up and ab loading it (a warm-up round is a run of ab like any other).
        driver.wait_for("warm-up round 2", timeout=240)
        assert driver.children(), "nothing running mid-measurement?"
        if signum == signal.SIGINT:
            driver.ctrl_c()
        else:
            os.kill(driver.popen.pid, signum)
        code = driver.wait(60)
        assert code == 128 + signum, driver.output()[-2000:]
        assert driver.leftovers() == []
        assert not (tmp_path / "latest.json").exists(), "an interrupted run must not write results"
        assert not [p for p in tmp_path.iterdir() if p.name != "driver.log"], "nor leave its raw output"
    finally:
        driver.kill_everything()


@pytest.mark.lifecycle
def test_a_server_that_cannot_start_shows_its_log(tmp_path):
    # JAVA_OPTS reaches the staged start script: an unknown JVM option makes java refuse to start.
    driver = Driver("01", "--results-dir", str(tmp_path), "--no-report", log=tmp_path / "driver.log",
                    env={"JAVA_OPTS": "-XX:+NoSuchOptionForThisTest"})
    try:
        code = driver.wait(240)
        assert code == 5, driver.output()[-2000:]
        assert "NoSuchOptionForThisTest" in driver.output()
        assert driver.leftovers() == []
    finally:
        driver.kill_everything()


@pytest.mark.lifecycle
def test_a_server_that_dies_mid_run_is_reported(tmp_path):
    # No warm-up: the first measured run starts right after the server.
    driver = Driver("01", "--warmup", "0", "--variant", "java-blocking", "--results-dir", str(tmp_path),
                    "--no-report", log=tmp_path / "driver.log")
    try:
        driver.wait_for("measuring", timeout=240)
        jvms = [pid for pid in processes_with_run_id(driver.token)
                if b"ProdServerStart" in open(f"/proc/{pid}/cmdline", "rb").read()]
        assert jvms, "no server JVM found"
        for pid in jvms:
            os.kill(pid, signal.SIGKILL)
        code = driver.wait(120)
        assert code == 5, driver.output()[-2000:]
        assert "server stopped during" in driver.output()
        assert driver.leftovers() == []
    finally:
        driver.kill_everything()


# --- Play 3 (Pekko): the same sources, translated by the build, teach the same lesson ---------
# The Java pair of the smoke run, built with --play 3: blocking bound by the default dispatcher's
# threads (Pekko sizes it as Akka does), offloading by the requests in flight, each within the
# model's band as above; and the results say which Play and actor library the server ran.

PLAY3_VARIANTS = ("java-blocking", "java-offloaded")


@pytest.fixture(scope="module")
def play3(tmp_path_factory):
    variants = [arg for name in PLAY3_VARIANTS for arg in ("--variant", name)]
    return run_lab("01", *SMOKE, *variants, "--play", "3", results_dir=tmp_path_factory.mktemp("lab01-play3"))


def test_the_server_ran_play_3_on_pekko(play3):
    machine = play3["machine"]
    assert machine["play"].startswith("3."), machine
    assert machine["actors"].startswith("Pekko "), machine
    # The default dispatcher kept its Pekko name: the translated configuration reached the server.
    assert play3["pools"]["pools"]["default"]["dispatcher"] == "pekko.actor.default-dispatcher"


def test_offloading_triples_throughput_on_play_3(play3):
    check_offloading_triples_throughput(play3, "java")


def test_each_variant_reaches_the_bound_it_has_on_play_2_9(play3):
    # What the lab predicts on Play 2.9 (the tests above): the blocking pair bound by the default
    # dispatcher's threads, the offloaded pair by the requests in flight (or the core, first).
    check_blocking_is_bound_by_the_default_dispatcher(play3, "java")
    check_offloaded_reaches_the_bound_the_model_names(play3, "java")
    v = by_name(play3)["java-blocking"]
    check_the_model_predicted(v)


def test_the_build_translates_as_the_book_shows(play3):
    """The Play 3 build's sources are the book's translation (pul.playline) of the lab's and of the
    instruments module's (labs/instruments, compiled in the lab's target/instruments): the names
    tables and the appendix show what the server compiled."""
    lab_dir = Path(__file__).resolve().parents[1]
    pairs = playline.renames()
    module = lab_dir / "target" / "instruments"
    for app, built_under in ((lab_dir / "app", playline.target_dir(lab_dir, "3")),
                             (lab_dir.parent / "instruments" / "app", playline.target_dir(module, "3"))):
        compiled = built_under / "scala-2.13" / "src_managed" / "main" / "pekko"
        sources = sorted(p for p in app.rglob("*") if p.suffix in (".java", ".scala"))
        assert sources and compiled.is_dir(), compiled
        for source in sources:
            built = compiled / source.relative_to(app)
            assert built.read_text() == playline.translate(source.read_text(), pairs), built
