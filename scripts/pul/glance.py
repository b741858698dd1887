"""The book's "At a glance" page: each rule's worked number, from the labs' runs.

`artifacts()` gives {path: text} for book/src/generated/at-a-glance-*.md, one file per rule of
book/src/at-a-glance.md, written from each lab's results/latest.json (and what its report.py
computes of it, `facts`). `scripts/lab report` writes them with the other book-wide pages and
`scripts/lab report --check` fails when one is stale; `scripts/lab run NN` rewrites the ones its
run feeds. Symbols as book/src/symbols.md defines them.

A reader's own run may lack a variant a rule reads (`--variant NAME`): the rule then says so
instead of a number, and the page still builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import model
from .lab import Lab, all_labs
from .results import load

GENERATED = Path("book") / "src" / "generated"

# The question the page answers with the rules: "50 ms of blocking, 100 clients, 4 cores: what
# throughput and latency?" (round numbers of a reader's own service, not a measurement).
EXAMPLE = {"wait_ms": 50, "clients": 100, "cores": 4}
# Akka's default dispatcher: parallelism-min 8, factor 1.0, max 64 (reference.conf of Akka 2.6
# and Pekko 1.0), so max(8, cores) threads, at most 64.
DEFAULT_DISPATCHER = {"min": 8, "factor": 1.0, "max": 64}
# Play's HikariCP pool: play.db.prototype.hikaricp.maximumPoolSize = 10 (play-jdbc's reference.conf,
# the same at Play 2.9.11 and 3.0.9).
PLAY_MAX_POOL_SIZE = 10
# A filter's slope is resolved when this many filters cost more than the noise (chapter 4: "even
# ten of them would cost less than the noise").
RESOLVING_FILTERS = 10


@dataclass
class Run:
    """One lab's run as a rule reads it: its results (None without any) and its report's facts."""

    number: str
    data: dict | None
    lab: Lab | None = None
    _facts: dict | None = field(default=None, repr=False)

    def variant(self, name: str) -> dict | None:
        return next((v for v in (self.data or {}).get("variants", []) if v["name"] == name), None)

    def facts(self) -> dict:
        """What the lab's report.py computes of the run (pul.claims' labNN.facts); none where it
        cannot work on this run (a reader's run of a few variants may lack what it reads)."""
        if self._facts is None:
            try:
                self._facts = self.lab.facts(self.data) if self.lab is not None and self.data else {}
            except (KeyError, IndexError, TypeError, ValueError, StopIteration, ZeroDivisionError):
                self._facts = {}
        return self._facts

    def report(self):
        return self.lab.module("report") if self.lab is not None else None


def _shown(x: float, digits: int) -> float:
    """`x` as the page shows it, to `digits` decimals: a formula's result is worked from its inputs
    as shown, so that its last digit is the reader's own arithmetic."""
    return float(f"{x:.{digits}f}")


def _rate(x: float) -> str:
    return f"{x:,.0f} req/s"


def _ms(x: float, digits: int = 1) -> str:
    return f"{x:,.{digits}f} ms"


def _us(x: float) -> str:
    """Microseconds to two or three significant figures (0.15 µs, 7.7 µs, 138 µs)."""
    return f"{x:,.{2 if abs(x) < 1 else 1 if abs(x) < 100 else 0}f} µs"


def _s(ms: float) -> str:
    """Milliseconds as seconds, as the formulas write them (0.030 s)."""
    return f"{ms / 1000:.3f} s"


def _missing(run: Run, *names: str) -> str:
    """What a rule says instead of its number where the run lacks what it reads."""
    if not run.data:
        return f"Lab {run.number} has no run to work this rule on: `scripts/lab run {run.number}` makes one.\n"
    quoted = [f"`{name}`" for name in names]
    what = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return (f"Lab {run.number}'s run has no {what} to work this rule on: `scripts/lab run {run.number}` "
            "measures it.\n")


def _run_line(run: Run) -> str:
    return f"Lab {run.number}'s run (`scripts/lab run {run.number}`)"


# -- the rules --------------------------------------------------------------------------------

def littles_law(lab01: Run) -> str:
    """L = λ × W on a blocking variant; busy threads λ × S on an offloaded one."""
    blocking, offloaded = lab01.variant("java-blocking"), lab01.variant("java-offloaded")
    if blocking is None:
        return _missing(lab01, "java-blocking")
    rate, latency = _shown(blocking["requests_per_sec"], 0), _shown(blocking["mean_ms"] / 1000, 3)
    text = (f"{_run_line(lab01)}, `java-blocking`: *λ* = {_rate(rate)} and *W* = {latency:.3f} s, so "
            f"*L* = *λ* × *W* = {rate * latency:.1f} requests in the system, against the "
            f"*c* = {blocking['concurrency']} that `ab` kept in flight.")
    if offloaded is not None:
        rate, service = _shown(offloaded["requests_per_sec"], 0), _shown(offloaded["service_ms"] / 1000, 3)
        text += (f" `java-offloaded`: *n* = *λ* × *S* = {rate:,.0f}/s × {service:.3f} s = {rate * service:.1f} "
                 f"threads busy at once: the threads that load needs, of the pool's *T* = "
                 f"{offloaded['pool_threads']}.")
    return text + "\n"


def pool_bound(lab01: Run) -> str:
    """min(c, T) ÷ S against the measured rate, and W = c ÷ λ."""
    v = lab01.variant("java-blocking")
    if v is None or not v.get("pool_threads") or not v.get("requests_per_sec"):
        return _missing(lab01, "java-blocking")
    c, threads, service = v["concurrency"], v["pool_threads"], _shown(v["service_ms"] / 1000, 3)
    bound = _shown(min(c, threads) / service, 0)
    rate = _shown(v["requests_per_sec"], 0)
    return (f"{_run_line(lab01)}, `java-blocking`, its work on Play's default dispatcher: "
            f"min(*c*, *T*) ÷ *S* = min({c}, {threads}) ÷ {service:.3f} s = {_rate(bound)}; it served "
            f"{_rate(rate)} ({rate / bound:.2f} of it), and *W* = *c* ÷ *λ* = {c} ÷ {rate:,.0f}/s = "
            f"{_ms(c * 1000 / rate, 0)}, where `ab` timed a mean of {_ms(v['mean_ms'], 0)}: "
            f"{_ms(v['service_ms'], 0)} of work, the rest waiting for a thread.\n")


def utilisation_law(lab05: Run) -> str:
    """k ÷ D at the echo's plateau, the core's busy share beside the measured rate."""
    report = lab05.report()
    echo = report.echo_model(lab05.data) if report is not None and lab05.data else None
    v = lab05.variant(f"c={echo['best_c']}") if echo else None
    calibration = (v or {}).get("calibration") or {}
    bound = ((v or {}).get("bounds") or {}).get(model.SERVER_CPU)
    if v is None or not calibration.get("server_cpu_ms") or not bound:
        return _missing(lab05, "c=1", "c=64")
    cores, cpu_ms = calibration["server_cores"], _shown(calibration["server_cpu_ms"], 3)
    share = _shown(model.compiler_share(calibration), 2)
    top = f"({cores:g} − {share:.2f}, the JIT compiler's share)" if share else f"{cores:g}"
    # The bound worked from the inputs as shown (the driver's, from unrounded ones, may differ in
    # its last digit).
    bound = _shown((cores - share) * 1000 / cpu_ms, 0)
    rate = _shown(v["requests_per_sec"], 0)
    busy = v.get("server_cpu_utilization")
    return (f"{_run_line(lab05)}, the JSON echo at *c* = {v['concurrency']}, its best step: *D* = "
            f"{_ms(cpu_ms, 3)} of server CPU per request, calibrated just before the step, on *k* = {cores:g} "
            f"core{'' if cores == 1 else 's'}: *λ* ≤ *k* ÷ *D* = {top} ÷ {_ms(cpu_ms, 3)} = {_rate(bound)}. "
            f"It served {_rate(rate)} ({rate / bound:.2f} of the bound)"
            + (f", with the core *U* = {busy:.0%} busy" if busy is not None else "") + ".\n")


def jdbc_sizing(lab03: Run) -> str:
    """The corner N* = k × S ÷ d against HikariCP's k × 2, and the dispatcher's threads T against N."""
    f = lab03.facts()
    parts = []
    if "corner" in f:
        hold, cpu = _shown(f["hold_ms"], 1), _shown(f["d_ms"], 2)
        parts.append(
            f"{_run_line(lab03)}: each request checked out a connection once and held it *S* = {_ms(hold)} (*w* = "
            f"{_ms(f['wait_ms'], 0)} of `pg_sleep`, the rest its work) and cost PostgreSQL *d* = "
            f"{_ms(cpu, 2)} of CPU on *k* = {f['cores']} core{'' if f['cores'] == 1 else 's'}, so "
            f"*N*\\* = *k* × *S* ÷ *d* = {f['cores']} × {_ms(hold)} ÷ {_ms(cpu, 2)} ≈ "
            f"{f['cores'] * hold / cpu:.0f} connections, where HikariCP's *k* × 2 + spindles gives "
            f"{f['hikari_connections']} (the data in memory).")
        if "corner_over_hikari" in f:
            parts.append(f"The sweep's step nearest the corner (`pool={f['corner_pool']}`) served "
                         f"{f['corner_over_hikari']:.1f} times what the step nearest HikariCP's number "
                         f"(`pool={f['hikari_pool']}`) served: `pg_sleep` waits share nothing.")
    default, sized, oversized = (lab03.variant(name) for name in
                                 ("default-dispatcher", "database-dispatcher", "oversized-dispatcher"))
    if default and sized:
        parts.append(f"Threads: with *T* = *N* = {sized['pool_threads']} (`database-dispatcher`) the endpoint served "
                     f"{_rate(sized['requests_per_sec'])}, against {_rate(default['requests_per_sec'])} with the "
                     f"JDBC calls on the default dispatcher's *T* = {default['pool_threads']} "
                     f"(`default-dispatcher`).")
    if oversized and sized and oversized.get("complete"):
        timeout = (lab03.data.get("params") or {}).get("connection_timeout_ms")
        goodput = f.get("goodput_oversized_dispatcher")
        parts.append(f"With *T* = {oversized['pool_threads']} threads for *N* = "
                     f"{(oversized.get('extra') or {}).get('connections', '?')} connections "
                     f"(`oversized-dispatcher`), {oversized['non_2xx'] / oversized['complete']:.0%} of the answers "
                     f"were 503s" + (f", after HikariCP's {timeout}-ms `connectionTimeout`" if timeout else "")
                     + (f", and its goodput was {_rate(goodput)}" if goodput is not None else "") + ".")
    if not parts:
        return _missing(lab03, "pool=32", "database-dispatcher")
    return " ".join(parts) + "\n"


def convoy(lab03: Run) -> str:
    """A lockstep step's range: the perfect convoy's floor up to the smooth prediction."""
    step = next((v for v in (lab03.data or {}).get("variants", [])
                 if ((v.get("extra") or {}).get(model.CONVOY) or {}).get("floor_requests_per_sec")), None)
    if step is None:
        return _missing(lab03, "lockstep-pool=32")
    c, extra = step["extra"][model.CONVOY], step["extra"]
    n, wait, cpu = c["in_service"], _shown(c["wait_ms"], 0), _shown(c["cpu_ms"], 2)
    # The requests in service: a JDBC call holds a thread of the dispatcher and a connection, so
    # n = min(c, T, N); a step of the default mode has fewer threads than connections.
    threads = extra.get("dispatcher_size") or step.get("pool_threads")
    connections = extra.get("connections") or extra.get("pool_size")
    in_service = (f"*n* = min(*c*, *T*, *N*) = min({step['concurrency']}, {threads}, {connections}) = {n} "
                  f"requests in service (*T* the dispatcher's threads, *N* the connections), "
                  if threads and connections and min(step["concurrency"], threads, connections) == n else
                  f"*n* = {n} requests in service, ")
    floor = _shown(n * 1000 / (wait + n * cpu / c["cores"]), 0)
    smooth, rate = _shown(c["smooth_requests_per_sec"], 0), _shown(step["requests_per_sec"], 0)
    return (f"{_run_line(lab03)}, `{step['name']}`: {in_service}every wait exactly *w* = {_ms(wait, 0)}. The "
            f"floor *n* ÷ (*w* + *n* × *D* ÷ *k*) = {n} ÷ ({_ms(wait, 0)} + {n} × {_ms(cpu, 2)} ÷ "
            f"{c['cores']:g}) = {_rate(floor)}, the smooth prediction (mean-value analysis) {_rate(smooth)}. "
            f"It served {_rate(rate)}: {rate / floor:.2f} times the floor, {rate / smooth:.2f} of the smooth "
            "prediction.\n")


def filter_cost(lab04: Run) -> str:
    """1 ÷ λ of the baseline, and each kind of filter's cost per request (the fitted slope)."""
    f = lab04.facts()
    if "baseline_us" not in f:
        return _missing(lab04, "none")
    text = (f"{_run_line(lab04)}, measured with {f.get('reference_tool', 'ab')}: a request with no filters "
            f"(`none`) took 1 ÷ *λ* = {_us(f['baseline_us'])}")
    if f.get("baseline_limit") == model.SERVER_CPU and f.get("baseline_server_cpu") is not None:
        text += (f", the server's core setting the pace (*U* = {f['baseline_server_cpu']:.0%}, `ab`'s "
                 f"{f['baseline_load_cpu']:.0%})")
    elif f.get("baseline_limit"):
        text += f", paced by the {f['baseline_limit']}, not the server's core: read the costs with care"
    noise = f.get("noise_us")
    if noise is not None:
        text += (f". The noise, 1 ÷ *λ* of the slowest run of `none` less that of its fastest, was "
                 f"{_us(noise)}")
    kinds = [(name, label) for name, label in (("scala_filter_us", "Scala `Filter`"),
                                               ("scala_essential_filter_us", "Scala `EssentialFilter`"),
                                               ("java_filter_us", "Java `Filter`"),
                                               ("java_essential_filter_us", "Java `EssentialFilter`")) if name in f]
    if kinds:
        text += (". Per filter (the slope of the cost against the chain length *f*): "
                 + ", ".join(f"a {label} {filter_slope(f[name], noise)}" for name, label in kinds))
    return text + ".\n"


def filter_slope(slope_us: float, noise_us: float | None) -> str:
    """One filter's cost, or "not resolved" where RESOLVING_FILTERS of them cost less than the
    noise: a slope that small is the fit's noise, not the filter's price (chapter 4)."""
    if noise_us is not None and RESOLVING_FILTERS * slope_us < noise_us:
        return f"not resolved ({RESOLVING_FILTERS} × its slope below the noise)"
    return _us(slope_us)


def knee(lab05: Run) -> str:
    """c* = m on the fixed road, and c* = λ_max × W₁ for the echo."""
    report = lab05.report()
    if report is None or not lab05.data or not (lab05.data.get("pools") or {}).get("pools", {}).get("lanes"):
        return _missing(lab05, "fixed-c=1")
    road = report.fixed_model(lab05.data)
    m, service = road["lanes"], _shown(road["work_ms"] / 1000, 3)
    capacity = _shown(m / service, 0)
    text = (f"{_run_line(lab05)}, the fixed road: *m* = {m} lanes of *S* = {_ms(road['work_ms'], 0)}, so "
            f"*λ*<sub>max</sub> = *m* ÷ *S* = {m} ÷ {service:.3f} s = {_rate(capacity)} and *c*\\* = *m* = {m}.")
    steps = sorted((v for v in lab05.data["variants"] if v["name"].startswith("fixed-c=")),
                   key=lambda v: v["concurrency"])
    at_knee = next((v for v in steps if v["concurrency"] == m), None)
    if at_knee:
        text += (f" At *c* = {m} it served {_rate(at_knee['requests_per_sec'])} with *W* = "
                 f"{_ms(at_knee['mean_ms'])}.")
    if steps and steps[-1]["concurrency"] > m:
        top = steps[-1]
        text += (f" At *c* = {top['concurrency']}: {_rate(top['requests_per_sec'])} with *W* = "
                 f"{_ms(top['mean_ms'])}, where *c* ÷ *λ*<sub>max</sub> = {top['concurrency']} ÷ "
                 f"{capacity:,.0f}/s = {_ms(top['concurrency'] * 1000 / capacity, 0)}.")
    echo = report.echo_model(lab05.data)
    if echo:
        r1_ms, best, knee_c = report.knee_arithmetic(echo)
        text += (f" The echo: *W*₁ = {_ms(r1_ms, 3)} alone, *λ*<sub>max</sub> = "
                 f"{_rate(best)} (its best, at *c* = {echo['best_c']:,}), so *c*\\* = "
                 f"*λ*<sub>max</sub> × *W*₁ = {best:,.0f}/s × {r1_ms / 1000:.6f} s ≈ {knee_c:.1f}.")
    return text + "\n"


def virtual_threads(lab06: Run) -> str:
    """No threads' bound on virtual threads; k carriers ÷ S when pinned; N ÷ S on a pool of connections."""
    parts = []
    virtual, pinned, jdbc = (lab06.variant(name) for name in ("virtual", "synchronized-jdk21", "jdbc-connections=4"))
    if virtual:
        bounds = virtual.get("bounds") or {}
        rate, c, service = virtual["requests_per_sec"], virtual["concurrency"], _shown(virtual["service_ms"] / 1000, 3)
        parts.append(f"{_run_line(lab06)}, `virtual`: *c* ÷ *S* = {c} ÷ {service:.3f} s = {_rate(c / service)}"
                     + (f" and the core's *k* ÷ *D* = {_rate(bounds[model.SERVER_CPU])}"
                        if bounds.get(model.SERVER_CPU) else "")
                     + f"; it served {_rate(rate)}, no pool of threads in the way.")
    if pinned:
        carriers = (pinned.get("extra") or {}).get("carriers") or pinned.get("pool_threads")
        service = _shown(pinned["service_ms"] / 1000, 3)
        parts.append(f"`synchronized-jdk21`, pinned on Java 21: {carriers} carrier{'' if carriers == 1 else 's'} "
                     f"÷ *S* = {carriers} ÷ {service:.3f} s = {_rate(carriers / service)}; it served "
                     f"{pinned['requests_per_sec']:,.1f} req/s. " + pinned_latency(pinned, lab06.report()))
    if jdbc:
        connections = (jdbc.get("extra") or {}).get("connections")
        service = _shown(jdbc["service_ms"], 1)
        if connections:
            parts.append(f"`jdbc-connections={connections}`: *N* ÷ *S* = {connections} ÷ {_ms(service, 1)} = "
                         f"{_rate(connections * 1000 / service)}; it served {_rate(jdbc['requests_per_sec'])}.")
    if not parts:
        return _missing(lab06, "virtual", "synchronized-jdk21", "jdbc-connections=4")
    return " ".join(parts) + "\n"


# ab's mean latency is short of Little's law's c ÷ λ by more than this share when the requests it
# left in flight at the end of its run (whose waits it never times) held much of the run's waiting.
SHORT_MEAN = 0.9


def pinned_latency(v: dict, report) -> str:
    """W of a pinned step by Little's law, c ÷ λ; and why ab's mean falls short of it, where it does:
    ab times only the requests that finished before its run ended, and the c it left in flight had
    waited too (chapter 6, "The pinned row's latency")."""
    c, rate = v["concurrency"], _shown(v["requests_per_sec"], 1)
    little_s = c / rate
    text = f"By Little's law *W* = *c* ÷ *λ* = {c} ÷ {rate:,.1f}/s = {little_s:.2f} s"
    if v.get("mean_ms") is None:
        return text + "."
    if v["mean_ms"] / 1000 >= SHORT_MEAN * little_s:
        return text + f", and `ab` timed a mean of {_ms(v['mean_ms'], 0)}."
    left = getattr(report, "left_waiting_s", None) if report is not None else None
    left_s = left(v) if left is not None else None
    return (text + f"; `ab`'s mean, {_ms(v['mean_ms'], 0)}, is shorter because it times only the requests "
            f"that finished before its run did, not the {c} it left in flight"
            + (f", which had waited {left_s:.1f} s each on average when it stopped" if left_s else "") + ".")


def default_dispatcher_threads(cores: int) -> int:
    """Akka's fork-join default dispatcher: cores × factor, at least min, at most max."""
    d = DEFAULT_DISPATCHER
    return int(min(d["max"], max(d["min"], cores * d["factor"])))


def example(lab01: Run) -> str:
    """The page's first question, worked with the rules and lab 01's measured CPU per request."""
    wait, clients, cores = EXAMPLE["wait_ms"], EXAMPLE["clients"], EXAMPLE["cores"]
    threads = default_dispatcher_threads(cores)
    blocked = min(clients, threads) * 1000 / wait
    offloaded = clients * 1000 / wait
    text = (f"- **Blocking on Play's default dispatcher**, which has max({DEFAULT_DISPATCHER['min']}, *k*) = "
            f"{threads} threads on "
            f"{cores} cores: *λ* ≤ min(*c*, *T*) ÷ *S* = min({clients}, {threads}) ÷ {_s(wait)} = "
            f"{_rate(blocked)}, and *W* = *c* ÷ *λ* = {clients} ÷ {blocked:,.0f}/s = "
            f"{_ms(clients * 1000 / blocked, 0)}: {_ms(wait, 0)} of work, the rest waiting for a thread.\n"
            f"- **On a pool of its own** with a thread for each client (*T* ≥ {clients}): *λ* ≤ {clients} ÷ "
            f"{_s(wait)} = {_rate(offloaded)}, and *W* ≈ *S* = {_ms(wait, 0)}, if the cores allow it.")
    v = lab01.variant("java-offloaded")
    cpu_ms = ((v or {}).get("calibration") or {}).get("server_cpu_ms")
    if cpu_ms:
        cpu_ms = _shown(cpu_ms, 3)
        ceiling = cores * 1000 / cpu_ms
        share = offloaded * cpu_ms / 1000 / cores
        text += (f" Lab 01's offloaded requests cost its server *D* = {_ms(cpu_ms, 3)} of CPU each "
                 f"(`java-offloaded`, calibrated in lab {lab01.number}'s run). At that price {cores} cores allow "
                 f"*k* ÷ *D* = {cores} ÷ {_ms(cpu_ms, 3)} = {_rate(ceiling)}, "
                 f"and {_rate(offloaded)} keeps them *U* = *λ* × *D* ÷ *k* = {share:.0%} busy: "
                 + ("the threads' bound holds, with little queueing for the cores." if share < 0.5 else
                    "the cores are close enough to full that requests queue for them: expect less than the "
                    "threads' bound (mean-value analysis)."))
    connections = min(clients, PLAY_MAX_POOL_SIZE)
    jdbc = connections * 1000 / wait
    text += (f"\n- **If the {_ms(wait, 0)} of blocking is a JDBC call**, the connections bound it too, however many threads "
             f"the pool has: Play's HikariCP pool has *N* = {PLAY_MAX_POOL_SIZE} connections unless you set "
             f"`maximumPoolSize`, so *λ* ≤ min(*c*, *T*, *N*) ÷ *S* = min({clients}, {clients}, "
             f"{PLAY_MAX_POOL_SIZE}) ÷ {_s(wait)} = {_rate(jdbc)}, and *W* = *c* ÷ *λ* = {clients} ÷ "
             f"{jdbc:,.0f}/s = {_ms(clients * 1000 / jdbc, 0)}.")
    return text + "\n"


# -- the files ------------------------------------------------------------------------------

RULES = {
    "littles-law": ("01", littles_law),
    "pool-bound": ("01", pool_bound),
    "utilisation-law": ("05", utilisation_law),
    "jdbc-sizing": ("03", jdbc_sizing),
    "convoy": ("03", convoy),
    "filter-cost": ("04", filter_cost),
    "knee": ("05", knee),
    "virtual-threads": ("06", virtual_threads),
    "example": ("01", example),
}


def path(name: str) -> Path:
    return GENERATED / f"at-a-glance-{name}.md"


def render(runs: dict[str, Run]) -> dict[Path, str]:
    """{path relative to the repository: text} for every rule, from `runs`: {lab number: Run}."""
    return {path(name): rule(runs.get(number) or Run(number, None)) for name, (number, rule) in RULES.items()}


def labs_runs() -> dict[str, Run]:
    """Each lab's run as its results/latest.json holds it (None for a lab without one)."""
    runs = {}
    for number, _, lab in all_labs():
        if lab is None:
            continue
        latest = lab.dir / "results" / "latest.json"
        runs[number] = Run(number, load(latest) if latest.exists() else None, lab)
    return runs


def artifacts() -> dict[Path, str]:
    """The page's generated files, {absolute path: text}, from the working tree's runs."""
    from .lab import REPO

    return {REPO / rel: text for rel, text in render(labs_runs()).items()}
