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
    rate, latency = blocking["requests_per_sec"], blocking["mean_ms"]
    text = (f"{_run_line(lab01)}, `java-blocking`: *λ* = {_rate(rate)} and *W* = {_s(latency)}, so "
            f"*L* = *λ* × *W* = {rate * latency / 1000:.1f} requests in the system, against the "
            f"*c* = {blocking['concurrency']} that `ab` kept in flight.")
    if offloaded is not None:
        busy = offloaded["requests_per_sec"] * offloaded["service_ms"] / 1000
        text += (f" `java-offloaded`: *n* = *λ* × *S* = {offloaded['requests_per_sec']:,.0f}/s × "
                 f"{_s(offloaded['service_ms'])} = {busy:.1f} threads busy at once: the threads that load "
                 f"needs, of the pool's *T* = {offloaded['pool_threads']}.")
    return text + "\n"


def pool_bound(lab01: Run) -> str:
    """min(c, T) ÷ S against the measured rate, and W = c ÷ λ."""
    v = lab01.variant("java-blocking")
    if v is None or not v.get("pool_threads") or not v.get("requests_per_sec"):
        return _missing(lab01, "java-blocking")
    c, threads, service = v["concurrency"], v["pool_threads"], v["service_ms"]
    bound = min(c, threads) * 1000 / service
    rate = v["requests_per_sec"]
    return (f"{_run_line(lab01)}, `java-blocking`, its work on Play's default dispatcher: "
            f"min(*c*, *T*) ÷ *S* = min({c}, {threads}) ÷ {_s(service)} = {_rate(bound)}; it served "
            f"{_rate(rate)} ({rate / bound:.2f} of it), and *W* = *c* ÷ *λ* = {c} ÷ {rate:,.0f}/s = "
            f"{_ms(c * 1000 / rate, 0)}, where `ab` timed a mean of {_ms(v['mean_ms'], 0)}: "
            f"{_ms(service, 0)} of work, the rest waiting for a thread.\n")


def utilisation_law(lab05: Run) -> str:
    """k ÷ D at the echo's plateau, the core's busy share beside the measured rate."""
    report = lab05.report()
    echo = report.echo_model(lab05.data) if report is not None and lab05.data else None
    v = lab05.variant(f"c={echo['best_c']}") if echo else None
    calibration = (v or {}).get("calibration") or {}
    bound = ((v or {}).get("bounds") or {}).get(model.SERVER_CPU)
    if v is None or not calibration.get("server_cpu_ms") or not bound:
        return _missing(lab05, "c=1", "c=64")
    cores, cpu_ms, share = calibration["server_cores"], calibration["server_cpu_ms"], calibration.get("jit_share") or 0
    top = f"({cores:g} − {share:.2g}, the JIT compiler's share)" if share else f"{cores:g}"
    rate = v["requests_per_sec"]
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
        parts.append(
            f"{_run_line(lab03)}: each query held its connection *S* = {_ms(f['hold_ms'])} (*w* = "
            f"{_ms(f['wait_ms'], 0)} of `pg_sleep`, the rest its work) and cost PostgreSQL *d* = "
            f"{_ms(f['d_ms'], 2)} of CPU on *k* = {f['cores']} core{'' if f['cores'] == 1 else 's'}, so "
            f"*N*\\* = *k* × *S* ÷ *d* = {f['cores']} × {_ms(f['hold_ms'])} ÷ {_ms(f['d_ms'], 2)} ≈ "
            f"{f['corner']:.0f} connections, where HikariCP's *k* × 2 + spindles gives {f['hikari_connections']} "
            "(the data in memory).")
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
    c = step["extra"][model.CONVOY]
    floor, smooth, rate = c["floor_requests_per_sec"], c["smooth_requests_per_sec"], step["requests_per_sec"]
    return (f"{_run_line(lab03)}, `{step['name']}`, every wait exactly *w* = {_ms(c['wait_ms'], 0)}: the floor "
            f"*n* ÷ (*w* + *n* × *D* ÷ *k*) = {c['in_service']} ÷ ({_ms(c['wait_ms'], 0)} + {c['in_service']} × "
            f"{_ms(c['cpu_ms'], 2)} ÷ {c['cores']:g}) = {_rate(floor)}, the smooth prediction (mean-value "
            f"analysis) {_rate(smooth)}. It served {_rate(rate)}: {rate / floor:.2f} times the floor, "
            f"{rate / smooth:.2f} of the smooth prediction.\n")


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
    kinds = [(name, label) for name, label in (("scala_filter_us", "Scala `Filter`"),
                                               ("scala_essential_filter_us", "Scala `EssentialFilter`"),
                                               ("java_filter_us", "Java `Filter`"),
                                               ("java_essential_filter_us", "Java `EssentialFilter`")) if name in f]
    if kinds:
        text += (". Per filter (the slope of the cost against the chain length *f*): "
                 + ", ".join(f"a {label} {_us(f[name])}" for name, label in kinds))
    if f.get("noise_us") is not None:
        text += (f". The noise, 1 ÷ *λ* of the slowest run of `none` less that of its fastest, was "
                 f"{_us(f['noise_us'])}")
    return text + ".\n"


def knee(lab05: Run) -> str:
    """c* = m on the fixed road, and c* = λ_max × W₁ for the echo."""
    report = lab05.report()
    if report is None or not lab05.data or not (lab05.data.get("pools") or {}).get("pools", {}).get("lanes"):
        return _missing(lab05, "fixed-c=1")
    road = report.fixed_model(lab05.data)
    m, service, capacity = road["lanes"], road["work_ms"], road["capacity"]
    text = (f"{_run_line(lab05)}, the fixed road: *m* = {m} lanes of *S* = {_ms(service, 0)}, so "
            f"*λ*<sub>max</sub> = *m* ÷ *S* = {m} ÷ {_s(service)} = {_rate(capacity)} and *c*\\* = *m* = {m}.")
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
        text += (f" The echo: *W*₁ = {_ms(echo['r1_ms'], 2)} alone, *λ*<sub>max</sub> = "
                 f"{_rate(echo['capacity'])} (its best, at *c* = {echo['best_c']:,}), so *c*\\* = "
                 f"*λ*<sub>max</sub> × *W*₁ ≈ {echo['knee']:.1f}.")
    return text + "\n"


def virtual_threads(lab06: Run) -> str:
    """No threads' bound on virtual threads; k carriers ÷ S when pinned; N ÷ S on a pool of connections."""
    parts = []
    virtual, pinned, jdbc = (lab06.variant(name) for name in ("virtual", "synchronized-jdk21", "jdbc-connections=4"))
    if virtual:
        bounds = virtual.get("bounds") or {}
        rate, c, service = virtual["requests_per_sec"], virtual["concurrency"], virtual["service_ms"]
        parts.append(f"{_run_line(lab06)}, `virtual`: *c* ÷ *S* = {c} ÷ {_s(service)} = {_rate(c * 1000 / service)}"
                     + (f" and the core's *k* ÷ *D* = {_rate(bounds[model.SERVER_CPU])}"
                        if bounds.get(model.SERVER_CPU) else "")
                     + f"; it served {_rate(rate)}, no pool of threads in the way.")
    if pinned:
        carriers = (pinned.get("extra") or {}).get("carriers") or pinned.get("pool_threads")
        service = pinned["service_ms"]
        parts.append(f"`synchronized-jdk21`, pinned on Java 21: {carriers} carrier{'' if carriers == 1 else 's'} "
                     f"÷ *S* = {carriers} ÷ {_s(service)} = {_rate(carriers * 1000 / service)}; it served "
                     f"{pinned['requests_per_sec']:,.1f} req/s, with *W* = {_ms(pinned['mean_ms'], 0)}.")
    if jdbc:
        connections = (jdbc.get("extra") or {}).get("connections")
        service = jdbc["service_ms"]
        if connections:
            parts.append(f"`jdbc-connections={connections}`: *N* ÷ *S* = {connections} ÷ {_ms(service, 1)} = "
                         f"{_rate(connections * 1000 / service)}; it served {_rate(jdbc['requests_per_sec'])}.")
    if not parts:
        return _missing(lab06, "virtual", "synchronized-jdk21", "jdbc-connections=4")
    return " ".join(parts) + "\n"


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
        ceiling = cores * 1000 / cpu_ms
        share = offloaded * cpu_ms / 1000 / cores
        text += (f" Lab 01's offloaded requests cost its server *D* = {_ms(cpu_ms, 3)} of CPU each "
                 f"(`java-offloaded`, calibrated in lab {lab01.number}'s run). At that price {cores} cores allow "
                 f"*k* ÷ *D* = {cores} ÷ {_ms(cpu_ms, 3)} = {_rate(ceiling)}, "
                 f"and {_rate(offloaded)} keeps them *U* = *λ* × *D* ÷ *k* = {share:.0%} busy: "
                 + ("the threads' bound holds, with little queueing for the cores." if share < 0.5 else
                    "the cores are close enough to full that requests queue for them: expect less than the "
                    "threads' bound (mean-value analysis)."))
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
