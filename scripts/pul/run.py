"""`scripts/lab run`: build, start, warm up, measure, stop, report."""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import shlex
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import cpulimit, limits, machine, model, playline, profile, report, results, runtimes, timeline, tools
from .ab import BenchRun, LoadResult, nothing_completed
from .wrk import WrkRun
from .checks import parse_cpu_list
from .errors import LabError, NothingCompleted, ServerFailed, UsageError
from .lab import Lab, Services, Step, default_run
from .footprint import FootprintMeter
from .listenq import ListenQueueMeter
from .probe import CLOCK_TICKS, StatusPoller
from .procs import Children, open_private, private_dir, run_id
from .progress import Eta, Progress
from .remote import RemoteServer, Skipped, describe_skipped, server_properties
from .server import Server, build, check_port, free_port, http_fetch, jvm_options
from .watchdog import clean_leftovers


def lock_path() -> Path:
    """One bench lock per machine and user, in the user's private directory (procs.private_dir)."""
    return private_dir() / "bench.lock"


@dataclass
class RunOptions:
    port: int | None = None
    variants: tuple[str, ...] = ()
    rebuild: bool = False
    pin: bool = True
    server_cpus: str | None = None
    load_cpus: str | None = None
    warmup: int | None = None
    time_limit: int = 120
    results_dir: Path | None = None
    write_report: bool = True
    quiet: bool = False
    # --set KEY=VALUE: server settings on top of everything the lab chose.
    settings: dict = field(default_factory=dict)
    # --target URL: load a server `scripts/lab serve` runs (on another machine) instead of our own.
    target: str | None = None
    # The options as typed that choose the server's set-up (lab options, --set): for the
    # `scripts/lab serve` commands a --target run prints for the steps it has to skip.
    setup_options: tuple[str, ...] = ()
    # Time the server's core, and the load generator's, before and after (machine.steadiness): a
    # record for the results; `scripts/lab check` leaves it out, its verdict does not need it.
    steadiness: bool = True
    # Samples a second of the server's pools during the measured runs (pul.timeline); 0: none.
    timeline_hz: int = timeline.DEFAULT_HZ
    # Sample the server's stacks every N ms during the measured runs (pul.profile, --profile); 0: no profile.
    profile_ms: int = 0
    # --cpu-limit: each server in a control group with this quota (pul.cpulimit); None: no limit.
    cpu_limit: cpulimit.Limit | None = None


@dataclass
class Bench:
    """A run's measuring context, built once by run(): the lab and its parameters, the options,
    the cores of the server and of the load generator (parsed once), where the run writes, the
    programs it starts, and how it tells its progress and the time left. Every function that
    warms up, calibrates or measures takes it, or a StepBench made from it."""

    lab: Lab
    params: dict
    options: RunOptions
    pin: dict
    where: Where
    children: Children
    progress: Progress
    eta: Eta | None = None
    # Where the servers' CPU limit is made (options.cpu_limit; None: no limit).
    cpu_hierarchy: cpulimit.Hierarchy | None = None
    server_cpus: set[int] | None = field(init=False)
    load_cpus: set[int] | None = field(init=False)

    def __post_init__(self) -> None:
        self.server_cpus = parse_cpu_list(self.pin["server_cpus"]) if self.pin.get("server_cpus") else None
        self.load_cpus = parse_cpu_list(self.pin["load_cpus"]) if self.pin.get("load_cpus") else None

    def left(self) -> str:
        """The time left, as a progress line's tail ("" before the run's plan is known)."""
        return self.eta.left() if self.eta else ""


@dataclass(frozen=True, eq=False)
class StepBench:
    """One step on the server that runs it, in its run: what warming it up, calibrating it and
    measuring it need."""

    bench: Bench
    step: Step
    server: Server | RemoteServer


def pinning(options: RunOptions) -> dict:
    """Server and load generator on different cores, when there are at least two."""
    cores = os.cpu_count() or 1
    if options.target:
        return {"server_cpus": None, "load_cpus": options.load_cpus if options.pin else None,
                "reason": "remote server (--target): the load generator has this machine to itself"}
    if not options.pin:
        return {"server_cpus": None, "load_cpus": None, "reason": "--no-pin"}
    if cores < 2 and options.server_cpus is None:
        return {"server_cpus": None, "load_cpus": None, "reason": "only one CPU"}
    return {"server_cpus": options.server_cpus or "0",
            "load_cpus": options.load_cpus or "1",
            "reason": "server and load generator on different cores"}


@contextlib.contextmanager
def bench_lock(progress: Progress, why_waiting: str = ""):
    """One measurement at a time per machine: two at once would measure each other."""
    if os.environ.get("PUL_BENCH_LOCK_HELD") == "1":
        yield
        return
    path = lock_path()
    with open_private(path) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress.step(f"waiting for another measurement on this machine to finish (lock {path})"
                          + why_waiting)
            fcntl.flock(handle, fcntl.LOCK_EX)
        os.environ["PUL_BENCH_LOCK_HELD"] = "1"
        try:
            yield
        finally:
            os.environ.pop("PUL_BENCH_LOCK_HELD", None)
            fcntl.flock(handle, fcntl.LOCK_UN)


def select_steps(lab: Lab, params: dict, wanted: tuple[str, ...]) -> list[Step]:
    steps = lab.steps(params)
    declared = {r.name for r in lab.runtimes}
    for step in steps:
        if step.runtime is not None and step.runtime not in declared:
            raise LabError(f"{lab.name}: step {step.name} runs on runtime {step.runtime!r}, which its "
                           f"lab.toml's `runtimes` does not list ({', '.join(sorted(declared)) or 'none'})")
    if not wanted:
        return default_run(steps)
    by_name = {s.name: s for s in steps}
    unknown = [w for w in wanted if w not in by_name]
    if unknown:
        raise UsageError(f"unknown variant(s) {', '.join(unknown)} for lab {lab.name}. "
                         f"Variants: {', '.join(by_name)}")
    # In the order asked for: a repeat can then run right after the step it repeats.
    return [by_name[name] for name in dict.fromkeys(wanted)]


def group_by_server(steps: list[Step]) -> list[tuple[dict, list[Step]]]:
    """Consecutive steps with the same server properties, runtime, CPU limit and JVM options share
    one server start."""
    groups: list[tuple[dict, list[Step]]] = []
    for step in steps:
        last = groups[-1][1][-1] if groups else None
        if (last is not None and groups[-1][0] == step.setup and
                (last.runtime, last.cpu_limit, last.jvm_options) == (step.runtime, step.cpu_limit, step.jvm_options)
                and not step.fresh_server):
            groups[-1][1].append(step)
        else:
            groups.append((step.setup, [step]))
    return groups


class Context:
    """What a lab's services() hook may use."""

    def __init__(self, children: Children, progress: Progress, work_dir: Path):
        self.children = children
        self.progress = progress
        self.work_dir = work_dir


def _start_load(at: StepBench, requests: int, output: Path, tool: str = "ab", seconds: int | None = None,
                round_limit: bool = False) -> BenchRun:
    """Start one run of `tool`. round_limit: `seconds` is a warm-up round's own limit (the step's
    warmup_seconds), which wins over a TIME_LIMIT the step's bench_env gives its runs."""
    bench, step = at.bench, at.step
    runner = {"ab": BenchRun, "wrk": WrkRun}.get(tool)
    if runner is None:
        raise UsageError(f"unknown load tool {tool!r} in step {step.name} (ab or wrk)")
    env = dict(step.extra.get("bench_env") or {})
    if round_limit:
        env.pop("TIME_LIMIT", None)
    seconds = seconds or step.seconds
    extra = {"duration": seconds or 10} if tool == "wrk" else {}
    return runner(bench.children, bench.lab.bench, step.endpoint, at.server.base_url, step.concurrency, requests,
                  seconds or bench.options.time_limit, output, bench.pin["load_cpus"], keep_alive=step.keep_alive,
                  extra_env=env, **extra).start()


def _compiler_cpu(server) -> float | None:
    """The JIT compiler threads' CPU time so far, where the driver reads it itself (a server it
    started; None for a remote one)."""
    reader = getattr(server, "jit_cpu_seconds", None)
    return reader() if reader else None


def _jit_seconds(server: Server, step: Step) -> float:
    """The JIT compiler's running total: its threads' CPU time where the driver can read them (a
    server it started), else the compile time the app's /pools reports (a remote server)."""
    value = _compiler_cpu(server)
    if value is None:
        value = server.pools().get("jit_compile_seconds")
    if value is None:
        raise ServerFailed(f"{step.name} waits for the JIT to go quiet, but the server's /pools does not "
                           "report jit_compile_seconds")
    return float(value)


# The longest the driver leaves a server idle after a warm-up round for its JIT compiler to
# finish what the round queued, and how often it looks.
MAX_COMPILE_WAIT_SECONDS = 5.0
COMPILE_POLL_SECONDS = 0.2


def _let_the_compiler_finish(server, progress: Progress, name: str) -> float:
    """Leave the server without load until its JIT compiler threads stop using CPU (their queue
    is empty), at most MAX_COMPILE_WAIT_SECONDS; returns the seconds waited.

    Under load, on one core, a compiler thread gets about one runnable thread's share of it
    (lab 04: 12-15% for over 60 one-second rounds while the rate kept rising); with the core
    idle it gets all of it, so the same compiles finish several times sooner."""
    started = time.monotonic()
    reading = _compiler_cpu(server)
    while reading is not None and time.monotonic() - started < MAX_COMPILE_WAIT_SECONDS:
        progress.update(f"{name}: the JIT compiler finishes what the round queued "
                        f"({time.monotonic() - started:.1f} s)")
        time.sleep(COMPILE_POLL_SECONDS)
        now = _compiler_cpu(server)
        if now is None or now - reading <= 1 / CLOCK_TICKS:  # idle for a poll, to the readings' resolution
            break
        reading = now
    return round(time.monotonic() - started, 2)


def _round_seconds(step: Step, untimed: float) -> float:
    """A warm-up round's length: its own, else a measured run's, else `untimed` (ab's time limit,
    or a guess for the time left)."""
    return step.warmup_seconds or step.seconds or untimed


def _release_compiler(server) -> bool:
    """Move the JIT compiler threads off the server's cores for the warm-up, where the driver
    can (Server.release_compiler; not a remote server)."""
    release = getattr(server, "release_compiler", None)
    return bool(release and release())


def _pin_compiler_back(server) -> None:
    """After a failed warm-up: pin the compiler threads back with the server, without an error in
    doing so hiding the one that ended the warm-up (the server is stopped next either way)."""
    pin = getattr(server, "pin_compiler", None)
    if pin:
        with contextlib.suppress(ServerFailed):
            pin()


# While the compiler roams, a warm-up round's JIT share below this puts it back with the server
# for the rounds that follow (the step's own warmup_jit_quiet where it has one).
PIN_BACK_JIT_SHARE = 0.10
# A round whose requests kept the server's cores at most this busy is far from the core: its rate
# is what threads, connections and waits allow, which more compiled code cannot raise. The compiler
# goes back with the server at once, and the warm-up settles on two rounds' rates alone, without
# waiting for the JIT to go quiet, as long as serving and compiling together leave the cores
# CORE_ROOM idle: then the compiler takes nothing the requests wait for. (Lab 01's blocking action
# at 0.2 of the core warmed up for 8 rounds, its JIT never below 0.13 of a core.)
FAR_FROM_THE_CORE = 0.40
CORE_ROOM = 0.20


def _core_share(this_round: dict, server_cpus: list[int] | None) -> float | None:
    """The share of the server's cores a round's requests kept busy (the compiler's CPU left out),
    where the driver knows both (a server it pinned)."""
    cpu_ms = this_round.get("server_cpu_ms")
    if not server_cpus or cpu_ms is None:
        return None
    return round(this_round["requests_per_sec"] * cpu_ms / 1000 / len(server_cpus), 3)


@contextlib.contextmanager
def _instruments_as_measured(at: StepBench):
    """Run a warm-up or calibration round under the instruments its measured run will have: the
    pools' timeline sampler and the step's /status poller (yielded, for _run_once to start), their
    readings thrown away. Their requests and threads cost the server CPU, and their first call
    sends it down paths the load never takes (a query string, another route): met first in the
    measured run, they made the JIT compiler throw away the request path's optimised code and
    compile it again there, on lab 05's echo at c=1 with 26% of the core, after a warm-up that
    ended with it idle (0.63-0.78 of the bound against 1.03 with the timeline off)."""
    sampler = _start_timeline(at.bench, at.server, say=False)
    poller = _status_poller(at)
    try:
        yield poller
    finally:
        if poller is not None:
            poller.finish()
        _finish_timeline(sampler, None)


def warm_up(at: StepBench) -> dict | None:
    """Repeat warm-up rounds until two in a row agree (see Step.warmup_settled) and the JIT
    compiler was nearly idle in the last one, or the step is far from the core (FAR_FROM_THE_CORE).
    Returns what each round measured, its CPU per request included: the last round calibrates the
    step (pul.model).

    A warm-up of several rounds first lets the compiler threads run on the load generator's
    cores too (Server.release_compiler): they then finish in seconds what took minutes on the
    server's one core. Once a round leaves them nearly idle, or before the last round allowed,
    they are pinned back, and only a round run that way can settle the warm-up or calibrate."""
    step, server, options, progress = at.step, at.server, at.bench.options, at.bench.progress
    warmup = options.warmup if options.warmup is not None else (
        step.warmup_requests if step.warmup_requests is not None else max(200, step.requests // 5))
    if warmup <= 0:
        return None
    rounds: list[dict] = []
    previous = None
    single = step.warmup_max_rounds == 1
    # The JIT's running total; each round's reading after it is the next round's start. Read for
    # every round where the server tells it: the calibration leaves the compiler's CPU out.
    compiler_cpu = _compiler_cpu(server) is not None
    jit_mark = _jit_seconds(server, step) if step.warmup_jit_quiet is not None or compiler_cpu else None
    pin_back_at = step.warmup_jit_quiet if step.warmup_jit_quiet is not None else PIN_BACK_JIT_SHARE
    moved = not single and compiler_cpu
    roaming = False
    try:
        # Inside the try: a failure partway through moving the threads still pins them back.
        roaming = moved and _release_compiler(server)
        for round_number in range(1, step.warmup_max_rounds + 1):
            what = "calibration round" if single else f"warm-up round {round_number}"
            progress.step(f"{step.name}: {what} ({_round_seconds(step, options.time_limit)} s at most, c={step.concurrency})"
                          + (f"; last: {previous:,.0f} req/s" if previous is not None else "")
                          + (f", JIT threads busy {rounds[-1]['jit_share']:.0%}" if rounds and "jit_share" in rounds[-1] else "")
                          + (", the JIT compiler on every core" if roaming else "")
                          + at.bench.left())
            started = time.monotonic()
            with _instruments_as_measured(at) as poller:
                result, cpu = _run_once(at, warmup, at.bench.where.raw_dir / f"{step.name}.warmup.txt", "ab",
                                        "warm-up", seconds=_round_seconds(step, options.time_limit), poller=poller,
                                        round_limit=step.warmup_seconds is not None)
            this_round = {"requests_per_sec": result.requests_per_sec, "complete": result.complete,
                          **_per_request(cpu, result.complete)}
            if roaming:
                this_round["compiler_roamed"] = True
            if jit_mark is not None:
                jit_now = _jit_seconds(server, step)
                jit_used = max(0.0, jit_now - jit_mark)
                this_round["jit_share"] = round(jit_used / (time.monotonic() - started), 3)
                jit_run = cpu.get("jit_cpu_seconds")
                if compiler_cpu and result.complete and jit_run is not None:
                    # What serving a request costs the core, the compiler's CPU left out: the bound
                    # divides what the compiler leaves of the core by it (pul.model). Both readings
                    # cover the same window (the run); at least one clock tick, the readings'
                    # resolution, so that a request too cheap to measure still bounds the core.
                    serving = max(cpu["cpu_seconds"] - jit_run, 1 / CLOCK_TICKS)
                    this_round["jit_cpu_ms"] = round(jit_run * 1000 / result.complete, 4)
                    this_round["server_cpu_ms"] = round(serving * 1000 / result.complete, 4)
                jit_mark = jit_now
            share = _core_share(this_round, at.bench.server_cpus)
            # Not in a warm-up of two rounds at most: it has no rounds to save, and its unsettled
            # end is what calibrates it again until its CPU per request agrees (lab 03's database
            # bounds, from one pinned round, fell to 0.52-0.63 of what they should be).
            far = share is not None and share <= FAR_FROM_THE_CORE and step.warmup_max_rounds > 2
            if share is not None:
                this_round["core_share"] = share
            rounds.append(this_round)
            rate = result.requests_per_sec
            jit_share = this_round.get("jit_share")
            # Far from the core, with room left beside the compiler (its share is of one core's time).
            room = far and jit_share is not None and share + jit_share / len(at.bench.server_cpus) <= 1 - CORE_ROOM
            # Two empty rounds agree on nothing: a round must complete requests to count.
            settled = single or (not roaming and previous is not None and round_number >= step.warmup_min_rounds
                                 and rate > 0 and abs(rate - previous) <= step.warmup_settled * previous
                                 and (step.warmup_jit_quiet is None or jit_share <= step.warmup_jit_quiet or room))
            if settled:
                waived = (not single and step.warmup_jit_quiet is not None and jit_share is not None
                          and jit_share > step.warmup_jit_quiet)
                return {"settled": True, "rounds": rounds, **({"far_from_the_core": True} if waived else {})}
            previous = rate
            if roaming:
                if (this_round.get("jit_share", 0.0) <= pin_back_at or far
                        or round_number >= step.warmup_max_rounds - 1):
                    server.pin_compiler()
                    roaming = False
                    # The next round's share counts only its own compiles, on the server's cores.
                    jit_mark = _jit_seconds(server, step) if jit_mark is not None else None
            elif (step.warmup_jit_quiet is not None and compiler_cpu and not room
                  and this_round.get("jit_share", 0.0) > step.warmup_jit_quiet):
                this_round["compile_wait_s"] = _let_the_compiler_finish(server, progress, step.name)
                # The next round's share counts only what its own load makes the compiler do.
                jit_mark = _jit_seconds(server, step)
    except BaseException:
        if moved:
            _pin_compiler_back(server)
        raise
    # Not roaming here: the loop pins the compiler back before its last round.
    last = ", ".join(f"{r['requests_per_sec']:,.0f}" for r in rounds[-3:])
    progress.note(f"{step.name}: the warm-up did not settle in {step.warmup_max_rounds} rounds "
                  f"(last rounds: {last} req/s); measuring anyway, the results record it")
    return {"settled": False, "rounds": rounds}


def _per_request(cpu: dict, complete: int) -> dict:
    """A run's server and load-generator CPU per request, in ms; and, where the driver reads the
    load generator's cores, all the CPU spent on them per request (ab, the driver, a database
    that shares them)."""
    if not complete:
        return {"server_cpu_ms": None, "load_cpu_ms": None}
    found = {"server_cpu_ms": round(cpu["cpu_seconds"] * 1000 / complete, 4),
             "load_cpu_ms": round(cpu["load_cpu_seconds"] * 1000 / complete, 4)}
    if cpu.get("load_cores_cpu_seconds") is not None:
        found["load_cores_cpu_ms"] = round(cpu["load_cores_cpu_seconds"] * 1000 / complete, 4)
    return found


def calibration(at: StepBench, warmup: dict | None, fresh: bool, pools: dict) -> dict | None:
    """CPU per request of the server and the load generator, from the last round run at this
    step's settings before its measured run: the step's last warm-up round if nothing ran since
    (`fresh`), else one round more. Its spread: the last two rounds."""
    step, server, bench = at.step, at.server, at.bench
    if not step.calibrate:
        return None
    rounds = list((warmup or {}).get("rounds", []))
    chosen = None
    # An unsettled warm-up left the server short of its steady state: its last round would
    # calibrate the step off it (a variant measured at 1.33 of its bound, its CPU per request 26%
    # below the calibration's). Calibrate again until the server's CPU per request settles.
    # Not where the warm-up's own last rounds already agree on it (the rate or the compiler kept the
    # warm-up going, but the CPU per request the model uses had settled).
    unsettled = (warmup is not None and warmup.get("settled") is False
                 and not _cpu_settled([r for r in rounds if not r.get("compiler_roamed")], step.warmup_settled))
    # A warm-up settled far from the core (on its rates, the JIT still busy) may leave a single
    # round with the compiler pinned: too few to calibrate the bounds a step near its database's
    # or load generator's core needs (the least of the last two rounds below). Lab 03's two-round
    # warm-ups calibrated so landed at 0.52-0.69 of their database bound, against 0.74-1.15 in 28
    # runs before.
    thin = (warmup is not None and warmup.get("far_from_the_core")
            and len([r for r in rounds if not r.get("compiler_roamed")]) < 2)
    # A round with the compiler on the load generator's cores counted its CPU there too.
    if not fresh or not rounds or rounds[-1].get("compiler_roamed") or unsettled or thin:
        # ab refuses fewer requests than its concurrency; twice as many keep the round's drain short.
        requests = max(step.calibration_requests or step.warmup_requests or max(200, step.requests // 5),
                       2 * step.concurrency)
        # One round at a time, each of the step's own calibration requests (not --warmup's).
        one = replace(at, step=replace(step, warmup_max_rounds=1, warmup_requests=requests),
                      bench=replace(bench, options=replace(bench.options, warmup=None)))
        own = []
        for _ in range(max(1, step.calibration_rounds) if not unsettled else MAX_RECALIBRATION_ROUNDS):
            extra = warm_up(one)
            own += (extra or {}).get("rounds", [])
            if unsettled and _cpu_settled(own, step.warmup_settled):
                break
        rounds += own
        # After an unsettled warm-up the server is still getting cheaper: its latest round is the
        # nearest to the measured run; otherwise the median round, against a round's noise.
        chosen = (own[-1] if own else None) if unsettled else median_round(own)
        if unsettled:
            bench.progress.note(f"{step.name}: calibrated again after the unsettled warm-up: {len(own)} round(s), "
                          + ("the server's CPU per request settled" if _cpu_settled(own, step.warmup_settled)
                             else "its CPU per request still moving; the results record it"))
    last = [r for r in rounds if not r.get("compiler_roamed")][-max(2, step.calibration_rounds):]
    last = [r for r in last if r.get("server_cpu_ms") is not None]
    if not last:
        return None
    chosen = chosen or last[-1]
    tool_threads = model.TOOL_THREADS.get(step.load_tools[0], 1)
    load_cores = min(tool_threads, len(bench.load_cpus)) if bench.load_cpus else tool_threads
    # Cores the server may use: as its JVM sees them (-XX:ActiveProcessorCount, a container's quota
    # rounded up), and no more than a CPU limit's quota allows (0.5: half a core's time).
    server_cores = pools.get("available_processors")
    limit = cpu_limit_of(bench, step)
    # A limit binds where it is below those cores (model.limit_binds reads it from the calibration).
    binding = limit if server_cores and limit and limit.cpus < server_cores else None
    if binding:
        server_cores = binding.cpus
    # The load generator's cores' CPU per request (ab, the driver, a database sharing them): the
    # least of the calibrating rounds. A round on a core the host slowed, or one still paying for
    # the step's start (new connections, cold backends), reads more than a request costs, and none
    # reads less: one such round put lab 03's database bound at 184 req/s for a step that then
    # served 256, between steps bound at 266 and 323.
    shared = [r["load_cores_cpu_ms"] for r in last if r.get("load_cores_cpu_ms")]
    return {
        "server_cpu_ms": chosen["server_cpu_ms"], "load_cpu_ms": chosen["load_cpu_ms"],
        "server_cores": server_cores if server.cpu_source else None, "load_cores": load_cores,
        **({"cpu_limit": binding.cpus} if binding else {}),
        "requests_per_sec": chosen["requests_per_sec"],
        "load_cores_cpu_ms": min(shared) if shared else chosen.get("load_cores_cpu_ms"),
        **({"load_cores_cpu_ms_spread": [min(shared), max(shared)]} if shared else {}),
        "jit_share": _lasting_compiler_share(last),
        "server_cpu_ms_spread": [min(r["server_cpu_ms"] for r in last), max(r["server_cpu_ms"] for r in last)],
        "load_cpu_ms_spread": [min(r["load_cpu_ms"] for r in last), max(r["load_cpu_ms"] for r in last)],
        "rounds": len(last),
        # After an unsettled warm-up: whether the rounds calibrating again agreed (_cpu_settled).
        **({"recalibrated": {"rounds": len(own), "settled": _cpu_settled(own, step.warmup_settled)}}
           if unsettled else {}),
    }


# After an unsettled warm-up, calibration rounds repeat until the server's CPU per request agrees
# in two in a row, at most this many.
MAX_RECALIBRATION_ROUNDS = 3


def _cpu_settled(rounds: list[dict], within: float) -> bool:
    """Whether the last two rounds' server CPU per request agree within `within` (a share)."""
    known = [r["server_cpu_ms"] for r in rounds if r.get("server_cpu_ms")]
    return len(known) >= 2 and abs(known[-1] - known[-2]) <= within * known[-2]


def _lasting_compiler_share(rounds: list[dict]) -> float | None:
    """The JIT compiler's share of the server's cores that will last into the measured run: the
    least of the calibrating rounds run with it pinned. A burst of compiles in one round that
    the next does not repeat is over (lab 05's c=1 calibrated 29% in one of three rounds, and
    its measured run had none); a share that every round shows goes on."""
    # Only where the driver read the compiler threads' CPU (jit_cpu_ms): a remote server's share is
    # its compile time from /pools, elapsed rather than CPU, and its server CPU includes it.
    shares = [r["jit_share"] for r in rounds
              if r.get("jit_share") is not None and "jit_cpu_ms" in r and not r.get("compiler_roamed")]
    return min(shares) if shares else None


def median_round(rounds: list[dict]) -> dict | None:
    """The round with the median server CPU per request (the lower middle of an even count);
    None when no round tells it."""
    told = sorted((r for r in rounds if r.get("server_cpu_ms") is not None), key=lambda r: r["server_cpu_ms"])
    return told[(len(told) - 1) // 2] if told else None


def _idle_seconds(cpus: set[int] | None) -> float | None:
    """Idle time so far of these cores (/proc/stat): tells a server that waited from one whose
    core other programs took."""
    if cpus is None:
        return None
    wanted = {f"cpu{n}" for n in cpus}
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    ticks = sum(int(f[4]) + int(f[5]) for f in (line.split() for line in lines) if f and f[0] in wanted)
    return ticks / CLOCK_TICKS


def _idle_share(before: float | None, after: float | None, elapsed: float,
                cpus: set[int] | None) -> float | None:
    """Share of these cores' time spent idle between two _idle_seconds readings (None: unknown)."""
    if before is None or after is None or elapsed <= 0:
        return None
    cores = len(cpus) if cpus else 1
    return round((after - before) / (elapsed * cores), 2)


def _busy_seconds(idle_before: float | None, idle_after: float | None, elapsed: float,
                  cpus: set[int] | None) -> float | None:
    """CPU time these cores spent on anything between two _idle_seconds readings (None: unknown)."""
    if idle_before is None or idle_after is None or elapsed <= 0:
        return None
    cores = len(cpus) if cpus else 1
    return round(max(0.0, elapsed * cores - (idle_after - idle_before)), 3)


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_once(at: StepBench, requests: int, output: Path, tool: str, what: str, seconds: int | None = None,
              poller: StatusPoller | None = None, round_limit: bool = False) -> tuple[LoadResult, dict]:
    """One run of a load tool, with the CPU the server and the load generator used meanwhile."""
    bench, step, server = at.bench, at.step, at.server
    cpu_before, jit_before, clock_before = server.cpu_seconds(), _compiler_cpu(server), time.monotonic()
    load_before, idle_before = _children_cpu_seconds(), _idle_seconds(bench.server_cpus)
    load_idle_before = _idle_seconds(bench.load_cpus)
    main = _start_load(at, requests, output, tool, seconds, round_limit)
    if poller and not poller.is_alive():
        poller.start()
    main.wait(bench.progress, server.alive, what)
    cpu_used, elapsed = server.cpu_seconds() - cpu_before, time.monotonic() - clock_before
    jit_after = _compiler_cpu(server)
    # ab/wrk have been waited for: their CPU time is now in RUSAGE_CHILDREN.
    load_used = _children_cpu_seconds() - load_before
    idle_after = _idle_seconds(bench.server_cpus)
    load_idle_after = _idle_seconds(bench.load_cpus)
    load_idle = _idle_share(load_idle_before, load_idle_after, elapsed, bench.load_cpus)
    _check_alive(server, step)
    try:
        result = main.result()
    except NothingCompleted:
        if what != "warm-up":
            raise
        result = nothing_completed(tool)
    _let_abandoned_requests_finish(at, result, requests, main.time_limit, what)
    return result, {
        "cpu_seconds": round(cpu_used, 3),
        # The compiler threads' share of cpu_seconds, read in the same window (None: unknown).
        "jit_cpu_seconds": (round(min(cpu_used, max(0.0, jit_after - jit_before)), 3)
                            if jit_before is not None and jit_after is not None else None),
        "utilization": round(cpu_used / elapsed, 2) if elapsed > 0 else None,
        "load_cpu_seconds": round(load_used, 3),
        "load_utilization": round(load_used / elapsed, 2) if elapsed > 0 else None,
        "server_cores_idle": _idle_share(idle_before, idle_after, elapsed, bench.server_cpus),
        # Everything on the load generator's cores (ab, the driver, a lab's database).
        "load_cores_busy": None if load_idle is None else round(1 - load_idle, 2),
        "load_cores_cpu_seconds": _busy_seconds(load_idle_before, load_idle_after, elapsed, bench.load_cpus)}


# The longest the driver waits for a server to finish the requests a time-limited run left behind.
MAX_DRAIN_SECONDS = 15.0


def drain_seconds(concurrency: int, result: LoadResult, requests: int, round_seconds: float) -> float:
    """How long the server needs for the requests a run stopped by its time limit left in flight.
    ab (or wrk) closes up to `concurrency` connections at its limit, but the server still runs
    what they asked for; by Little's law it works them off at about the rate it served the run:
    concurrency / rate. A run that completed nothing tells no rate: wait a run's length."""
    if result.complete >= requests:
        return 0.0
    wait = concurrency / result.requests_per_sec if result.requests_per_sec > 0 else round_seconds
    return min(wait, MAX_DRAIN_SECONDS)


def _let_abandoned_requests_finish(at: StepBench, result: LoadResult, requests: int, round_seconds: float,
                                   what: str) -> None:
    """Wait until the requests a time-limited run left behind are done, so that the next round
    or run starts on an idle server and its rate and CPU are its own: on a slow pool those
    requests would otherwise queue ahead of the next round's (lab 02's common pool served
    none of a 2-second warm-up round that started behind them)."""
    server = at.server
    wait = drain_seconds(at.step.concurrency, result, requests, round_seconds)
    if wait < 0.05:
        return
    at.bench.progress.update(f"{what}: the server finishes the requests left in flight ({wait:.1f} s)")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if not server.alive():
            return
        time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))


class Runs:
    """The measured runs of one step, as they are made (one at a time when steps interleave),
    with the compiler's CPU and the seconds they took, for the step's JIT share."""

    def __init__(self, at: StepBench):
        self.at, self.step, self.server = at, at.step, at.server
        self.made: list[tuple[LoadResult, dict, Path, str, int]] = []
        self.jit_seconds: float | None = 0.0 if _compiler_cpu(self.server) is not None else None
        self.seconds = 0.0
        # One ab run and nothing else: its output is the variant's own, with no `runs` list.
        self.single = self.step.repeat == 1 and tuple(self.step.load_tools) == ("ab",)

    def make(self, repetition: int, poller: StatusPoller | None = None) -> None:
        """Run `repetition` of the step: once with each of its load tools."""
        step, single, bench = self.step, self.single, self.at.bench
        for tool in step.load_tools:
            what = f"{step.seconds} s" if step.seconds else f"{step.requests} requests"
            bench.progress.step(f"{step.name}: measuring with {tool}"
                                + ("" if single else f", run {repetition}/{step.repeat}")
                                + f" ({what}, c={step.concurrency})" + bench.left())
            output = bench.where.raw_dir / (f"{step.name}.ab.txt" if single
                                            else f"{step.name}.{tool}.{repetition}.txt")
            jit_before, clock_before = _compiler_cpu(self.server), time.monotonic()
            result, cpu = _run_once(self.at, step.requests, output, tool, "measured run",
                                    poller=None if self.made else poller)
            self.seconds += time.monotonic() - clock_before
            if self.jit_seconds is not None and jit_before is not None:
                self.jit_seconds += max(0.0, (_compiler_cpu(self.server) or jit_before) - jit_before)
            self.made.append((result, cpu, output, tool, repetition))

    def summary(self, raw_dir: Path, steal_share: float | None) -> tuple[LoadResult, dict, list[dict]]:
        """The variant's numbers: the median run of the first tool, its CPU, and every run as a dict."""
        step, single = self.step, self.single
        first_tool = [r for r in self.made if r[3] == step.load_tools[0]]
        result, cpu, output, _, _ = sorted(first_tool, key=lambda r: r[0].requests_per_sec)[(len(first_tool) - 1) // 2]
        jit_share = (round(self.jit_seconds / self.seconds, 3)
                     if self.jit_seconds is not None and self.seconds > 0 else None)
        cpu = {**cpu, "output": output, "steal_share": steal_share, "jit_share": jit_share}
        records = [] if single else [run_record(*r, raw_dir.parent) for r in self.made]
        return result, cpu, records


def measure(at: StepBench) -> tuple[LoadResult, dict | None, dict, list[dict]]:
    """Every run of a step (repeat x load_tools); the variant's numbers come from the median
    run of the first tool. Returns (that run, probe, its CPU, every run as a dict)."""
    step, server, bench = at.step, at.server, at.bench
    raw_dir = bench.where.raw_dir
    poller = _status_poller(at)
    steal = machine.StealMeter()
    runs = Runs(at)
    queue = _listen_queue_meter(at)
    throttling = _throttling_meter(bench, server)
    footprint = (FootprintMeter(server.child.pid).start()
                 if step.watch_footprint and isinstance(server, Server) and server.child else None)
    pools_timeline = _start_timeline(bench, server)
    profiler = _start_profile(bench, server)
    measured = False
    try:
        for repetition in range(1, step.repeat + 1):
            runs.make(repetition, poller)
        measured = True
    finally:
        listen_queue = queue.finish() if queue else None
        footprint_record = footprint.finish() if footprint else None
        timeline_record = _finish_timeline(pools_timeline, bench.progress)
        folded = _finish_profile(profiler, measured)
        throttled = throttling.finish() if throttling else None
    probe = poller.finish() if poller else None
    result, cpu, records = runs.summary(raw_dir, steal.share())
    if listen_queue is not None:
        cpu["listen_queue"] = listen_queue
    if footprint_record is not None:
        cpu["footprint"] = footprint_record
    if timeline_record is not None:
        cpu["timeline"] = timeline_record
    if folded is not None:
        cpu["profile"] = _keep_profile(step, folded, raw_dir)
    if throttled is not None:
        cpu["cpu_limit"] = throttled
    return result, probe, cpu, records


class ThrottlingMeter:
    """What the CPU limit did during the measured runs: its periods, how many ran out of quota
    (throttled), and the time the group's threads waited for the next period (cpu.stat); with a
    timeline (hz), the same over time. Its group's cpu.stat is found once, when it starts; a
    reading the server's end made impossible leaves the step without the record, not the run
    without its error."""

    def __init__(self, group: cpulimit.Group, stat_file: Path, hz: int = 0):
        self.group, self.stat_file = group, stat_file
        self.before = cpulimit.read_stats(stat_file)
        self.sampler = cpulimit.Sampler(stat_file, hz).start() if hz else None

    def finish(self) -> dict | None:
        series = self.sampler.finish(timeline.MAX_POINTS) if self.sampler else None
        try:
            after = cpulimit.read_stats(self.stat_file)
        except OSError:
            return None
        found = {**self.group.limit.record(), **cpulimit.difference(self.before, after)}
        if series is not None:
            found["timeline"] = series
        return found


def _throttling_meter(bench: Bench, server) -> ThrottlingMeter | None:
    group = getattr(server, "cpu_group", None)
    if group is None or not server.child:
        return None
    try:
        return ThrottlingMeter(group, group.stat_file(server.child.pid), bench.options.timeline_hz)
    except OSError:
        return None  # the server is gone: the step's own check says so


def _start_profile(bench: Bench, server) -> profile.Profile | None:
    """The server's profiler, started (None: no --profile). A server without one fails the run:
    the user asked for the flame graphs."""
    if not bench.options.profile_ms:
        return None
    try:
        return profile.Profile(server.base_url, bench.options.profile_ms, cpu=server.cpu_seconds).start()
    except profile.ProfileUnavailable as error:
        raise LabError(f"--profile: {error}") from None


def _prime_profiler(bench: Bench, server) -> None:
    """With --profile, one recording taken and thrown away before the warm-up. A JVM's first JFR
    recording costs it far more than the ones after: the recorder starts, its classes load and
    compile (measured on lab 04: several seconds at a fraction of the throughput). Done here, that happens while the warm-up waits for the JIT
    to go quiet, not during a measured run."""
    if bench.options.profile_ms:
        bench.progress.step("starting the server's flight recorder once before the warm-up (--profile)")
        _finish_profile(_start_profile(bench, server), True)


def _finish_profile(profiler: profile.Profile | None, measured: bool) -> profile.Folded | None:
    """The profile's stacks; after runs that failed, only the recording stopped (their error is
    the one to report)."""
    if profiler is None:
        return None
    try:
        return profiler.finish()
    except profile.ProfileUnavailable as error:
        if measured:
            raise LabError(f"--profile: {error}") from None
        return None


def _keep_profile(step: Step, folded: profile.Folded, raw_dir: Path) -> dict:
    """Write a step's folded stacks beside its raw output; its `profile` for the results."""
    path = raw_dir / f"{step.name}.folded.gz"
    profile.write(folded, path)
    return profile.summarise(folded, str(path.relative_to(raw_dir.parent)))


def _start_timeline(bench: Bench, server, say: bool = True) -> timeline.Timeline | None:
    """The server's pool sampler, started (None: turned off, or the server has none, which the
    run notes where `say`)."""
    if not bench.options.timeline_hz:
        return None
    try:
        return timeline.Timeline(server.base_url, bench.options.timeline_hz).start()
    except timeline.TimelineUnavailable as error:
        if say:
            bench.progress.note(f"no timeline of the pools for this step: {error}")
        return None


def _finish_timeline(sampler: timeline.Timeline | None, progress: Progress | None) -> dict | None:
    """The sampler's timeline (None where it has none; a failure noted, unless `progress` is None)."""
    if sampler is None:
        return None
    try:
        return sampler.finish()
    except timeline.TimelineUnavailable as error:
        if progress is not None:
            progress.note(f"no timeline of the pools for this step: {error}")
        return None


def _status_poller(at: StepBench) -> StatusPoller | None:
    """The step's /status poller, not started (None: the step has no probe)."""
    return StatusPoller(at.server.base_url + at.step.probe) if at.step.probe else None


def _listen_queue_meter(at: StepBench) -> ListenQueueMeter | None:
    """A started meter of the server's listen queue, where the step asks for one and this machine
    can see the server's socket (a server the driver started here, `ss` installed)."""
    if not at.step.watch_listen_queue or not isinstance(at.server, Server) or not ListenQueueMeter.available():
        return None
    return ListenQueueMeter(at.server.port, at.bench.pin.get("load_cpus")).start()


def run_record(result: LoadResult, cpu: dict, output: Path, tool: str, repetition: int, results_dir: Path) -> dict:
    """One measured run, as kept under a variant's extra["runs"]."""
    return {
        "tool": tool, "repetition": repetition, "command": result.command,
        "requests_per_sec": result.requests_per_sec, "complete": result.complete,
        "duration_s": result.duration_s, "mean_ms": result.mean_ms, "p50_ms": result.pct(50),
        "p99_ms": result.pct(99), "max_ms": result.pct(100), "failed": result.failed,
        "non_2xx": result.non_2xx,
        "server_cpu_seconds": cpu["cpu_seconds"], "server_cpu_utilization": cpu["utilization"],
        "server_cpu_us_per_request": round(cpu["cpu_seconds"] * 1e6 / result.complete, 2)
        if result.complete else None,
        "load_cpu_seconds": cpu["load_cpu_seconds"], "load_cpu_utilization": cpu["load_utilization"],
        # Share of the server's cores left idle: low with low server utilisation = others took them.
        "server_cores_idle": cpu["server_cores_idle"],
        "load_cores_busy": cpu.get("load_cores_busy"),
        "output": str(output.relative_to(results_dir)),
    }


def _check_alive(server: Server, step: Step) -> None:
    if not server.alive():
        raise ServerFailed(f"the server stopped during {step.name}. Last lines of its log "
                           f"({server.log_path}):\n{server.log_tail()}")


def variant_record(bench: Bench, step: Step, result: LoadResult, probe: dict | None, cpu: dict, pools: dict,
                   calibrated: dict | None = None) -> dict:
    """A step's record in the results: what its runs measured, and what the model predicted from
    the lab's bound and the calibration."""
    raw_dir, results_dir = bench.where.raw_dir, bench.where.results_dir
    prediction = model.combine(bench.lab.predict(step, pools, bench.params), calibrated, step.concurrency,
                               open_loop="RATE" in (step.extra.get("bench_env") or {}))
    predicted = prediction.requests_per_sec
    record = {
        "name": step.name,
        "concurrency": step.concurrency,
        "requests": step.requests,
        "complete": result.complete,
        "requests_per_sec": result.requests_per_sec,
        "mean_ms": result.mean_ms,
        "p50_ms": result.pct(50),
        "p90_ms": result.pct(90),
        "p99_ms": result.pct(99),
        "max_ms": result.pct(100),
        "failed": result.failed,
        "non_2xx": result.non_2xx,
        "errors": result.errors,
        "duration_s": result.duration_s,
        "predicted_requests_per_sec": predicted,
        "measured_over_predicted": round(result.requests_per_sec / predicted, 3) if predicted else None,
        # A range's upper end (pul.model.CONVOY), else None.
        "predicted_upper_requests_per_sec": prediction.upper,
        "prediction": prediction.explanation,
        # The resource the prediction is the bound of, and every bound the model knows.
        "bound_by": prediction.bound_by,
        "bounds": prediction.bounds,
        "bounds_arithmetic": prediction.arithmetic,
        "calibration": calibrated,
        "pool": step.pool,
        "pool_threads": pools["pools"][step.pool]["threads"] if step.pool else None,
        "service_ms": prediction.service_ms if prediction.service_ms is not None else step.service_ms,
        "server_properties": step.setup,
        # The Java runtime the server ran on (pul.runtimes; None: the JDK on PATH, machine.jdk).
        "runtime": step.runtime,
        "ab_command": result.command,
        "ab_output": str(cpu.get("output", raw_dir / f"{step.name}.result.txt").relative_to(results_dir)),
        "ab_mean_ms": result.ab_mean_ms,
        "ab_time_per_request_ms": result.ab_time_per_request_ms,
        # Server CPU during the measured run: utilisation 1.0 per core it may use.
        "server_cpu_seconds": cpu["cpu_seconds"],
        "server_cpu_utilization": cpu["utilization"],
        "server_cpu_ms_per_request": round(cpu["cpu_seconds"] * 1000 / result.complete, 3) if result.complete else None,
        "load_cpu_ms_per_request": round(cpu["load_cpu_seconds"] * 1000 / result.complete, 3) if result.complete else None,
        # Share of the load generator's cores busy with anything (None: not pinned).
        "load_cores_busy": cpu.get("load_cores_busy"),
        # The machine while this step ran: its 1-minute load average just before, and the share
        # of all CPU time the hypervisor gave to other guests (steal) during the measured runs.
        "load_average_before": cpu.get("load_average_before"),
        "cpu_steal_share": cpu.get("steal_share"),
        # The share of the server's core the JIT compiler's threads used during the measured runs.
        "jit_share": cpu.get("jit_share"),
        "probe": None if probe is None else {"path": step.probe, **probe},
        "extra": {**{k: v for k, v in step.extra.items() if k != "bench_env"}, **prediction.facts},
    }
    if cpu.get("listen_queue") is not None:
        record["listen_queue"] = cpu["listen_queue"]
    if cpu.get("footprint") is not None:
        record["footprint"] = cpu["footprint"]
    if cpu.get("timeline") is not None:
        record["timeline"] = cpu["timeline"]
    if cpu.get("profile") is not None:
        record["profile"] = cpu["profile"]
    if cpu.get("cpu_limit") is not None:
        record["cpu_limit"] = cpu["cpu_limit"]
    return record


def cpu_limit_record(limit: cpulimit.Limit | None, hierarchy: cpulimit.Hierarchy | None) -> dict | None:
    """The run's CPU limit as its results record it (None: no limit)."""
    if limit is None:
        return None
    return {**limit.record(), "processors": limit.processors, "cgroup": hierarchy.kind if hierarchy else None}


def run(lab: Lab, params: dict, options: RunOptions, argv: list[str]) -> dict:
    """Measure the lab's chosen variants; write, print and return the results."""
    clean_leftovers()
    progress = Progress(quiet=options.quiet)
    children = Children()
    token = run_id()
    started = results.utc_now()
    remote = RemoteServer(options.target) if options.target else None
    steps, skipped = _chosen_steps(lab, params, options, remote, progress)
    if options.port is not None:
        check_port(options.port)
    found = _tools_and_limits(lab, steps, options, remote, progress)
    # A machine that cannot limit the server's CPU says so now, not after the build.
    limited = options.cpu_limit or any(step.cpu_limit for step in steps)
    cpu_hierarchy = cpulimit.find_hierarchy() if limited and not remote else None
    pin = pinning(options)
    if pin["load_cpus"] is not None:
        # The driver's own polling belongs with the load generator, off the server's core.
        os.sched_setaffinity(0, parse_cpu_list(pin["load_cpus"]))
    results_dir = options.results_dir or playline.results_dir(lab.dir)
    run_stamp = results.stamp(started)
    where = Where(results_dir, results_dir / run_stamp, lab.dir / "target" / "pul")
    # `scripts/lab serve` holds the lock as long as it serves: on the same machine, this run would wait.
    same_machine = remote and remote.host in ("127.0.0.1", "::1", "localhost")
    try:
        with bench_lock(progress, ". If that is `scripts/lab serve`, it holds the lock while it serves: "
                        "load it from another machine" if same_machine else ""):
            # Once the machine is ours, before the build: is it quiet? And the run's time starts here,
            # not while it waited for another measurement to finish.
            load_at_start = machine.load_average()
            busy = machine.busy_warning(load_at_start)
            if busy:
                progress.note("warning: " + busy)
            measuring_since = results.utc_now()
            bench = Bench(lab, params, options, pin, where, children, progress, cpu_hierarchy=cpu_hierarchy)
            pools, variants, steadiness, spent = _measure_all(bench, steps, remote)
    except BaseException:
        # A run that did not finish leaves no raw output beside the committed run's (Ctrl-C, a failure).
        shutil.rmtree(where.raw_dir, ignore_errors=True)
        raise
    finally:
        children.stop_all()
    progress.clear()
    finished = results.utc_now()
    data = {
        "schema_version": results.SCHEMA_VERSION,
        "lab": lab.name,
        "title": lab.title,
        "started_at": results.iso(started),
        "finished_at": results.iso(finished),
        "duration_s": int((finished - measuring_since).total_seconds()),
        "waited_for_lock_s": int((measuring_since - started).total_seconds()),
        # Where duration_s went: the build, the services, each server's start and stop, each
        # step's warm-up and measurement (its calibration included), in the order they ran.
        "phase_seconds": spent,
        "command": "scripts/lab " + " ".join(shlex.quote(a) for a in argv),
        "run_id": token,
        "machine": {**machine.facts(lab.dir, pin, found.get("ab"), load_at_start),
                    # What the server says it runs (/pools), also when it runs on another machine.
                    **{key: pools[key] for key in ("play", "actors") if pools.get(key)},
                    # The JVM as the server saw it: its cores (/pools) and what HotSpot chose.
                    "server_available_processors": pools.get("available_processors"),
                    **(steadiness or {"steadiness": None}),
                    "server_jvm": None if remote else machine.jvm_flags("java", list(jvm_options(pin["server_cpus"]))),
                    # The newer Java runtimes some of the servers ran on (Step.runtime), as on server_jvm.
                    **({"runtimes": runtime_facts({s.runtime for s in steps}, pin)} if not remote and
                       any(s.runtime for s in steps) else {})},
        # "default" (a workshop's few minutes) or "thorough" (the lab's longer run, for the book).
        "mode": params.get("mode", "default"),
        "params": params,
        "settings": options.settings,
        "target": remote.base_url if remote else None,
        "server_cpu_source": (remote or Server).cpu_source,
        # The CPU limit each server ran under (--cpu-limit; None: none).
        "cpu_limit": cpu_limit_record(options.cpu_limit, cpu_hierarchy),
        "pools": pools,
        "variants": variants,
    }
    if remote:
        data["skipped_variants"] = [s.record() for s in skipped]
    _write_and_print(lab, data, options, where, run_stamp, remote, skipped)
    return data


@dataclass(frozen=True)
class Where:
    """Where a run writes: its results, its raw load-tool output, its servers' logs."""

    results_dir: Path
    raw_dir: Path
    work_dir: Path


def _chosen_steps(lab: Lab, params: dict, options: RunOptions, remote: RemoteServer | None,
                  progress: Progress) -> tuple[list[Step], list[Skipped]]:
    """The steps --variant chose; with --target, only those the remote server is set up for."""
    steps = select_steps(lab, params, options.variants)
    if not remote:
        return steps, []
    steps, skipped = remote.split_steps(lab, params, steps, options.settings, remote.pools(),
                                        list(options.setup_options))
    if skipped:
        progress.note(f"running {', '.join(s.name for s in steps)} only; skipping:\n"
                      + describe_skipped(skipped))
    return steps, skipped


def _tools_and_limits(lab: Lab, steps: list[Step], options: RunOptions, remote: RemoteServer | None,
                      progress: Progress) -> dict[str, str]:
    """Every tool the run needs, found (or installed) before any measuring; the open-files limit."""
    # gnuplot draws the book's figures after the run: check for it before an hour of measuring.
    draws_figures = options.write_report and options.results_dir is None and playline.current() != "3"
    needed = tuple(lab.tools_needed) + ((tools.GNUPLOT,) if draws_figures else ())
    if remote:
        # No build, no server, no database here: only the load generators (and taskset for --load-cpus).
        needed = tuple(t for t in needed if t in (tools.AB, tools.WRK, tools.GNUPLOT)) + (
            (tools.TASKSET,) if options.load_cpus and options.pin else ())
    found = tools.ensure(needed, progress)
    if not remote:
        runtimes.ensure({s.runtime for s in steps}, progress)
    if options.profile_ms:
        # What draws the flame graphs after the run (installed once).
        profile.inferno(progress.step)
    # Each connection is a file descriptor in the load generator and in the server; both inherit
    # this process's limit, so raise it before starting them (and say so, or say why not).
    limit_note = limits.raise_open_files(max((s.concurrency for s in steps), default=0) + 1024)
    if limit_note:
        progress.note(limit_note)
    return found


def runtime_facts(names: set, pin: dict) -> dict:
    """{runtime: its JDK and what HotSpot chose there, as machine.server_jvm records the default}."""
    found = {}
    for name in sorted(n for n in names if n):
        home = runtimes.installed(runtimes.RUNTIMES[name])
        if home is not None:
            found[name] = {"jdk": machine.jdk_version(str(home / "bin" / "java")),
                           "jvm": machine.jvm_flags(str(home / "bin" / "java"), list(jvm_options(pin["server_cpus"])))}
    return found


# Seconds a server takes to start and answer (a staged Play server on one core: 6-14 s).
SERVER_START_SECONDS = 10
# A measured run without a time limit of its own: a guess for the time left.
UNTIMED_RUN_SECONDS = 6


def plan(steps: list[Step], options: RunOptions, probes: int = 1) -> list[tuple[str, float]]:
    """The run's phases and their expected seconds, for the time left (pul.progress.Eta): warm-up
    rounds at their minimum count, one calibration round where a group has several steps; `probes`
    steadiness probes before and after (one per core set, probed_cores)."""
    steadiness_phases = ([("steadiness", machine.STEADINESS_SECONDS * probes)] if _times_steadiness(options)
                         else [])
    phases: list[tuple[str, float]] = list(steadiness_phases)
    for number, (_, group) in enumerate(group_by_server(steps)):
        phases.append((f"start {number}", SERVER_START_SECONDS))
        for step in group:
            warms = options.warmup != 0 and step.warmup_requests != 0
            rounds = 1 if step.warmup_max_rounds == 1 else step.warmup_min_rounds
            phases.append((f"warm {step.name}", _round_seconds(step, UNTIMED_RUN_SECONDS) * rounds if warms else 0))
        interleaved = len(group) > 1 and all(step.interleave for step in group)
        for repetition in range(1, max(step.repeat for step in group) + 1 if interleaved else 2):
            for step in group:
                if interleaved and repetition > step.repeat:
                    continue
                run_seconds = step.seconds or UNTIMED_RUN_SECONDS
                calibrating = (repetition == (_calibrated_before(step) if interleaved else 1) and step.calibrate
                               and (len(group) > 1 or step.warmup_requests == 0))
                phases.append((f"measure {step.name}" + (f" #{repetition}" if interleaved else ""),
                               run_seconds * (1 if interleaved else step.repeat) * len(step.load_tools)
                               + (_round_seconds(step, UNTIMED_RUN_SECONDS) if calibrating else 0)))
    return phases + [(f"{name} again", seconds) for name, seconds in steadiness_phases]


def _measure_all(bench: Bench, steps: list[Step],
                 remote: RemoteServer | None) -> tuple[dict, list[dict], dict | None, dict[str, float]]:
    """Build, start the services, then one server per set-up: warm up and measure its steps.
    Returns the first server's /pools report, one record per step, how steady each probed core
    set was right before the first server and right after the last (the machine facts' keys of
    probed_cores, each {"before", "after"} of machine.steadiness; None against a remote server,
    whose cores the driver cannot reach, or with RunOptions.steadiness off), and the seconds each
    phase took (Eta.spent)."""
    lab, params, options, pin = bench.lab, bench.params, bench.options, bench.pin
    where, children, progress = bench.where, bench.children, bench.progress
    probed = probed_cores(bench)
    eta = bench.eta = Eta(plan(steps, options, probes=len(probed)))
    eta.begin("build")
    # A remote server's build and services (lab 03's database) belong to its machine.
    script = None if remote else build(lab.dir, children, progress, force=options.rebuild)
    started_services = (contextlib.nullcontext(Services()) if remote
                        else lab.services(Context(children, progress, where.work_dir), params))
    variants: list[dict] = []
    first_pools: dict = {}
    steadiness = None
    eta.begin("services")
    with started_services as services:
        if _times_steadiness(options):
            # With nothing of the run's own on the core: after the build, before any server.
            steadiness = {key: {"before": probe}
                          for key, probe in _steadiness(probed, progress, eta, "steadiness").items()}
        for number, (setup, group) in enumerate(group_by_server(steps)):
            eta.begin(f"start {number}")
            limit = cpu_limit_of(bench, group[0])
            cpu_group = cpulimit.Group(limit, bench.cpu_hierarchy, serial=number) if limit and not remote else None
            if cpu_group and bench.server_cpus and limit.cpus >= len(bench.server_cpus):
                progress.note(f"note: the server runs on {len(bench.server_cpus)} core(s), so a limit of "
                              f"{limit.cpus:g} CPU cannot bind: give it more cores (--server-cpus) to see it do so")
            server = remote or Server(script, options.port or free_port(), where.work_dir / "server.log",
                                      pin["server_cpus"],
                                      server_properties(lab, params, setup, options.settings, services.properties),
                                      env={**services.env, **runtimes.env(group[0].runtime)},
                                      extra_jvm_options=(*group[0].jvm_options,
                                                         *(profile.JVM_OPTIONS if options.profile_ms else ())),
                                      cpu_group=cpu_group)
            try:
                if cpu_group:
                    cpu_group.make()
                server.start(children, progress)
                pools = lab.inspect_server(server, services)
                first_pools = first_pools or pools
                variants += _measure_group(bench, group, server, services, pools)
            finally:
                eta.begin(f"stop {number}")
                server.stop(children)
                if cpu_group and not cpu_group.remove():
                    progress.note(f"note: could not remove the CPU limit's group {cpu_group.path} yet; "
                                  "it goes when this run ends (pul.watchdog)")
        if steadiness is not None:
            for key, probe in _steadiness(probed, progress, eta, "steadiness again").items():
                steadiness[key]["after"] = probe
        eta.begin("stop services")
    return first_pools, variants, steadiness, eta.spent()


def cpu_limit_of(bench: Bench, step: Step) -> cpulimit.Limit | None:
    """The CPU limit a step's server runs under: the run's --cpu-limit, else the step's own."""
    return bench.options.cpu_limit or step.cpu_limit


def _times_steadiness(options: RunOptions) -> bool:
    """Whether the run times the server's core (not a remote server's: out of the driver's reach)."""
    return options.steadiness and not options.target


def probed_cores(bench: Bench) -> dict[str, set[int] | None]:
    """The core sets a run times (machine.steadiness), by their machine-facts key
    (machine.PROBED_CORES): the server's cores (None: wherever the scheduler puts the loop), and the
    load generator's when both are pinned apart. The load generator and the labs' databases (labs
    03 and 06 pin PostgreSQL there) run on those, and a host that slows them moves every bound they
    set as surely as the server's core moves its own."""
    probed = {"steadiness": bench.server_cpus}
    if bench.server_cpus and bench.load_cpus and not bench.server_cpus & bench.load_cpus:
        probed["load_steadiness"] = bench.load_cpus
    return probed


def _steadiness(probed: dict[str, set[int] | None], progress: Progress, eta: Eta, phase: str) -> dict:
    """machine.steadiness on each probed core set, one after the other (each loop alone, as the
    probe was sized), as the run's `phase` (plan), saying so when a loop could not run (the run
    goes on without it)."""
    eta.begin(phase)
    found = {}
    for key, cpus in probed.items():
        core = machine.PROBED_CORES[key]
        progress.step(f"how steady {core} is: a fixed loop for {machine.STEADINESS_SECONDS:g} s")
        found[key] = machine.steadiness(sorted(cpus) if cpus else None)
        if found[key] is None:
            progress.note(f"note: could not time a fixed loop on {core}; the results will not say how steady it was")
    return found


def _measure_group(bench: Bench, group: list[Step], server, services: Services, pools: dict) -> list[dict]:
    """The steps that share one server: warm every one up first, then calibrate and measure each
    (or, where the steps interleave, run r of each before run r + 1 of any)."""
    _prime_profiler(bench, server)
    # The JIT's work for one variant speeds up the others, so measuring right after each one's
    # own warm-up would favour whichever runs last.
    warmups = {}
    for index, step in enumerate(group):
        bench.eta.begin(f"warm {step.name}")
        at = StepBench(bench, _warmup_of(step, first=index == 0), server)
        configure(at)
        warmups[step.name] = warm_up(at)
    if _interleaved(group):
        return _measure_interleaved(bench, group, server, services, pools, warmups)
    records = []
    for step in group:
        bench.eta.begin(f"measure {step.name}")
        at = StepBench(bench, step, server)
        load_before = round(os.getloadavg()[0], 2)
        configure(at)
        step_pools = _pools_after_configure(at, pools)

        def calibrated_and_measured(first: bool) -> tuple[dict, list | None]:
            # Only the first measurement of a step that warmed up last, right before, can
            # calibrate from its last warm-up round.
            calibrated = calibration(at, warmups[at.step.name] if first else None, first and len(group) == 1,
                                     step_pools)
            result, probe, cpu, runs = measure(at)
            return variant_record(bench, at.step, result, probe, {**cpu, "load_average_before": load_before},
                                  step_pools, calibrated), runs

        record, runs = _measured_until_they_agree(step, calibrated_and_measured, bench.progress)
        if runs:
            record["extra"]["runs"] = runs
        if warmups[step.name] is not None:
            record["warmup"] = warmups[step.name]
        bench.lab.verify_step(step, server, record, services)
        records.append(record)
        _print_step(record, bench.progress)
    return records


def _warmup_of(step: Step, first: bool) -> Step:
    """The step as its warm-up runs: first on its server, a cold JVM, with its own rounds for that
    (Step.warmup_max_rounds_first)."""
    if not first or step.warmup_max_rounds_first is None:
        return step
    rounds = step.warmup_max_rounds_first
    return replace(step, warmup_max_rounds=rounds, warmup_min_rounds=min(step.warmup_min_rounds, rounds))


def configure(at: StepBench) -> None:
    """POST the step's settings (Step.configure) to its server, saying so; a refusal stops the run."""
    for path in at.step.configure.values():
        at.bench.progress.note(f"{at.step.name}: POST {path}")
        answer = http_fetch(at.server.base_url + path, timeout=30, method="POST")
        if not answer.ok:
            raise ServerFailed(f"{at.step.name}: the server refused POST {path}: {answer.describe()} "
                               f"(last lines of {at.server.log_path}:\n{at.server.log_tail()})")


def _pools_after_configure(at: StepBench, pools: dict) -> dict:
    """The pools the step's prediction reads: after its settings (Step.configure), the server's
    /pools again (its sizes may have changed) over what the lab found at its start (`pools`)."""
    return {**pools, **at.server.pools()} if at.step.configure else pools


def _measured_until_they_agree(step: Step, calibrated_and_measured, progress: Progress) -> tuple[dict, list | None]:
    """A step calibrated and measured (calibrated_and_measured(first)), and again while its run and
    its calibration saw the core at different speeds (remeasure_reason), model.MEASUREMENTS times at
    most. The last measurement is the record (its raw output is the one kept); the earlier ones go
    in its extra["remeasured"], and each repeat is said as it starts."""
    record, runs = calibrated_and_measured(True)
    earlier = []
    while (reason := remeasure_reason(record, step.remeasure_drift)) is not None:
        earlier.append(reason)
        if len(earlier) >= model.MEASUREMENTS:
            # The host kept moving the core's speed: the last measurement stands, its band note
            # naming the drift.
            drifts = ", ".join(f"{r['serving_drift']:+.0%}" for r in earlier)
            progress.note(f"{step.name}: its calibration and its run disagreed in all {len(earlier)} "
                          f"measurements (serving drift {drifts}): this machine's core is not steady; "
                          "the results record it")
            earlier.pop()
            record["extra"] = {**record.get("extra", {}), model.UNSTEADY: True}
            break
        progress.note(f"{step.name}: serving a request took {reason['serving_drift']:+.0%} CPU during the run "
                      "against its calibration (a core the host slowed leaves no other trace): "
                      "calibrating and measuring it again")
        record, runs = calibrated_and_measured(False)
    if earlier:
        record["extra"] = {**record.get("extra", {}), "remeasured": earlier}
    return record, runs


def remeasure_reason(record: dict, limit: float = model.REMEASURE_DRIFT) -> dict | None:
    """What a step's measurement was, where its run served each request with CPU so far from its
    calibration's (more than `limit`, a share) that the two saw the core at different speeds;
    None otherwise."""
    drift = model.serving_drift(record)
    if drift is None or abs(drift) <= limit:
        return None
    return {"serving_drift": round(drift, 3), "requests_per_sec": record["requests_per_sec"],
            "measured_over_predicted": record.get("measured_over_predicted"),
            "calibrated_server_cpu_ms": record["calibration"]["server_cpu_ms"],
            "server_cpu_ms_per_request": record.get("server_cpu_ms_per_request"),
            "jit_share": record.get("jit_share")}


def _interleaved(group: list[Step]) -> bool:
    """Whether the group's steps interleave their runs (Step.interleave: all of them or none)."""
    flags = {step.interleave for step in group}
    if len(flags) > 1:
        raise LabError("steps on one server must all interleave or none: "
                       + ", ".join(f"{s.name}={s.interleave}" for s in group))
    if flags == {True} and any(step.probe for step in group):
        raise LabError("interleaved steps cannot have a /status probe: it would span the other steps' runs")
    return flags == {True} and len(group) > 1


def _calibrated_before(step: Step) -> int:
    """The run an interleaved step is calibrated right before: its middle one. A whole round of
    other steps separates a step's runs, and a server still speeding up (the JIT's last work) or a
    machine slowing down moves all of them; calibrated before the first, the prediction would sit
    at one end of that drift and the median run in the middle."""
    return (step.repeat + 1) // 2


def _measure_interleaved(bench: Bench, group: list[Step], server, services: Services, pools: dict,
                         warmups: dict) -> list[dict]:
    """Run r of every step before run r + 1 of any: a drift of the server or the machine over the
    measuring phase then weighs on every step alike instead of favouring the steps measured first.
    Each step is calibrated right before its middle run (_calibrated_before); the lab verifies each
    run on its own (verify_step with a record of that run alone; what it adds to the last one's
    `extra` is kept)."""
    lab, where, progress, eta = bench.lab, bench.where, bench.progress, bench.eta
    steal = machine.StealMeter()
    at = {step.name: StepBench(bench, step, server) for step in group}
    runs = {step.name: Runs(at[step.name]) for step in group}
    calibrated, load_before, checked, timelines, folded, step_pools = {}, {}, {}, {}, {}, {}
    for repetition in range(1, max(step.repeat for step in group) + 1):
        for step in group:
            if repetition > step.repeat:
                continue
            eta.begin(f"measure {step.name} #{repetition}")
            if repetition == 1:
                load_before[step.name] = round(os.getloadavg()[0], 2)
            configure(at[step.name])
            step_pools[step.name] = _pools_after_configure(at[step.name], pools)
            if repetition == _calibrated_before(step):
                calibrated[step.name] = calibration(at[step.name], warmups[step.name], False, step_pools[step.name])
            done = len(runs[step.name].made)
            # The timeline of an interleaved step covers its first run.
            sampler = _start_timeline(bench, server) if repetition == 1 else None
            # The profile of an interleaved step covers all its runs, not the other steps' between them.
            profiler = _start_profile(bench, server)
            measured = False
            try:
                runs[step.name].make(repetition)
                measured = True
            finally:
                if sampler is not None:
                    timelines[step.name] = _finish_timeline(sampler, progress)
                stacks = _finish_profile(profiler, measured)
            if stacks is not None:
                folded.setdefault(step.name, profile.Folded(stacks.period_ms)).add(stacks)
            for result, _, _, _, _ in runs[step.name].made[done:]:
                checked[step.name] = {"name": step.name, "complete": result.complete, "extra": {}}
                lab.verify_step(step, server, checked[step.name], services)
    steal_share = steal.share()
    records = []
    for step in group:
        result, cpu, made = runs[step.name].summary(where.raw_dir, steal_share)
        cpu = {**cpu, "load_average_before": load_before[step.name], "timeline": timelines.get(step.name)}
        if step.name in folded:
            cpu["profile"] = _keep_profile(step, folded[step.name], where.raw_dir)
        record = variant_record(bench, step, result, None, cpu, step_pools[step.name], calibrated[step.name])
        record["interleaved"] = True
        # What the lab's check of the step's last run found (lab 04: the filters its chain ran).
        record["extra"].update(checked[step.name]["extra"])
        if made:
            record["extra"]["runs"] = made
        if warmups[step.name] is not None:
            record["warmup"] = warmups[step.name]
        records.append(record)
        _print_step(record, progress)
    return records


def _write_and_print(lab: Lab, data: dict, options: RunOptions, where: Where, run_stamp: str,
                     remote: RemoteServer | None, skipped: list[Skipped]) -> None:
    """Print the table, then write the results (and the book's files, for the lab's own results/).
    Printed first, so a full disk or a folder that cannot be written still shows the measurement;
    the write then fails with WriteFailed, naming the file."""
    # The repository's own results/ and its folders (results/profile, results/play-3 ...) keep one
    # run each, the one the book shows (earlier runs live in git history); a folder of the reader's
    # choice keeps every run.
    replaces = results.keeps_one_run(lab.dir, where.results_dir)
    print()
    print(f"Lab {lab.name}: {lab.title}")
    print(results.text_table(data, lab.table_columns(data)))
    for note in lab.summary_notes(data):
        print(note)
    print()
    print(results.machine_line(data), flush=True)
    spent = time_line(data)
    if spent:
        print(spent, flush=True)
    for slowed in machine.slowed_warnings(data.get("machine") or {}):
        print(f"warning: {slowed}.", flush=True)
    if skipped:
        print(f"Skipped (the server at {remote.base_url} is set up for other steps):\n" + describe_skipped(skipped),
              flush=True)
    try:
        path = results.write(data, where.results_dir, run_stamp, replace=replaces)
    except results.WriteFailed as error:
        raise results.WriteFailed(f"{error}. The table above is this run's measurement; to keep its results "
                                  "file, make room or choose another folder (--results-dir DIR) and run "
                                  "again") from error
    print(f"Results: {_display(path)} (and latest.json{', replacing the previous run' if replaces else ''}); "
          f"raw ab output in {_display(where.raw_dir)}/")
    flames = _draw_flame_graphs(lab, data, where)
    if flames:
        print(f"Flame graphs (open in a browser): {', '.join(_display(p) for p in flames)}")
    if options.write_report and options.results_dir is None:
        from . import glance, timings  # timings imports pul.exercises, which imports this module

        # A Play 3 run changes only the book's Play 3 pages; the chapter teaches from the Play 2.9 run.
        written = ([] if playline.current() == "3" else
                   # The instructor guide's schedules count this run's duration; "At a glance" works
                   # its rules on the labs' runs.
                   report.write_lab(lab, data) + report.write_changed({**timings.artifacts(), **glance.artifacts()})
                   ) + report.write_play3(lab)
        if written:
            print(f"Book tables and figures updated: {', '.join(_display(p) for p in written)}")


# What each kind of phase (the first word of its name in phase_seconds) is called in time_line.
PHASE_KINDS = {"build": "build", "services": "services", "start": "server starts", "warm": "warm-ups",
               "measure": "calibration and measured runs", "stop": "stops", "steadiness": "steadiness probe"}


def time_line(data: dict) -> str | None:
    """'Time: 183 s: warm-ups 90 s, calibration and measured runs 52 s, server starts 30 s, ...',
    the run's phase_seconds by kind, largest first (None for a run without them)."""
    spent = data.get("phase_seconds")
    if not spent:
        return None
    kinds: dict[str, float] = {}
    for phase, seconds in spent.items():
        kind = PHASE_KINDS.get(phase.split(" ")[0], phase)
        kinds[kind] = kinds.get(kind, 0.0) + seconds
    parts = [f"{kind} {seconds:.0f} s" for kind, seconds in sorted(kinds.items(), key=lambda kv: -kv[1])
             if seconds >= 0.5]
    return f"Time: {data['duration_s']} s: " + ", ".join(parts) + "."


def _draw_flame_graphs(lab: Lab, data: dict, where: Where) -> list[Path]:
    """A flame graph of each profiled variant, beside its folded stacks (VARIANT.flame.svg)."""
    drawn = []
    for variant in data["variants"]:
        record = variant.get("profile")
        if not record:
            continue
        folded = profile.read(profile.folded_file(where.results_dir, record))
        path = where.raw_dir / f"{variant['name']}.flame.svg"
        results.write_text_atomic(path, profile.flame_svg(folded, profile.title(lab.name, variant),
                                                          profile.subtitle(record)))
        drawn.append(path)
    return drawn


def _print_step(record: dict, progress: Progress) -> None:
    text = (f"{record['name']}: {record['requests_per_sec']:,.0f} req/s, mean {record['mean_ms']:.1f} ms, "
            f"p99 {record['p99_ms']:.1f} ms")
    if record["predicted_requests_per_sec"]:
        text += (f" (predicted {record['predicted_requests_per_sec']:,.0f}, bound by {model.shown_bound(record)}, "
                 f"ratio {record['measured_over_predicted']:.2f})")
    if record["failed"] or record["non_2xx"]:
        text += f" -- {record['failed']} FAILED, {record['non_2xx']} non-2xx"
    progress.note(text)


def _display(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd()))
    return str(path)

