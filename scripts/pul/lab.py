"""What a lab is, for the driver: its steps, its prediction, its book artifacts.

A lab is its folder, `labs/NN-name/`: the Play project and its bench.sh, plus
- `lab.toml`: number, title, summary, the defaults of its options, the tools it needs
  and the book files its report writes;
- `driver.py`: one subclass of `Lab` (its options, steps, prediction, checks);
- `report.py` (optional): pure functions from a results file to text:
  `render(results, lab) -> {path: text}`, `summary_notes(results) -> [line]` and
  `table_columns(results)`.
`load()` reads a folder into a `Lab`; nothing here names a lab.

One word for each idea (CONTRIBUTING.md has the same list):
- variant: a named row the lab measures, as the reader sees it (`--variant NAME`, the
  results' `variants`, the tables). The driver measures each variant with a `Step`.
- endpoint: a name in the lab's bench.sh, mapped to a URL path (`Step.endpoint`); several
  variants may load one endpoint (lab 03's sweep).
- set-up: the -D properties a variant's server needs (`Step.setup`); variants with the same
  set-up share one server start.
- params: the values of the lab's own options (--concurrency, --requests, ...), as a dict.
- options: the driver's command-line options (`RunOptions`, `ServeOptions`); `setup_options`
  are the ones as typed that choose the set-up, which `run --target` and `serve` must share.
- settings: -D properties the reader adds with `--set KEY=VALUE`.
- load tool: ab or wrk; a `LoadResult` is what either reports.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from . import cpulimit, model, runtimes, tools
from .labs import LABS_DIR, package_name
from .errors import LabError, UsageError

REPO = Path(__file__).resolve().parents[2]
LAB_FILE = "lab.toml"


@dataclass
class Step:
    """How the driver measures one variant: an endpoint at one concurrency on one server set-up."""

    name: str
    endpoint: str
    concurrency: int
    requests: int
    # The server's -D properties. Steps with different set-ups get a server of their own.
    setup: dict[str, str] = field(default_factory=dict)
    # Settings the app changes while it runs, {property: URL path (with its query) that sets it}:
    # the driver POSTs each before this step's warm-up and again before its calibration and
    # measured run, so that steps that differ only in them share a server (lab 06:
    # {"lab.connections": "/connections?size=16"}). Keyed like `setup`, so that an exercise whose
    # app decides a property (pul.exercises) drops both.
    configure: dict[str, str] = field(default_factory=dict)
    # A server of its own even after a step with the same set-up (a repeat on a fresh server).
    fresh_server: bool = False
    # Runs only when `--variant` names it: a variant the lesson can do without, kept out of the
    # default run's few minutes.
    named_only: bool = False
    # The Java runtime the server runs on, a name from scripts/tools.json's "runtimes" that the
    # lab.toml lists (pul.runtimes); None: the java on PATH, which built it. Steps on different
    # runtimes get servers of their own.
    runtime: str | None = None
    # The CPU limit the server runs under, as a container's (pul.cpulimit; None: none, unless the
    # run's --cpu-limit gives every step one), and JVM options of its own (-XX:ActiveProcessorCount=2).
    # Steps with different limits or options get servers of their own.
    cpu_limit: cpulimit.Limit | None = None
    jvm_options: tuple[str, ...] = ()
    # Key in the app's /pools report whose `threads` bound the throughput (None: no pool bound).
    pool: str | None = None
    # Time one request holds a thread, in ms, for Little's law (None: no prediction).
    service_ms: float | None = None
    # A URL path polled 20 times a second *during* this step, to see if the server still answers.
    probe: str | None = None
    # Sample the server's listen queue during the measured runs (pul.listenq): how full the accept
    # backlog got and what overflowed it. Only for a server the driver started, on this machine.
    watch_listen_queue: bool = False
    # Sample the server's threads and resident memory during the measured runs (pul.footprint).
    # Only for a server the driver started, on this machine.
    watch_footprint: bool = False
    keep_alive: bool = False
    warmup_requests: int | None = None
    # Seconds a warm-up round lasts at most (None: as long as a measured run, `seconds`).
    warmup_seconds: int | None = None
    # Warm-up rounds repeat until two in a row agree within `warmup_settled` (a share), after at
    # least `warmup_min_rounds` and at most `warmup_max_rounds`, and the last round kept the JIT
    # compiler busy for at most `warmup_jit_quiet` of it (the CPU of its threads, from /proc, for a
    # server the driver started; a remote one's /pools reports jit_compile_seconds; None: do not
    # wait for it). Two rounds can agree by chance while the JIT is still speeding the server up.
    # warmup_max_rounds = 1: a single round, no settling (a step measured right after another
    # that warmed the server up; the round still calibrates it).
    warmup_settled: float = 0.10
    warmup_min_rounds: int = 2
    warmup_max_rounds: int = 8
    # The most rounds when the step is the first on its server, a cold JVM, where its
    # warmup_max_rounds counts on the steps before it (None: warmup_max_rounds either way).
    warmup_max_rounds_first: int | None = None
    warmup_jit_quiet: float | None = 0.10
    # Calibrate the CPU bounds before the measured run (pul.model): the last round run at this
    # step's settings gives the server's and the load generator's CPU per request. A calibration
    # round of its own sends `calibration_requests` (None: as a warm-up round); a second or more of
    # load, since the CPU time comes from /proc in ticks of 10 ms.
    calibrate: bool = True
    calibration_requests: int | None = None
    # Calibration rounds of its own, where the step runs them: the median round (by the server's CPU
    # per request) calibrates, so one round that something else on the machine slowed cannot set
    # the bound (lab 05's echo once calibrated 27% high from one such round).
    calibration_rounds: int = 1
    # A step the server's core binds whose run served each request with more than this share more
    # or less CPU than its calibration (pul.model.serving_drift) is calibrated and measured again
    # (pul.run): the two saw a core at different speeds.
    remeasure_drift: float = model.REMEASURE_DRIFT
    # Measured runs of this step, each with every tool in load_tools ("ab", "wrk"). With more than
    # one run, the variant's numbers come from the median run of the first tool, and every run is
    # kept under extra["runs"] (spread, and whether ab or the server was the limit).
    repeat: int = 1
    load_tools: tuple[str, ...] = ("ab",)
    # Steps on one server that all set this interleave their measured runs: run r of each before
    # run r + 1 of any, so that a drift over the measuring phase weighs on every step alike. The
    # lab's verify_step() then checks each run on its own (a record of that run alone).
    interleave: bool = False
    # Seconds each run (and warm-up round) lasts at most: ab -t, wrk -d (None: --time-limit for
    # ab, 10 s for wrk). With a large `requests`, this makes runs last a fixed time.
    seconds: int | None = None
    extra: dict = field(default_factory=dict)


def default_run(steps: list[Step]) -> list[Step]:
    """The steps a run without --variant makes: all but the named-only ones (Step.named_only)."""
    return [step for step in steps if not step.named_only]


@dataclass
class Services:
    """What a lab's services() hook started for its servers (lab 03: a database)."""

    # -D properties and environment variables every server of the run gets.
    properties: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    # The lab's own handles, for its inspect_server() and verify_step() (a database, a CPU meter).
    handles: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Prediction:
    """What the model says of a step, computed from the step and what the server reported;
    predict() returns it and changes nothing."""

    requests_per_sec: float | None
    explanation: str
    # What the prediction learnt on the way (calibration, other bounds), kept in the variant's extra.
    facts: dict = field(default_factory=dict)
    # The time one request holds a thread, when the model found it (else the step's service_ms).
    service_ms: float | None = None
    # The resource `requests_per_sec` is the bound of (pul.model's names: "threads", "database CPU"...).
    bound_by: str | None = None
    # Every bound the model knows, {resource: requests/s}, and how each was worked out.
    bounds: dict = field(default_factory=dict)
    arithmetic: dict = field(default_factory=dict)
    # A range, where the model knows only that much (lab 03's lockstep: pul.model.CONVOY): the
    # prediction is then its lower end, and this its upper.
    upper: float | None = None


class Lab:
    """A lab with Little's-law predictions from its pools; subclass to change any part."""

    # Generic options every lab understands; a lab lists the ones that apply to it.
    OPTION_HELP = {
        "concurrency": "requests in flight at once (ab -c)",
        "requests": "requests per variant (ab -n)",
        "pool_size": "threads in the lab's dedicated pool",
        "work_ms": "blocking work per request, in ms",
    }
    # Integer options for which 0 means something (the others must be at least 1).
    ZERO_ALLOWED: tuple[str, ...] = ()
    # Every request in service waits the same service_ms (a fixed sleep): after any pause of the
    # core they come back together and queue for it in a convoy, so predict() gives a range, from
    # that convoy up to the smooth mean-value prediction (pul.model.CONVOY). Labs 01 and 02.
    LOCKSTEP = False

    def __init__(self, lab_dir: Path, number: str, title: str, summary: str, defaults: dict,
                 tools_needed: tuple = (), book_outputs: tuple[str, ...] = (), runtimes: tuple = ()):
        self.dir = lab_dir
        self.number = number
        self.title = title
        self.summary = summary
        self.defaults = defaults
        self.tools_needed = tools_needed
        # The files under book/ that report() may write (lab.toml's [book] outputs).
        self.book_outputs = book_outputs
        # The Java runtimes its servers may run on besides the JDK on PATH (lab.toml's `runtimes`).
        self.runtimes = runtimes

    # -- identity ---------------------------------------------------------
    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def bench(self) -> Path:
        return self.dir / "bench.sh"

    @property
    def package(self) -> str:
        """The lab's folder as a Python package (pul.labs)."""
        return package_name(self.number)

    def module(self, name: str):
        """One of the lab's Python files, imported (None if it has none of that name)."""
        if not (self.dir / f"{name}.py").exists():
            return None
        return importlib.import_module(f"{self.package}.{name}")

    # -- command line -----------------------------------------------------
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Options of this lab (the generic ones it uses, plus its own)."""
        for key, default in self.defaults.items():
            if key in self.OPTION_HELP:
                parser.add_argument("--" + key.replace("_", "-"), type=int, default=default, metavar="N",
                                    help=f"{self.OPTION_HELP[key]} (default {default})")

    def params(self, options: argparse.Namespace) -> dict:
        params = {key: getattr(options, key) for key in self.defaults if hasattr(options, key)}
        for key, value in params.items():
            if isinstance(value, int) and value < (0 if key in self.ZERO_ALLOWED else 1):
                raise UsageError(f"--{key.replace('_', '-')} must be at least 1 (got {value})")
        return params

    # -- what to run ------------------------------------------------------
    def variants(self) -> list[str]:
        """Variant names, in the order they run, the named-only ones included."""
        return [step.name for step in self.steps(dict(self.defaults))]

    def variants_listed(self) -> str:
        """The variants for --help and `scripts/lab list`: those a default run leaves out say so."""
        return ", ".join(step.name + (" (only when named)" if step.named_only else "")
                         for step in self.steps(dict(self.defaults)))

    def server_properties(self, params: dict) -> dict[str, str]:
        """-D properties every server of this lab gets (params under the `lab.` prefix)."""
        return {f"lab.{key.replace('_', '-')}": str(value) for key, value in params.items()
                if key in ("pool_size", "work_ms")}

    def steps(self, params: dict) -> list[Step]:
        raise NotImplementedError

    @contextlib.contextmanager
    def services(self, context, params: dict) -> Iterator[Services]:
        """Things the server needs running first (a database), stopped when the run ends."""
        yield Services()

    def inspect_server(self, server, services: Services) -> dict:
        """What the driver learns from a freshly started server before measuring: its /pools report
        (the effective pool sizes), plus whatever else a lab calibrates there."""
        return server.pools()

    # -- prediction -------------------------------------------------------
    def predict(self, step: Step, pools: dict, params: dict) -> Prediction:
        """Little's law: throughput <= min(concurrency, threads) / service time. The driver adds
        the CPU bounds (pul.model) and predicts the smallest."""
        if step.service_ms is None:
            return Prediction(None, "no bound of the lab's own")
        if step.pool is None:
            in_service = step.concurrency
            why = f"{step.concurrency} in flight (no pool bound)"
            bound_by = "requests in flight"
        else:
            threads = pools["pools"][step.pool]["threads"]
            # threads None: the pool starts a thread per task (virtual threads), nothing to bound.
            in_service = step.concurrency if threads is None else min(step.concurrency, threads)
            why = (f"{step.concurrency} in flight (a new {step.pool} thread per task)" if threads is None
                   else f"min({step.concurrency} in flight, {threads} {step.pool} threads)")
            bound_by = "threads" if threads is not None and threads < step.concurrency else "requests in flight"
        # With every request in flight in service, each waits service_ms and then queues for the
        # server's CPU: pul.model predicts that loop by mean-value analysis. In lockstep, the
        # threads of a pool that binds do too: each of them waits and then uses the core.
        if self.LOCKSTEP:
            facts = model.in_lockstep(model.loop_facts(in_service, step.service_ms))
        else:
            facts = model.loop_facts(step.concurrency, step.service_ms) if in_service == step.concurrency else {}
        return Prediction(round(in_service / (step.service_ms / 1000.0), 1),
                          f"{why} / {step.service_ms:g} ms", facts, bound_by=bound_by)

    def verify_step(self, step: Step, server, record: dict, services: Services) -> None:
        """After a step is measured: check the server really ran what the step meant to measure
        (raise LabError if not). `server.get(path)` reads the running server."""

    # -- results (the lab's report.py) ------------------------------------
    def table_columns(self, results: dict):
        """Columns of the table `scripts/lab run` prints (None: results.STANDARD_COLUMNS)."""
        report = self.module("report")
        return report.table_columns(results) if hasattr(report, "table_columns") else None

    def summary_notes(self, results: dict) -> list[str]:
        """Lines printed under the table (lab-specific observations)."""
        report = self.module("report")
        return report.summary_notes(results) if hasattr(report, "summary_notes") else []

    def report(self, results: dict) -> dict[str, str]:
        """Book artifacts, {path relative to the repository: content}, from a results file."""
        report = self.module("report")
        if not hasattr(report, "render"):
            return {}
        artifacts = report.render(results, self)
        undeclared = sorted(set(artifacts) - set(self.book_outputs))
        if undeclared:
            raise LabError(f"{self.dir / 'report.py'} writes {', '.join(undeclared)}, which {LAB_FILE}'s "
                           "[book] outputs does not list")
        return artifacts

    def facts(self, results: dict) -> dict:
        """What the lab's report computes from a results file beyond its records (a fitted slope, a
        share), {name: number or string}, for the prose's claims (pul.claims: labNN.facts.NAME):
        report.py's facts(results, lab), where it has one."""
        report = self.module("report")
        return dict(report.facts(results, self)) if report is not None and hasattr(report, "facts") else {}


def _check_keys(path: Path, table: dict, required: dict, optional: dict) -> None:
    for key in required:
        if key not in table:
            raise LabError(f"{path}: missing {key!r}")
    for key, value in table.items():
        kind = required.get(key) or optional.get(key)
        if kind is None:
            raise LabError(f"{path}: unknown key {key!r} (known: {', '.join([*required, *optional])})")
        if not isinstance(value, kind):
            raise LabError(f"{path}: {key!r} must be a {kind.__name__} (got {value!r})")


def load(lab_dir: Path) -> Lab:
    """The lab in `lab_dir`: its lab.toml, and the Lab subclass its driver.py defines."""
    path = lab_dir / LAB_FILE
    try:
        meta = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise LabError(f"{path}: {error}")
    _check_keys(path, meta, {"title": str, "summary": str, "defaults": dict},
                {"tools": list, "runtimes": list, "book": dict, "test": dict})
    book = meta.get("book", {})
    _check_keys(path, book, {}, {"chapter": str, "outputs": list})
    number = lab_dir.name[:2]
    if not (lab_dir / "driver.py").exists():
        raise LabError(f"{lab_dir} has {LAB_FILE} but no driver.py (see CONTRIBUTING.md, \"Adding a lab\")")
    module = importlib.import_module(f"{package_name(number)}.driver")
    classes = [cls for _, cls in inspect.getmembers(module, inspect.isclass)
               if issubclass(cls, Lab) and cls.__module__ == module.__name__]
    if len(classes) != 1:
        raise LabError(f"{lab_dir / 'driver.py'} must define exactly one subclass of pul.lab.Lab "
                       f"(found {', '.join(c.__name__ for c in classes) or 'none'})")
    return classes[0](lab_dir, number, meta["title"], meta["summary"], dict(meta["defaults"]),
                      tools.named(meta.get("tools", [])), tuple(book.get("outputs", ())),
                      runtimes.named(meta.get("runtimes", [])))


def all_labs() -> list[tuple[str, Path, Lab | None]]:
    """(number, directory, Lab or None when the folder has no lab.toml)."""
    found = []
    for lab_dir in sorted(LABS_DIR.glob("[0-9][0-9]-*")):
        if lab_dir.is_dir():
            has_lab = (lab_dir / LAB_FILE).exists()
            found.append((lab_dir.name[:2], lab_dir, load(lab_dir) if has_lab else None))
    return found


def resolve(name: str) -> Lab:
    """A lab from its number (`NN` or `N`), its folder's name (`NN-name`) or path (`labs/NN-name/`)."""
    labs = all_labs()
    wanted = Path(name.rstrip("/")).name
    match = re.match(r"^(\d{1,2})(?:-|$)", wanted)
    for number, lab_dir, lab in labs:
        if wanted == lab_dir.name or (match and int(match.group(1)) == int(number)
                                      and (wanted == match.group(1) or wanted == lab_dir.name)):
            if lab is None:
                raise UsageError(f"{lab_dir} has no {LAB_FILE}, so the driver cannot run it "
                                 "(see CONTRIBUTING.md, \"Adding a lab\").")
            return lab
    listing = "\n".join(f"  {lab_dir.name}" for _, lab_dir, _ in labs) or "  (none)"
    raise UsageError(f"unknown lab {name!r}. The labs are:\n{listing}")
