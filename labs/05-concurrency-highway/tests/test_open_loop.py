"""Lab 05's open-loop model (fast): the queueing predictions its open-loop steps carry, and the
smoke test's open-loop check run on made-up results, so we know that it can fail."""

from __future__ import annotations

import copy
import heapq
import math
import random
import re

import pytest

from pul import model
from pul.testing import this_lab

lab = this_lab(__file__)
driver = lab.module("driver")


def test_erlang_c_known_values():
    # One server: the chance to wait is the utilisation.
    assert driver.erlang_c(1, 0.7) == pytest.approx(0.7)
    # Two servers offered one erlang: C = (1/2 x 2) / (1 + 1 + 1) = 1/3.
    assert driver.erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert driver.erlang_c(8, 8.0) == 1.0


def erlang_c_by_its_definition(servers: int, load: float) -> float:
    """Erlang's C as the open-loop page writes it: E / (E + (1 - rho) x sum of a^k / k! below c),
    with E = a^c / c!."""
    rho, top = load / servers, load ** servers / math.factorial(servers)
    below = sum(load ** k / math.factorial(k) for k in range(servers))
    return top / (top + (1 - rho) * below)


@pytest.mark.parametrize("servers, load", [(1, 0.3), (2, 1.5), (8, 5.6), (8, 7.9), (32, 20.0)])
def test_erlang_c_by_erlang_b_agrees_with_the_formula_the_book_gives(servers, load):
    assert driver.erlang_c(servers, load) == pytest.approx(erlang_c_by_its_definition(servers, load))


def test_m_d_1_is_pollaczek_khinchine():
    # M/D/1: Wq = rho / (2 mu (1 - rho)), exactly half of M/M/1's rho / (mu (1 - rho)).
    for rate, service_s in ((40, 0.020), (10, 0.050), (1, 0.5)):
        mu, rho = 1 / service_s, rate * service_s
        assert driver.wait_mdc(rate, service_s, 1) == pytest.approx(rho / (2 * mu * (1 - rho)))
        assert driver.wait_mmc(rate, service_s, 1) == pytest.approx(rho / (mu * (1 - rho)))
    assert driver.wait_mdc(400, 0.020, 8) == float("inf")


def simulated_wait(rate: float, service_s: float, servers: int, n: int, seed: int) -> float:
    """Mean wait of n Poisson arrivals on `servers` first-come-first-served servers of a constant
    service time: each arrival takes the server that frees first."""
    draw = random.Random(seed).expovariate
    free, t, total = [0.0] * servers, 0.0, 0.0
    for _ in range(n):
        t += draw(rate)
        start = max(t, heapq.heappop(free))
        total += start - t
        heapq.heappush(free, start + service_s)
    return total / n


def test_m_d_c_estimate_matches_a_simulated_m_d_8_in_heavy_traffic():
    # The lab's road, 8 lanes of 20 ms, at 90 % of its capacity: long-run simulation vs formula.
    predicted = driver.wait_mdc(360, 0.020, 8)
    assert predicted == pytest.approx(driver.wait_mmc(360, 0.020, 8) / 2)
    assert simulated_wait(360, 0.020, 8, 300_000, seed=11) == pytest.approx(predicted, rel=0.10)


def test_open_loop_model_per_arrivals_and_utilisation():
    poisson = driver.open_loop_model("poisson", 360, 8, 20, 3)
    even = driver.open_loop_model("even", 360, 8, 20, 3)
    assert poisson["queue_model"] == "M/D/8" and poisson["utilisation"] == pytest.approx(0.9)
    assert poisson["predicted_mean_ms"] == pytest.approx(20 + 1000 * driver.wait_mdc(360, 0.020, 8), abs=0.01)
    # Evenly spaced below capacity: a lane is always free again before its next request is due.
    assert even["predicted_wait_ms"] == 0 and even["predicted_mean_ms"] == 20
    # Past capacity both grow: at 120 % a request due t s in waits 0.2 t; over 3 s, 0.3 s on average.
    for arrivals in ("poisson", "even"):
        past = driver.open_loop_model(arrivals, 480, 8, 20, 3)
        assert past["wait_grows"] and past["predicted_wait_ms"] == pytest.approx(300)
    # And the waiting explodes near capacity, like 1 / (1 - utilisation).
    waits = [driver.open_loop_model("poisson", r, 8, 20, 3)["predicted_wait_ms"] for r in (200, 360, 390)]
    assert waits[0] < 1 < waits[1] < waits[2] / 4


def test_the_fixed_road_has_capacity_lanes_over_service_time_and_its_knee_at_the_lanes():
    assert driver.fixed_road(8, 20) == {"lanes": 8, "work_ms": 20, "capacity": pytest.approx(400), "knee": 8}
    assert driver.fixed_road(4, 50)["capacity"] == pytest.approx(80)


def test_the_closed_loop_on_the_fixed_road_is_min_c_m_over_s_and_max_1_c_over_m_times_s():
    below, at, past = (driver.closed_loop(c, 8, 20) for c in (4, 8, 64))
    assert below == {"requests_per_sec": pytest.approx(200), "latency_ms": 20}
    assert at == {"requests_per_sec": pytest.approx(400), "latency_ms": 20}
    assert past == {"requests_per_sec": pytest.approx(400), "latency_ms": pytest.approx(160)}
    # The steps the driver measures are predicted by the same lines.
    fixed = [s for s in lab.steps({**lab.defaults, "max_concurrency": 64}) if s.extra["sweep"] == "fixed"]
    assert [s.requests for s in fixed] == [max(100, driver.REQUESTS_PER_CONCURRENCY * s.concurrency,
                                               round(driver.closed_loop(s.concurrency, 8, 20)["requests_per_sec"]
                                                     * driver.FIXED_STEP_SECONDS)) for s in fixed]


def test_past_capacity_the_queue_and_the_wait_grow_until_the_generators_limits():
    # 480/s on 8 lanes of 20 ms: 80/s more than the 400 they finish, each second of the run adds
    # 0.2 s to the wait; 4,000 in flight after (4,000 - 8) / 80 s, a 30-s wait after 150 s.
    w = driver.past_capacity(480, 8, 20, 3, 4000, 30)
    assert w["excess"] == pytest.approx(80) and w["growth"] == pytest.approx(0.2)
    assert w["utilisation"] == pytest.approx(1.2)
    assert w["mean_ms"] == pytest.approx(driver.open_loop_model("even", 480, 8, 20, 3)["predicted_mean_ms"])
    assert w["mean_ms"] == pytest.approx(20 + 0.2 * 3000 / 2)
    assert w["cap_after_s"] == pytest.approx(3992 / 80) and w["timeout_after_s"] == pytest.approx(150)
    assert w["most_in_flight"] == pytest.approx(8 + 80 * 3)
    with pytest.raises(ValueError):
        driver.past_capacity(400, 8, 20, 3, 4000, 30)


def test_bench_sh_caps_the_requests_in_flight_as_the_lab_does():
    # The open-loop page says bench.sh passes the same cap as the lab, unless CONCURRENCY is set.
    bench = (lab.dir / "bench.sh").read_text()
    cap = re.search(r'--max-in-flight "\$\{CONCURRENCY:-(\d+)\}"', bench)
    assert cap and int(cap.group(1)) == driver.OPEN_LOOP_MAX_IN_FLIGHT


def open_loop_steps() -> list:
    return [s for s in lab.steps({**lab.defaults, "max_concurrency": 8}) if s.extra["sweep"] == "open"]


def test_the_open_loop_steps_pair_both_arrivals_at_every_rate():
    steps = open_loop_steps()
    assert len(steps) == 2 * len(driver.OPEN_LOOP_FRACTIONS)
    for s in steps:
        arrivals = s.extra["arrivals"]
        assert s.name == f"open-{arrivals}-rate={s.extra['offered_rate']}"
        assert s.extra["bench_env"]["ARRIVALS"] == arrivals
        assert ("SEED" in s.extra["bench_env"]) == (arrivals == "poisson")
    # The lab must fit its time: seconds of sending, all told, no more than the 3 x 5 s it had.
    assert sum(s.requests / s.extra["offered_rate"] for s in steps) <= 20


def test_each_open_loop_prediction_carries_its_queueing_model():
    pools = {"pools": {"lanes": {"threads": 8}}}
    for s in open_loop_steps():
        prediction = lab.predict(s, pools, lab.defaults)
        rate = s.extra["offered_rate"]
        assert prediction.requests_per_sec == pytest.approx(min(rate, 400), abs=0.1)
        assert prediction.facts == driver.open_loop_model(s.extra["arrivals"], rate, 8, 20, s.extra["seconds"])
        assert ("grows" in prediction.explanation) == (rate > 400)
        # Named for the driver's bottleneck model, which adds the CPU bounds and keeps the smallest.
        assert prediction.bound_by == ("offered rate" if rate < 400 else "threads")
        assert prediction.bounds == {"offered rate": rate, "threads": 400}
        combined = model.combine(prediction, {"server_cpu_ms": 0.5, "server_cores": 1}, s.concurrency,
                                 open_loop=True)
        assert combined.requests_per_sec == pytest.approx(min(rate, 400)) and combined.facts == prediction.facts


# -- the smoke test's open-loop checks, on made-up results -----------------------------------

def smoke_module():
    """The smoke test's module, imported by path (its slow tests are not collected from here)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("test_lab05.py")
    spec = importlib.util.spec_from_file_location("lab05_smoke_checks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SMOKE = smoke_module()
ROUND_TRIP_MS = 1.5  # HTTP on top of the lanes' service time, for the made-up runs


def made_up_run(wait_ms) -> dict:
    """Results of the open-loop steps as a server that follows the model would give them;
    wait_ms(step, model) is each step's mean wait."""
    variants = []
    for s in open_loop_steps():
        model = driver.open_loop_model(s.extra["arrivals"], s.extra["offered_rate"], 8, 20, s.extra["seconds"])
        mean = 20 + ROUND_TRIP_MS + wait_ms(s, model)
        grows = model["wait_grows"]
        variants.append({
            "name": s.name, "requests_per_sec": min(s.extra["offered_rate"], 399.0), "mean_ms": mean,
            "p50_ms": mean, "p90_ms": mean * (1.8 if grows else 1.02 + model["predicted_wait_ms"] / 20),
            "p99_ms": mean * (2 if grows else 1.05 + model["predicted_wait_ms"] / 10),
            "max_ms": mean * (2.1 if grows else 1.2 + model["predicted_wait_ms"] / 10),
            "extra": {k: v for k, v in s.extra.items() if k != "bench_env"} | model})
    return {"pools": {"pools": {"lanes": {"threads": 8}}, "work_ms": 20}, "variants": variants}


def as_predicted(step, model) -> float:
    return model["predicted_wait_ms"]


def test_the_open_loop_checks_pass_a_run_that_follows_the_model():
    results = made_up_run(as_predicted)
    SMOKE.check_open_loop_queue_builds_only_past_capacity(results)
    SMOKE.check_random_arrivals_wait_as_m_d_c_says(results)
    # A short run's sample wait may be half or one and a half times the long-run mean.
    for factor in (0.5, 1.5):
        SMOKE.check_random_arrivals_wait_as_m_d_c_says(made_up_run(lambda s, m: factor * m["predicted_wait_ms"]))


def test_the_m_d_c_check_fails_when_both_steps_arrive_evenly():
    """openload ignoring --arrivals (or the driver not passing it): the Poisson step is an even one."""
    results = made_up_run(as_predicted)
    evenly = copy.deepcopy(results)
    by_name = {v["name"]: v for v in evenly["variants"]}
    for v in evenly["variants"]:
        if v["extra"]["arrivals"] == "poisson":
            twin = by_name[v["name"].replace("poisson", "even")]
            v.update({k: twin[k] for k in ("mean_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms")})
    with pytest.raises(AssertionError):
        SMOKE.check_random_arrivals_wait_as_m_d_c_says(evenly)


@pytest.mark.parametrize("factor", (0.2, 4))
def test_the_m_d_c_check_fails_on_a_wait_the_model_does_not_explain(factor):
    with pytest.raises(AssertionError):
        SMOKE.check_random_arrivals_wait_as_m_d_c_says(made_up_run(lambda s, m: factor * m["predicted_wait_ms"]))


def test_the_open_loop_check_fails_when_only_one_kind_of_arrivals_ran():
    results = made_up_run(as_predicted)
    results["variants"] = [v for v in results["variants"] if v["extra"]["arrivals"] == "even"]
    with pytest.raises(AssertionError):
        SMOKE.check_open_loop_queue_builds_only_past_capacity(results)
