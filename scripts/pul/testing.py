"""Helpers for the labs' pytest smoke tests (run the real driver, find what it left behind) and for
the driver's unit tests (a measuring context with stand-ins)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import machine, model
from .procs import RUN_ID_VARIABLE, processes_with_run_id, wait_until
from .results import committed_text

REPO = Path(__file__).resolve().parents[2]
LAB = [sys.executable, str(REPO / "scripts" / "lab")]


def this_lab(test_file: str):
    """The lab whose tests/ holds `test_file` (a test's __file__): its tests then follow the
    folder when it is copied to a new number."""
    from .lab import load

    return load(Path(test_file).resolve().parents[1])


def smoke_module(relative: str):
    """A lab's smoke-test module (a path relative to the repository), imported by path: its checks
    are functions of the results, which other tests run on doctored copies of a committed run."""
    import importlib.util

    path = REPO / relative
    spec = importlib.util.spec_from_file_location(f"smoke_{path.parent.parent.name.replace('-', '_')}_{path.stem}",
                                                  path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def committed_results(lab_folder: str, *folder: str) -> dict:
    """`labs/LAB_FOLDER/results/[FOLDER/]latest.json` as committed (git's HEAD), not as a local run
    left it: a student's `scripts/lab run` replaces the working tree's run, and the tests that
    check the project's own checks on a committed run must not change with it. Outside a git
    checkout (a copy of the files), the file itself."""
    relative = Path("labs", lab_folder, "results", *folder, "latest.json").as_posix()
    shown = committed_text(REPO, relative)
    return json.loads(shown if shown is not None else (REPO / relative).read_text())


# A results file to check instead of making a smoke run: PUL_SMOKE_RESULTS=labs/NN-name/
# results/latest.json pytest labs/NN-name/tests -m "slow and not lifecycle" runs the smoke
# checks on a run of the reader's own (a default run, say). Only a smoke run is replaced
# (run_lab(..., smoke=True)); a check that needs a new run of its own skips, saying so.
SMOKE_RESULTS_VARIABLE = "PUL_SMOKE_RESULTS"


def given_results(lab: str) -> dict | None:
    """The run PUL_SMOKE_RESULTS names (it must be one of `lab`), or None when it names none."""
    given = os.environ.get(SMOKE_RESULTS_VARIABLE)
    if not given:
        return None
    from .lab import resolve

    data = json.loads(Path(given).read_text())
    wanted = resolve(lab).name
    if data.get("lab") != wanted:
        raise AssertionError(f"{SMOKE_RESULTS_VARIABLE}={given} is a run of {data.get('lab')}, not {wanted}")
    print(f"checking {given} ({data.get('command')}), not a new smoke run")
    return data


def run_lab(lab: str, *args: str, results_dir: Path, timeout: float = 900, smoke: bool = False,
            again_if_slowed: int = 0, unsteady_is_slowed: bool = False) -> dict:
    """`scripts/lab run LAB ARGS --results-dir DIR --no-report`; returns the results JSON (for a
    `smoke` run, the file PUL_SMOKE_RESULTS names instead, if it names one).

    `again_if_slowed`: for checks that a slowed core breaks (latencies in milliseconds, queues
    against a model of a steady server), how many times at most to measure again a run whose
    steadiness probes saw the host slow a core (pul.machine.slowed_warnings), saying so each
    time (an unsteady host slows runs in spells: the census has runs whose first measurement
    again was slowed too). The checks judge the first run the probes saw steady, or, where none
    was, the one they saw slowed least (judged_run), and the output says which.
    `unsteady_is_slowed`: a step whose calibration never held counts as the host's slowing too
    (host_moved), for a lab whose checks are held to a steady core: an unsteady step's drift and
    model checks are left out, so such a run says little. A lab whose checks allow a share of
    unsteady steps by design leaves it False."""
    given = given_results(lab) if smoke else None
    if given is not None:
        return given
    data = _run_lab_once(lab, args, results_dir, timeout)
    slowed = first_slowed = host_moved(data, unsteady_is_slowed)
    measured = [data]
    while slowed and len(measured) <= again_if_slowed:
        print(f"run_lab {lab}: {slowed}. Measuring the whole run again ({len(measured)} of at most "
              f"{again_if_slowed}): these checks need a steady core.", flush=True)
        measured.append(_run_lab_once(lab, args, results_dir / ("again" if len(measured) == 1
                                                                 else f"again-{len(measured)}"), timeout))
        slowed = host_moved(measured[-1], unsteady_is_slowed)
    if len(measured) == 1:
        return data
    judged = len(measured) if not slowed else judged_run(measured, unsteady_is_slowed)
    data = measured[judged - 1]
    data.update(measured_again=first_slowed, runs=len(measured), judged_run=judged)
    if slowed:
        shares = ", ".join(f"{machine.steadiness_share(d.get('machine') or {}):.0%}" for d in measured)
        print(f"run_lab {lab}: run {len(measured)} too: {slowed}. Its checks judge run {judged} of "
              f"{len(measured)}, the one the host slowed least by its probes (the slowest core at {shares} "
              "of its fastest in each); a miss is likely the host's.", flush=True)
    return data


def judged_run(measured: list[dict], unsteady_is_slowed: bool = False) -> int:
    """Which of several runs the host slowed, each measured again for it, the checks judge (1 for
    the first): the one whose probes saw the slowest core least slowed (machine.steadiness_share),
    the later of equals; where unsteady steps count (host_moved), a run without any before one with.
    Chosen by the probes alone, never by what the checks would say."""
    def rank(index: int) -> tuple:
        data = measured[index]
        unsteady = unsteady_is_slowed and any((v.get("extra") or {}).get(model.UNSTEADY)
                                              for v in data.get("variants") or [])
        return (not unsteady, machine.steadiness_share(data.get("machine") or {}), index)
    return max(range(len(measured)), key=rank) + 1


def host_moved(data: dict, unsteady_is_slowed: bool = False) -> str | None:
    """What a run's own instruments saw of a host that moved its cores' speed, or None: the
    steadiness probes before and after it, of the server's core and the load generator's
    (pul.machine.slowed_warnings), or, within it, steps whose calibration and run disagreed in
    every measurement the driver made (pul.model.UNSTEADY: the host moved the core within the run,
    which the probes around it may not see), where `unsteady_is_slowed`."""
    slowed = machine.slowed_warnings(data.get("machine") or {})
    if slowed:
        return "; ".join(slowed)
    unsteady = [v["name"] for v in data.get("variants") or [] if (v.get("extra") or {}).get(model.UNSTEADY)]
    if not unsteady or not unsteady_is_slowed:
        return None
    return (f"the server's core changed speed within the run: {', '.join(unsteady)} served at another CPU per "
            f"request than calibrated in all {model.MEASUREMENTS} measurements the driver made")


def _run_lab_once(lab: str, args: tuple[str, ...], results_dir: Path, timeout: float) -> dict:
    env = dict(os.environ, **{RUN_ID_VARIABLE: "test" + uuid.uuid4().hex[:10]})
    done = subprocess.run([*LAB, "run", lab, *args, "--results-dir", str(results_dir), "--no-report"],
                          cwd=REPO, env=env, stdin=subprocess.DEVNULL, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(done.stdout)
    assert done.returncode == 0, f"scripts/lab run {lab} failed ({done.returncode}):\n{done.stdout[-4000:]}"
    assert not processes_with_run_id(env[RUN_ID_VARIABLE]), "processes left behind after a successful run"
    data = json.loads((results_dir / "latest.json").read_text())
    # Where the run's time went must account for all of it (whole seconds: duration_s is truncated).
    spent = sum(data["phase_seconds"].values())
    assert abs(spent - data["duration_s"]) <= 2, (
        f"phase_seconds add up to {spent:.1f} s, the run took {data['duration_s']} s: {data['phase_seconds']}")
    return data


class Driver:
    """`scripts/lab run ...` (or another `command`) in the background, in a session of its own
    like a terminal job."""

    def __init__(self, *args: str, log: Path, env: dict | None = None, command: str = "run"):
        self.token = "test" + uuid.uuid4().hex[:10]
        self.log = log
        full_env = dict(os.environ, **(env or {}), **{RUN_ID_VARIABLE: self.token})
        self._out = log.open("w")
        self.popen = subprocess.Popen([*LAB, command, *args], cwd=REPO, env=full_env, stdin=subprocess.DEVNULL,
                                      stdout=self._out, stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float) -> None:
        ok = wait_until(lambda: text in self.output() or self.popen.poll() is not None, timeout)
        assert ok and text in self.output(), f"never saw {text!r}:\n{self.output()[-3000:]}"

    def children(self) -> list[int]:
        """The run's processes but the driver itself (which carries the run id this helper gave it)."""
        return [pid for pid in processes_with_run_id(self.token) if pid != self.popen.pid]

    def ctrl_c(self) -> None:
        """What a terminal does on Ctrl-C: SIGINT to the whole foreground process group."""
        os.killpg(self.popen.pid, signal.SIGINT)

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.popen.wait(timeout)
        finally:
            self._out.close()

    def leftovers(self, grace: float = 5) -> list[str]:
        """Commands of processes of this run still alive `grace` seconds after the driver ended."""
        wait_until(lambda: not processes_with_run_id(self.token), grace)
        found = []
        for pid in processes_with_run_id(self.token):
            try:
                found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
            except OSError:
                pass
        return found

    def kill_everything(self) -> None:
        """Last resort for a failed test: never leave processes on the machine."""
        for pid in processes_with_run_id(self.token) + [self.popen.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.5)


# The census (`scripts/test --repeat N PART`) sets this: every band a measured test checks with
# `within` is then written to that file, one JSON line each, whether it holds or not.
CENSUS_VARIABLE = "PUL_CENSUS_FILE"


def margin(value: float, low: float | None, high: float | None) -> float:
    """How far `value` is inside [low, high], as a share of the nearer edge (negative outside it):
    1.00 in 0.85-1.10 keeps 0.091, the upper edge being 9.1% of 1.10 away (the lower, 17.6% of 0.85).
    An edge at zero: the plain difference."""
    shares = []
    if low is not None:
        shares.append((value - low) / abs(low) if low else value - low)
    if high is not None:
        shares.append((high - value) / abs(high) if high else high - value)
    return min(shares)


def band_miss(label: str, value: float, low: float | None = None, high: float | None = None) -> str | None:
    """Whether low <= value <= high (an edge of None is open): None where it holds, else a line that
    says by how much it missed. Every band a measured test checks goes through here, so that the
    census can record its margin over many runs. `label` names the band within its test (a
    variant, a step): the census adds the test's own id."""
    if low is None and high is None:
        raise ValueError("a band needs a low or a high edge")
    kept = margin(value, low, high)
    census = os.environ.get(CENSUS_VARIABLE)
    # Only a measured test's bands (pul.pytest_census): a unit test's are the check's, on made-up data.
    if census and os.environ.get("PUL_CENSUS_MEASURED") == "1":
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
        record = {"test": test, "band": label, "value": value, "low": low, "high": high,
                  "margin": round(kept, 4), "held": kept >= 0}
        with open(census, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
    if kept >= 0:
        return None
    edges = f"{'-inf' if low is None else f'{low:.4g}'} .. {'inf' if high is None else f'{high:.4g}'}"
    return f"{label}: {value:.4g} outside {edges} (missed by {-kept:.1%})"


def within(label: str, value: float, low: float | None = None, high: float | None = None,
           context: object = None) -> None:
    """Assert that value lies in [low, high], through band_miss (recorded for the census)."""
    miss = band_miss(label, value, low, high)
    assert miss is None, miss + (f"; {context}" if context is not None else "")


# The model's band: a measurement this close to the bound it names (pul.model) confirms the model.
MODEL_BAND = (0.85, 1.10)


def model_misses(label: str, v: dict, band: tuple[float, float] = MODEL_BAND,
                 ratio: float | None = None) -> list[str]:
    """A variant's measurement against its prediction, the misses (band_miss lines, recorded for
    the census): within `band` of its bound (`ratio`, else measured_over_predicted), or, for a
    range (pul.model.CONVOY, pul.model.ROUND_TRIP), over band's low end of its floor and under
    band's high end of its upper end."""
    upper = v.get("predicted_upper_requests_per_sec")
    if not upper:
        misses = [band_miss(f"{label} measured/predicted",
                            v["measured_over_predicted"] if ratio is None else ratio, *band)]
    else:
        # A range whose arithmetic the variant does not keep is checked as the convoy's.
        kind = model.range_kind(v) or model.RANGES[model.CONVOY]
        misses = [band_miss(f"{label} {kind.floor_check}", v["measured_over_predicted"], band[0]),
                  band_miss(f"{label} {kind.upper_check}", v["requests_per_sec"] / upper, high=band[1])]
    return [m for m in misses if m]


def within_model(label: str, v: dict, band: tuple[float, float] = MODEL_BAND) -> None:
    """Assert a variant's measurement against its prediction (model_misses)."""
    misses = model_misses(label, v, band)
    assert not misses, "; ".join(misses) + f"; {v}"


# A range's floor at the core (pul.model.ROUND_TRIP, pul.model.CONVOY) is near the worst case, not a
# strict one: a wake-up's latency is charged to no program (neither the server nor ab in a round
# trip; a sleeping request's wait in a convoy). A step's core may sit this share below the floor's use.
FLOOR_SLACK = 0.05


def check_at_the_core(v: dict, limit: float, band: tuple[float, float] = MODEL_BAND,
                      core_busy: float = 0.85, calibrated: bool = True) -> tuple[float, list[str], bool]:
    """A step the server's core binds, its measurement over its prediction taken apart (the
    misses, not raised): how fully the run used the core the compiler left (measured over the
    bound the run's own CPU per request gives: the model's claim, within `band`), the core busy
    (at least `core_busy`; where another of the step's bounds is below the core's at the run's
    own CPU per request, that bound instead, and no busy core; for a round trip's range, from its
    floor's share of the core up; for a convoy at the core, the rate within its range at the run's
    own CPU per request and the core at least the convoy's share busy), and how well the
    calibration before the run held (the serving drift, pul.model.serving_drift, within `limit`, or the driver
    measured the step as often as it does, pul.model.MEASUREMENTS). The prediction's own band
    follows from the two: band[0] / (1 + limit) to band[1] / (1 - limit), of its bound or, for a
    range, over its floor and under its upper end. `calibrated=False`: a run whose code the JIT
    compiler was still changing, which no calibration before it can stand for; only the core's
    use and the core busy are checked.
    Returns (the first, the misses, whether the calibration never held)."""
    drift = model.serving_drift(v)
    # The core's use by serving: the rate times the run's own serving CPU per request (the
    # calibration's, moved by the drift), over the cores the compiler left.
    jit = v.get("jit_share") or 0.0
    calibration = v.get("calibration") or {}
    serving_ms = calibration["server_cpu_ms"] * (1 + drift)
    cores = calibration.get("server_cores") or 1
    used = v["requests_per_sec"] * serving_ms / 1000 / (cores - jit)
    convoy = _convoy_at_the_run(v, serving_ms * cores / (cores - jit), cores)
    if convoy:
        # Identical waits at the core (pul.model.CONVOY): a range, from the perfect convoy up to the
        # smooth prediction, each worked at the run's own CPU per request; the core is busy at
        # least the convoy's share of it. Neither end is the core's full bound: the smooth
        # prediction of 50 requests waiting 30 ms and using 0.66 ms each keeps it about 94% busy.
        floor, smooth = convoy
        share = floor * serving_ms / 1000 / (cores - jit)
        misses = [band_miss(f"{v['name']} measured over the smooth prediction at the run's own CPU per request",
                            v["requests_per_sec"] / smooth, min(band[0], (1 - FLOOR_SLACK) * floor / smooth), band[1]),
                  band_miss(f"{v['name']} server core busy", model.server_busy(v),
                            min(core_busy, (1 - FLOOR_SLACK) * share))]
    else:
        misses = _misses_at_the_bound(v, used, band, core_busy)
    unsteady = len((v.get("extra") or {}).get("remeasured") or []) == model.MEASUREMENTS - 1 and abs(drift) > limit
    if calibrated and not unsteady:
        misses.append(band_miss(f"{v['name']} serving drift", abs(drift), high=limit))
        misses += model_misses(v["name"], v, (band[0] / (1 + limit), band[1] / (1 - limit)),
                               ratio=with_the_runs_compiler(v))
    return used, [m for m in misses if m], unsteady


def _misses_at_the_bound(v: dict, used: float, band: tuple[float, float], core_busy: float) -> list[str]:
    """check_at_the_core for a step with one bound at the core (no convoy): the core's use (`used`)
    within `band` and the core busy, or the bound that replaces the core's at the run's own CPU."""
    # At the run's own CPU per request the core may no longer be the smallest bound: a drift within
    # the limit can hand a step near a crossover to the next one (a 100-thread pool at c=1000 in a
    # census run: the core's 3,205 req/s from 0.312 ms calibrated below its threads' 3,333, the
    # core's 3,745 at the 0.267 ms it served at above them; 3,163 measured, the core 83% busy;
    # scripts/tests/test_model.py has it).
    at_the_core = v["requests_per_sec"] / used if used else float("inf")
    other = min((bound for name, bound in (v.get("bounds") or {}).items() if name != model.SERVER_CPU and bound),
                default=float("inf"))
    if other < at_the_core:
        return [band_miss(f"{v['name']} measured over the bound at the run's own CPU per request",
                          v["requests_per_sec"] / other, *band)]
    # A round trip in series (pul.model.ROUND_TRIP) may leave the core idle while the load generator
    # works: the core's use and its busy share then start at the floor's share of the core (its
    # predicted utilisation there, the compiler's CPU left out), less FLOOR_SLACK.
    trip = (v.get("extra") or {}).get(model.ROUND_TRIP) or {}
    floor_share = (min(1.0, trip["floor_requests_per_sec"] * trip["cpu_ms"] / 1000 / trip["cores"])
                   if trip.get("floor_requests_per_sec") else None)
    use_low = band[0] if floor_share is None else min(band[0], (1 - FLOOR_SLACK) * floor_share)
    busy_low = core_busy if floor_share is None else min(core_busy, (1 - FLOOR_SLACK) * floor_share)
    return [band_miss(f"{v['name']} measured over the bound at the run's own CPU per request", used, use_low, band[1]),
            band_miss(f"{v['name']} server core busy", model.server_busy(v), busy_low)]


def _convoy_at_the_run(v: dict, cpu_ms: float, cores: float) -> tuple[float, float] | None:
    """A step's convoy at the server's core (pul.model.CONVOY) worked at the run's own CPU per
    request (`cpu_ms`, the compiler's share counted as the model counts it, on `cores`): (the
    perfect convoy's req/s, the smooth mean-value prediction's), as pul.model._convoy and
    _queueing work them from the calibration. None without a convoy range at the core."""
    convoy = (v.get("extra") or {}).get(model.CONVOY) or {}
    if convoy.get("at") != model.SERVER_CPU or not convoy.get("floor_requests_per_sec"):
        return None
    n, wait_ms = convoy["in_service"], convoy["wait_ms"]
    return model.convoy_floor(n, wait_ms, cpu_ms, cores), model.mean_value_analysis(n, wait_ms + cpu_ms, cpu_ms, cores)


def decided_at_the_core(v: dict) -> bool:
    """Whether the calibrated CPU per request makes a variant's prediction: a step the server's core
    binds, or requests in flight in a convoy at the core (the range keeps their name,
    pul.model.CONVOY). A pool's threads or connections in such a convoy are the pool's."""
    convoy = (v.get("extra") or {}).get(model.CONVOY) or {}
    return v["bound_by"] == model.SERVER_CPU or (convoy.get("at") == model.SERVER_CPU
                                                 and v["bound_by"] == model.IN_FLIGHT)


def by_name(results: dict) -> dict[str, dict]:
    return {v["name"]: v for v in results["variants"]}


def the_model_predicted(v: dict) -> bool:
    """Whether a variant's recorded prediction is what pul.model works out from its recorded bounds
    (model_prediction): to its recording's precision, a tenth of a request per second (a step of 1
    in flight on a slow core: 43.05 recorded as 43.0) and the rounded CPU per request."""
    predicted, worked_out = v["predicted_requests_per_sec"], model_prediction(v)
    return abs(predicted - worked_out) <= max(0.05, 1e-3 * abs(worked_out))


def check_the_model_predicted(v: dict) -> None:
    """Assert the_model_predicted, naming the variant and both predictions if not."""
    assert the_model_predicted(v), (v["name"], v["predicted_requests_per_sec"], model_prediction(v))


def with_the_runs_compiler(v: dict) -> float:
    """Measured over the server-CPU bound with the JIT compiler's share the measured run had, not
    its calibration's. The prediction, made before the run, leaves out the compiler's share of the
    core in the calibration rounds (pul.model); where the compiler quietened down by the measured
    run, requests had more of the core. A clean-clone run: c=2 calibrated with the compiler on 22%
    of the core, measured with it on 6%, at 1.26 of the bound: (1 - 0.06) / (1 - 0.22) = 1.21 of it
    was the compiler's share returned to the requests."""
    ratio = v["measured_over_predicted"]
    calibrated = (v.get("calibration") or {}).get("jit_share")
    if v["bound_by"] != model.SERVER_CPU or calibrated is None or v.get("jit_share") is None:
        return ratio
    return ratio * (1 - calibrated) / (1 - v["jit_share"])


def model_prediction(v: dict) -> float:
    """What pul.model predicts from a variant's recorded bounds, worked out again here: the
    smallest bound, or, where the variant's requests all wait in service (its loop recorded under
    pul.model.QUEUEING), the mean-value analysis of that loop if it is lower, and where its waits
    are identical (pul.model.CONVOY), the perfect convoy's floor, N / (wait + N x CPU / cores), the
    range's lower end. Compare it with pytest.approx: the CPU per request is recorded rounded."""
    predicted = min(v["bounds"].values())
    extra = v.get("extra") or {}
    loop = extra.get(model.QUEUEING)
    if loop:
        rate = model.mean_value_analysis(loop["in_service"], loop["wait_ms"] + loop["cpu_ms"], loop["cpu_ms"],
                                         loop["cores"])
        predicted = min(predicted, rate)
    trip = extra.get(model.ROUND_TRIP)
    if trip and "floor_requests_per_sec" in trip:
        predicted = min(predicted, model.round_trip_floor(trip["in_flight"], trip["cpu_ms"], trip["cores"],
                                                          trip["load_cpu_ms"]))
    convoy = extra.get(model.CONVOY)
    if convoy and "floor_requests_per_sec" in convoy:
        floor = convoy["in_service"] / ((convoy["wait_ms"] + convoy["in_service"] * convoy["cpu_ms"] / convoy["cores"])
                                        / 1000.0)
        predicted = min(predicted, floor)
    return predicted


class FakePostServer:
    """A server on loopback that answers each POST from `answers` ({path: (status, body)}, the
    query ignored; 404 for any other path), for the tests of the driver's HTTP clients (the
    timeline's, the profile's, Step.configure's). Use it as a context manager; `url` is its base
    URL, and `posted` lists every path POSTed to it, query included, in order."""

    def __init__(self):
        self.answers: dict[str, tuple[int, bytes]] = {}
        self.posted: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                fake.posted.append(self.path)
                status, body = fake.answers.get(self.path.split("?")[0], (404, b"not found"))
                self.send_response(status)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> "FakePostServer":
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def unit_bench(*, lab=None, params=None, options=None, pin=None, raw_dir: Path = Path("/nonexistent/raw"),
               results_dir: Path = Path("/nonexistent"), children=None, eta=None):
    """A measuring context (pul.run.Bench) for a unit test of the driver: what the test does not
    exercise is None or empty, and nothing may be written (the folders do not exist)."""
    from .progress import Progress
    from .run import Bench, RunOptions, Where

    made = Bench(lab, params or {}, options or RunOptions(timeline_hz=0), pin or {},
                 Where(results_dir, raw_dir, Path("/nonexistent/work")), children, Progress(quiet=True))
    made.eta = eta
    return made


def unit_step_bench(step, server, **kwargs):
    """A step on its server (pul.run.StepBench) in a unit_bench(**kwargs)."""
    from .run import StepBench

    return StepBench(unit_bench(**kwargs), step, server)
