"""The driver's warm-up: rounds repeat until two agree and, where a step asks, the JIT is quiet."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pul import run as run_module
from pul.errors import ServerFailed
from pul.lab import Step
from pul.testing import unit_step_bench


class FakeServer:
    """Reports a JIT compile-time total that grows by the given amounts, one per round."""

    def __init__(self, jit_per_round):
        self.jit = 0.0
        self.jit_per_round = list(jit_per_round)
        self.reads = 0

    def pools(self):
        self.reads += 1
        if self.reads > 1 and self.jit_per_round:  # every read after the first ends a round
            self.jit += self.jit_per_round.pop(0)
        return {"jit_compile_seconds": self.jit} if self.jit_per_round is not None else {}

    def alive(self):
        return True


def _warm_up(monkeypatch, rates, step, server, cpu_seconds=2.0, jit_cpu_seconds=None, pin=None):
    rates = list(rates)

    def fake_run(*_args, **_kwargs):
        rate = rates.pop(0)
        if hasattr(server, "compile_round"):
            server.compile_round()
        # Each round: 2 s, so `rate` x 2 requests, and the server's CPU one core's worth unless
        # told; the compiler's share of it read in the same window, where the server tells it.
        return (SimpleNamespace(requests_per_sec=rate, complete=2 * rate),
                {"cpu_seconds": cpu_seconds, "load_cpu_seconds": 0.5, "jit_cpu_seconds": jit_cpu_seconds})

    monkeypatch.setattr(run_module, "_run_once", fake_run)
    monkeypatch.setattr(run_module.time, "monotonic", iter(range(0, 10_000, 2)).__next__)  # 2 s rounds
    return run_module.warm_up(unit_step_bench(step, server, pin=pin))


def _step(**kwargs):
    return Step(name="s", endpoint="status", concurrency=50, requests=1000, warmup_requests=100, **kwargs)


def test_two_agreeing_rounds_are_enough_without_the_jit_check(monkeypatch):
    result = _warm_up(monkeypatch, [100, 500, 900, 920, 5000], _step(warmup_jit_quiet=None), FakeServer([]))
    assert result["settled"] and [r["requests_per_sec"] for r in result["rounds"]] == [100, 500, 900, 920]


def test_agreeing_rounds_while_the_jit_compiles_are_not_settled(monkeypatch):
    # Rounds 3 and 4 agree, but the JIT compiled for half of round 4; it is quiet in round 6.
    step = _step(warmup_settled=0.05, warmup_jit_quiet=0.10, warmup_max_rounds=10)
    result = _warm_up(monkeypatch, [100, 500, 900, 920, 1500, 1520, 9999],
                      step, FakeServer([2.0, 2.0, 1.5, 1.0, 0.5, 0.1, 0.0]))
    assert result["settled"]
    assert [r["requests_per_sec"] for r in result["rounds"]] == [100, 500, 900, 920, 1500, 1520]
    assert result["rounds"][-1]["jit_share"] == pytest.approx(0.05)
    assert result["rounds"][3]["jit_share"] == pytest.approx(0.5)


def test_a_warm_up_that_never_settles_says_so(monkeypatch):
    step = _step(warmup_max_rounds=3, warmup_jit_quiet=None)
    result = _warm_up(monkeypatch, [100, 200, 400], step, FakeServer([]))
    assert result["settled"] is False
    assert [r["requests_per_sec"] for r in result["rounds"]] == [100, 200, 400]


def test_every_lab_waits_for_the_jit_by_default(monkeypatch):
    # Two rounds agree, but the JIT is still busy: the default step does not call that settled.
    result = _warm_up(monkeypatch, [900, 910, 905, 9999], _step(), FakeServer([1.0, 1.0, 0.0, 0.0]))
    assert [r["jit_share"] for r in result["rounds"]] == [0.5, 0.5, 0.0]


def test_each_round_records_cpu_per_request_for_the_calibration(monkeypatch):
    result = _warm_up(monkeypatch, [1000, 1000], _step(warmup_jit_quiet=None), FakeServer([]))
    # 2 s of one core for 2,000 requests: 1 ms each; the load generator 0.25 ms.
    assert result["rounds"][-1]["server_cpu_ms"] == pytest.approx(1.0)
    assert result["rounds"][-1]["load_cpu_ms"] == pytest.approx(0.25)


def test_a_server_that_does_not_report_its_jit_is_an_error(monkeypatch):
    server = FakeServer([])
    server.jit_per_round = None
    with pytest.raises(ServerFailed, match="jit_compile_seconds"):
        _warm_up(monkeypatch, [100, 100], _step(warmup_jit_quiet=0.1), server)


class CompilingServer(FakeServer):
    """A server whose JIT threads' CPU the driver reads itself: 0.5 s of each 2 s round."""

    def __init__(self):
        super().__init__([])
        self.jit_cpu = 0.0

    def jit_cpu_seconds(self):
        self.jit_cpu += 0.25  # read once more at each round's end, and twice before the first
        return self.jit_cpu


def test_the_calibration_leaves_the_compilers_cpu_out(monkeypatch):
    result = _warm_up(monkeypatch, [1000, 1000], _step(warmup_jit_quiet=None), CompilingServer(),
                      jit_cpu_seconds=0.25)
    last = result["rounds"][-1]
    # 2 s of CPU for 2,000 requests, 0.25 s of it the compiler's: 0.875 ms to serve one.
    assert last["server_cpu_ms"] == pytest.approx(0.875)
    assert last["jit_cpu_ms"] == pytest.approx(0.125)
    assert last["jit_share"] == pytest.approx(0.125)


def test_a_request_too_cheap_to_measure_still_bounds_the_core(monkeypatch):
    # The compiler used all the CPU the run measured (a blocking action costs almost nothing):
    # the serving CPU is one clock tick, the readings' resolution, not zero, so the server's
    # CPU bound is still computed.
    result = _warm_up(monkeypatch, [50, 50], _step(warmup_jit_quiet=None), CompilingServer(),
                      cpu_seconds=0.02, jit_cpu_seconds=0.02)
    tick_ms = 1000 / run_module.CLOCK_TICKS
    assert result["rounds"][-1]["server_cpu_ms"] == pytest.approx(tick_ms / 100, abs=1e-4)


def test_calibration_takes_the_median_of_its_own_rounds(monkeypatch):
    # Three rounds of its own; the middle one by CPU per request calibrates, so one round slowed
    # by something else on the machine (0.45 ms) does not set the bound.
    cpu_ms = [0.45, 0.33, 0.35]

    def fake_warm_up(*_args, **_kwargs):
        ms = cpu_ms.pop(0)
        return {"settled": True, "rounds": [{"requests_per_sec": 1 / ms * 1000, "complete": 2000,
                                              "server_cpu_ms": ms, "load_cpu_ms": 0.1}]}

    monkeypatch.setattr(run_module, "warm_up", fake_warm_up)
    step = _step(calibration_rounds=3)
    found = run_module.calibration(unit_step_bench(step, SimpleNamespace(cpu_source="proc"), pin={"load_cpus": None}),
                                   None, False, {"available_processors": 1})
    assert found["server_cpu_ms"] == 0.35
    assert found["server_cpu_ms_spread"] == [0.33, 0.45] and found["rounds"] == 3
    assert cpu_ms == []


def test_the_shared_cores_cpu_per_request_is_the_least_of_the_calibrating_rounds(monkeypatch):
    # The database shares the load generator's core. The warm-up's last round read 3.1 ms of that
    # core per request, the calibration round (a core the host slowed) 5.45 ms: the bound comes from
    # 3.1 ms, not from the slowed round, which would put it 43% low.
    def fake_warm_up(*_args, **_kwargs):
        return {"settled": True, "rounds": [{"requests_per_sec": 250, "complete": 375, "server_cpu_ms": 0.9,
                                              "load_cpu_ms": 0.3, "load_cores_cpu_ms": 5.45}]}

    monkeypatch.setattr(run_module, "warm_up", fake_warm_up)
    warmup = {"settled": True, "rounds": [
        {"requests_per_sec": 200, "complete": 375, "server_cpu_ms": 1.2, "load_cpu_ms": 0.4, "load_cores_cpu_ms": 6.0},
        {"requests_per_sec": 300, "complete": 375, "server_cpu_ms": 0.9, "load_cpu_ms": 0.3, "load_cores_cpu_ms": 3.1}]}
    found = run_module.calibration(unit_step_bench(_step(), SimpleNamespace(cpu_source="proc"), pin={"load_cpus": "1"}),
                                   warmup, False, {"available_processors": 1})
    # The two latest rounds calibrate: the warm-up's first (a cold start, 6.0 ms) does not count.
    assert found["load_cores_cpu_ms"] == 3.1
    assert found["load_cores_cpu_ms_spread"] == [3.1, 5.45]
    # The server's own CPU per request is the calibration round's, as before.
    assert found["server_cpu_ms"] == 0.9


class RoamingServer(CompilingServer):
    """A server whose compiler threads the driver can move off its core; records each move."""

    def __init__(self, movable=True):
        super().__init__()
        self.movable = movable
        self.moves = []

    def release_compiler(self):
        if self.movable:
            self.moves.append("released")
        return self.movable

    def pin_compiler(self):
        self.moves.append("pinned")


def _jit_shares(monkeypatch, server, shares):
    """The compiler's CPU in each 2-s round, as shares of it."""
    shares = list(shares)
    server.total = 0.0

    def compile_round():
        server.total += 2 * shares.pop(0)

    server.compile_round = compile_round
    monkeypatch.setattr(run_module, "_compiler_cpu", lambda server: server.total)


def test_the_compiler_roams_until_it_is_quiet_and_only_a_pinned_round_settles(monkeypatch):
    # Rounds 1-2 agree while the compiler works on the other core; round 3 finds it quiet there, so
    # it is pinned back, and round 4 (pinned, agreeing, quiet) settles the warm-up.
    server = RoamingServer()
    _jit_shares(monkeypatch, server, [0.9, 0.5, 0.05, 0.02])
    step = _step(warmup_jit_quiet=0.10, warmup_max_rounds=8)
    result = _warm_up(monkeypatch, [1000, 1010, 1300, 1290, 9999], step, server, jit_cpu_seconds=0.0)
    assert result["settled"]
    assert [r.get("compiler_roamed", False) for r in result["rounds"]] == [True, True, True, False]
    assert server.moves == ["released", "pinned"]
    # No waiting for the compiler to go idle while it has a core of its own.
    assert not any("compile_wait_s" in r for r in result["rounds"])


def test_the_compiler_is_pinned_back_before_the_last_round_allowed(monkeypatch):
    server = RoamingServer()
    _jit_shares(monkeypatch, server, [0.9, 0.9, 0.9, 0.9])
    step = _step(warmup_jit_quiet=0.10, warmup_max_rounds=3)
    result = _warm_up(monkeypatch, [1000, 1000, 1000], step, server, jit_cpu_seconds=0.0)
    assert [r.get("compiler_roamed", False) for r in result["rounds"]] == [True, True, False]
    assert server.moves == ["released", "pinned"] and result["settled"] is False


def test_the_compiler_is_pinned_back_when_a_round_fails(monkeypatch):
    server = RoamingServer()
    _jit_shares(monkeypatch, server, [0.9])

    def failing_run(*_args, **_kwargs):
        raise ServerFailed("the server died")

    monkeypatch.setattr(run_module, "_run_once", failing_run)
    with pytest.raises(ServerFailed):
        run_module.warm_up(unit_step_bench(_step(), server))
    assert server.moves == ["released", "pinned"]


def test_a_server_whose_compiler_cannot_move_warms_up_pinned(monkeypatch):
    server = RoamingServer(movable=False)
    _jit_shares(monkeypatch, server, [0.05, 0.05])
    result = _warm_up(monkeypatch, [1000, 1000], _step(), server, jit_cpu_seconds=0.0)
    assert result["settled"] and not any(r.get("compiler_roamed") for r in result["rounds"])
    assert server.moves == []


def test_a_calibration_round_never_moves_the_compiler(monkeypatch):
    server = RoamingServer()
    _jit_shares(monkeypatch, server, [0.5])
    _warm_up(monkeypatch, [1000], _step(warmup_max_rounds=1), server, jit_cpu_seconds=0.0)
    assert server.moves == []


def test_a_roaming_last_round_does_not_calibrate(monkeypatch):
    # Its CPU readings on the load generator's cores include the compiler's: the calibration runs a
    # round of its own, pinned.
    # The round sends the step's own warm-up requests (100; not --warmup's 5), in the run's time
    # left.
    own, eta = [], object()

    def fake_warm_up(at):
        own.append((at.step.warmup_max_rounds, at.step.warmup_requests, at.bench.options.warmup, at.bench.eta))
        return {"settled": True, "rounds": [{"requests_per_sec": 1000, "complete": 2000,
                                              "server_cpu_ms": 0.5, "load_cpu_ms": 0.1}]}

    monkeypatch.setattr(run_module, "warm_up", fake_warm_up)
    warmup = {"settled": True, "rounds": [{"requests_per_sec": 900, "complete": 1800, "server_cpu_ms": 0.7,
                                           "load_cpu_ms": 0.1, "compiler_roamed": True}]}
    proc = SimpleNamespace(cpu_source="proc")
    options = run_module.RunOptions(timeline_hz=0, warmup=5)
    found = run_module.calibration(unit_step_bench(_step(), proc, pin={"load_cpus": None}, options=options, eta=eta),
                                   warmup, True, {"available_processors": 1})
    assert own == [(1, 100, None, eta)] and found["server_cpu_ms"] == 0.5


def test_the_bound_keeps_only_the_compiler_share_every_calibrating_round_shows(monkeypatch):
    # A burst in one round is over by the measured run; rounds with the compiler off the server's
    # core do not count at all.
    shares = [0.29, 0.01, 0.03]

    def fake_warm_up(*_args, **_kwargs):
        return {"settled": True, "rounds": [{"requests_per_sec": 2500, "complete": 5000, "server_cpu_ms": 0.4,
                                              "load_cpu_ms": 0.1, "jit_share": shares.pop(0), "jit_cpu_ms": 0.01}]}

    monkeypatch.setattr(run_module, "warm_up", fake_warm_up)
    found = run_module.calibration(unit_step_bench(_step(calibration_rounds=3), SimpleNamespace(cpu_source="proc"),
                                              pin={"load_cpus": None}),
                                   None, False, {"available_processors": 1})
    assert found["jit_share"] == 0.01
    read = {"jit_cpu_ms": 0.05}
    assert run_module._lasting_compiler_share([{"jit_share": 0.3, "compiler_roamed": True, **read},
                                               {"jit_share": 0.15, **read}]) == 0.15
    assert run_module._lasting_compiler_share([{"requests_per_sec": 1}]) is None
    # A remote server's share is its elapsed compile time from /pools, and its CPU includes it.
    assert run_module._lasting_compiler_share([{"jit_share": 0.9}]) is None


def _recalibrate(monkeypatch, cpu_ms, warmup):
    """calibration() after `warmup`, its own rounds giving these CPU per request in turn."""
    cpu_ms = list(cpu_ms)
    asked = []

    def fake_warm_up(*_args, **_kwargs):
        ms = cpu_ms.pop(0)
        asked.append(ms)
        return {"settled": True, "rounds": [{"requests_per_sec": 1 / ms * 1000, "complete": 2000,
                                              "server_cpu_ms": ms, "load_cpu_ms": 0.1}]}

    monkeypatch.setattr(run_module, "warm_up", fake_warm_up)
    proc = SimpleNamespace(cpu_source="proc")
    found = run_module.calibration(unit_step_bench(_step(), proc, pin={"load_cpus": None}),
                                   warmup, True, {"available_processors": 1})
    return found, asked


UNSETTLED = {"settled": False, "rounds": [{"requests_per_sec": 1200, "complete": 2400, "server_cpu_ms": 0.83,
                                           "load_cpu_ms": 0.1}]}


def test_an_unsettled_warm_up_is_calibrated_again_until_the_cpu_settles(monkeypatch):
    # The server still getting cheaper: 0.80, then 0.62, then 0.61 ms, which agrees with 0.62.
    found, asked = _recalibrate(monkeypatch, [0.80, 0.62, 0.61, 0.60], UNSETTLED)
    assert asked == [0.80, 0.62, 0.61]
    assert found["server_cpu_ms"] == 0.61  # the latest, not the warm-up's 0.83 nor a median
    assert found["recalibrated"] == {"rounds": 3, "settled": True}


def test_calibrating_again_is_capped_and_says_so(monkeypatch):
    found, asked = _recalibrate(monkeypatch, [0.80, 0.70, 0.60, 0.50], UNSETTLED)
    assert len(asked) == run_module.MAX_RECALIBRATION_ROUNDS
    assert found["server_cpu_ms"] == 0.60 and found["recalibrated"] == {"rounds": 3, "settled": False}


def test_a_settled_warm_up_calibrates_from_its_last_round(monkeypatch):
    settled = {**UNSETTLED, "settled": True}
    found, asked = _recalibrate(monkeypatch, [0.5], settled)
    assert asked == [] and found["server_cpu_ms"] == 0.83 and "recalibrated" not in found


def test_a_warm_up_settled_far_from_the_core_with_one_pinned_round_calibrates_with_its_own(monkeypatch):
    # Lab 03's two rounds: the first with the compiler roaming, the second pinned and agreeing. One
    # pinned round is too few for the least-of-two bounds: a round of the calibration's own follows.
    roamed = {**UNSETTLED["rounds"][0], "compiler_roamed": True}
    far = {"settled": True, "far_from_the_core": True, "rounds": [roamed, UNSETTLED["rounds"][0]]}
    found, asked = _recalibrate(monkeypatch, [0.5], far)
    assert asked == [0.5] and found["server_cpu_ms"] == 0.5
    # With two pinned rounds (lab 01's blocking action settled at its third), none is needed.
    two = {**far, "rounds": [roamed, UNSETTLED["rounds"][0], UNSETTLED["rounds"][0]]}
    found, asked = _recalibrate(monkeypatch, [0.5], two)
    assert asked == [] and found["server_cpu_ms"] == 0.83


def test_an_unsettled_warm_up_whose_cpu_had_settled_is_not_calibrated_again(monkeypatch):
    # The rate or the compiler kept it going, but its last two rounds agree on the CPU per request.
    warmup = {"settled": False, "rounds": [{**UNSETTLED["rounds"][0], "server_cpu_ms": 0.84}, UNSETTLED["rounds"][0]]}
    found, asked = _recalibrate(monkeypatch, [0.5], warmup)
    assert asked == [] and found["server_cpu_ms"] == 0.83 and "recalibrated" not in found


class RecordingTimeline:
    """Stands in for pul.timeline.Timeline: records when it is started and stopped."""

    events: list = []
    unavailable = False

    def __init__(self, base_url, hz):
        self.base_url, self.hz = base_url, hz

    def start(self):
        if RecordingTimeline.unavailable:
            raise run_module.timeline.TimelineUnavailable("no /timeline/start")
        RecordingTimeline.events.append(("timeline started", self.hz))
        return self

    def finish(self):
        RecordingTimeline.events.append(("timeline stopped", self.hz))
        return {}


def _instrumented_warm_up(monkeypatch, step, unavailable=False):
    RecordingTimeline.events, RecordingTimeline.unavailable = [], unavailable
    monkeypatch.setattr(run_module.timeline, "Timeline", RecordingTimeline)

    def fake_run(*_args, poller=None, **_kwargs):
        RecordingTimeline.events.append(("load", poller.url if poller else None))
        return SimpleNamespace(requests_per_sec=100, complete=200), {"cpu_seconds": 1.0, "load_cpu_seconds": 0.1}

    monkeypatch.setattr(run_module, "_run_once", fake_run)
    server = SimpleNamespace(base_url="http://127.0.0.1:1", pools=lambda: {}, alive=lambda: True)
    return run_module.warm_up(unit_step_bench(step, server, options=run_module.RunOptions(timeline_hz=7)))


def test_warm_up_and_calibration_rounds_run_under_the_measured_runs_instruments(monkeypatch):
    # The measured run samples the pools' timeline and polls /status; a round without them would
    # calibrate a server that neither pays for them nor has compiled their paths.
    step = _step(warmup_jit_quiet=None, warmup_max_rounds=1, probe="/status")
    _instrumented_warm_up(monkeypatch, step)
    assert RecordingTimeline.events == [("timeline started", 7), ("load", "http://127.0.0.1:1/status"),
                                        ("timeline stopped", 7)]


def test_a_server_without_a_timeline_still_warms_up(monkeypatch):
    result = _instrumented_warm_up(monkeypatch, _step(warmup_jit_quiet=None, warmup_max_rounds=1), unavailable=True)
    assert RecordingTimeline.events == [("load", None)] and result["settled"]


# A server the driver pinned to one core (CPU 1), its load generator on CPU 0.
ONE_CORE = {"server_cpus": "1", "load_cpus": "0"}


def test_far_from_the_core_two_agreeing_rounds_settle_while_the_jit_compiles(monkeypatch):
    # 0.4 s of CPU in each 2-s round: the requests keep a fifth of the core busy, the compiler a
    # quarter: no compile can raise a rate the core does not bind, so rounds 2 and 3 settle it.
    server = RoamingServer()
    _jit_shares(monkeypatch, server, [0.5, 0.25, 0.25, 0.25])
    step = _step(warmup_jit_quiet=0.10, warmup_max_rounds=8)
    result = _warm_up(monkeypatch, [200, 230, 240, 9999], step, server, cpu_seconds=0.4, jit_cpu_seconds=0.0,
                      pin=ONE_CORE)
    assert result["settled"] and result["far_from_the_core"]
    assert [r["requests_per_sec"] for r in result["rounds"]] == [200, 230, 240]
    assert [r["core_share"] for r in result["rounds"]] == [0.2, 0.2, 0.2]
    # The first round, far from the core, pins the compiler back at once: no round after it roams.
    assert [r.get("compiler_roamed", False) for r in result["rounds"]] == [True, False, False]
    assert server.moves == ["released", "pinned"]
    assert not any("compile_wait_s" in r for r in result["rounds"])


def test_near_the_core_agreeing_rounds_still_wait_for_the_jit(monkeypatch):
    # The same rates with the core busy serving them (2 s of CPU a round): the compiler may still
    # make requests cheaper, so agreeing rounds settle nothing until it is quiet.
    server = RoamingServer()
    _jit_shares(monkeypatch, server, [0.5, 0.25, 0.25, 0.25])
    monkeypatch.setattr(run_module, "MAX_COMPILE_WAIT_SECONDS", 0.0)
    step = _step(warmup_jit_quiet=0.10, warmup_max_rounds=4)
    result = _warm_up(monkeypatch, [200, 230, 240, 245], step, server, cpu_seconds=2.0, jit_cpu_seconds=0.0,
                      pin=ONE_CORE)
    assert result["settled"] is False
    assert [r["core_share"] for r in result["rounds"]] == [1.0, 1.0, 1.0, 1.0]


def test_far_from_the_core_without_room_beside_the_compiler_waits_for_it(monkeypatch):
    # A third of the core for the requests, two thirds for the compiler: it leaves the requests no
    # room, so it can still hold them back; the rates alone settle nothing.
    server = RoamingServer()
    _jit_shares(monkeypatch, server, [0.7, 0.7, 0.7, 0.7])
    monkeypatch.setattr(run_module, "MAX_COMPILE_WAIT_SECONDS", 0.0)
    step = _step(warmup_jit_quiet=0.10, warmup_max_rounds=4)
    result = _warm_up(monkeypatch, [300, 300, 300, 300], step, server, cpu_seconds=2 / 3, jit_cpu_seconds=0.0,
                      pin=ONE_CORE)
    assert result["settled"] is False
    assert all(r["core_share"] <= run_module.FAR_FROM_THE_CORE for r in result["rounds"])


def test_a_warm_up_of_two_rounds_is_never_far_from_the_core(monkeypatch):
    # Lab 03's steps: two rounds, nothing to save; they end unsettled and are calibrated again.
    server = RoamingServer()
    _jit_shares(monkeypatch, server, [0.5, 0.25])
    monkeypatch.setattr(run_module, "MAX_COMPILE_WAIT_SECONDS", 0.0)
    step = _step(warmup_jit_quiet=0.10, warmup_max_rounds=2)
    result = _warm_up(monkeypatch, [200, 210], step, server, cpu_seconds=0.4, jit_cpu_seconds=0.0, pin=ONE_CORE)
    assert result["settled"] is False and "far_from_the_core" not in result


def test_the_compilers_cpu_keeps_what_an_exited_compiler_thread_used(tmp_path, monkeypatch):
    """HotSpot stops an idle dynamic compiler thread: the total must not fall with it, or a round
    of compiles reads as none and its CPU as the requests'."""
    from pul.server import CLOCK_TICKS, Server
    server = Server(tmp_path / "stage", 1, tmp_path / "log", "0", {})

    def task(tid: str, utime: int, stime: int) -> Path:
        folder = tmp_path / "task" / tid
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "stat").write_text(f"{tid} (C2 CompilerThre) S" + " 0" * 10 + f" {utime} {stime}" + " 0" * 30)
        return folder

    alive = [task("11", 300, 100), task("12", 200, 0)]
    monkeypatch.setattr(server, "_compiler_tasks", lambda: alive)
    assert server.jit_cpu_seconds() == pytest.approx(600 / CLOCK_TICKS)
    alive = [task("11", 350, 100)]  # thread 12 exited
    assert server.jit_cpu_seconds() == pytest.approx(650 / CLOCK_TICKS)
