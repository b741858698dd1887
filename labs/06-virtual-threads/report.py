"""Lab 06's book artifacts and summary lines, from a results file."""

from __future__ import annotations

import statistics

from pul import glance, model, report
from pul.claims import key as claims_key
from pul.results import MODEL_COLUMNS, _fmt, load, machine_line, markdown_table


def _runtime(v: dict) -> str:
    return {"jdk21": "21", "jdk25": "25"}.get(v.get("runtime") or "", v.get("runtime") or "–")


def _threads(v: dict) -> str:
    """What the request held while it waited: a dispatcher's threads, carriers, or virtual threads."""
    if v["name"].startswith("jdbc-"):
        return f"{v['extra']['connections']} connections"
    if v.get("pool") == "virtual":
        return "virtual"
    return f"{v['pool_threads']} {v['pool']}" if v.get("pool_threads") is not None else "–"


def table_columns(results: dict):
    return [
        ("variant", lambda v: v["name"], False),
        ("Java", _runtime, True),
        ("c", lambda v: _fmt(v["concurrency"]), True),
        ("runs on", _threads, False),
        ("req/s", lambda v: _fmt(v["requests_per_sec"], 0), True),
        ("mean ms", lambda v: _fmt(v["mean_ms"], 1), True),
        ("p50 ms", lambda v: _fmt(v["p50_ms"], 1), True),
        ("p99 ms", lambda v: _fmt(v["p99_ms"], 1), True),
        ("failed", lambda v: _fmt(v["failed"]), True),
        ("server CPU", lambda v: f"{v['server_cpu_utilization']:.0%}"
         if v.get("server_cpu_utilization") is not None else "–", True),
        *MODEL_COLUMNS,
    ]


def footprint_rows(results: dict) -> list[dict]:
    return [v for v in results["variants"] if v.get("footprint")]


def footprint_markdown(results: dict) -> str:
    rows = ["| variant | Java | c | req/s | JVM threads (max) | resident memory, MB (max) | median |",
            "|:---|---:|---:|---:|---:|---:|---:|"]
    for v in footprint_rows(results):
        f = v["footprint"]
        rows.append(f"| {v['name']} | {_runtime(v)} | {v['concurrency']:,} | {v['requests_per_sec']:,.0f} "
                    f"| {f['threads_max']:,} | {f['rss_max_mb']:,.0f} | {f['rss_median_mb']:,.0f} |")
    rows.append("\nThreads and resident memory are the server process's (`/proc/PID/status`: `Threads`, "
                "`VmRSS`), sampled five times a second during the measured run. A virtual thread is not "
                "a thread of the kernel: it runs mounted on a carrier, one of the JVM's platform threads. "
                "Every server has a 1 GiB heap (-Xms1g -Xmx1g).")
    return "\n".join(rows) + "\n"


def summary_notes(results: dict) -> list[str]:
    by_name = {v["name"]: v for v in results["variants"]}
    notes = []
    default, virtual = by_name.get("default"), by_name.get("virtual")
    if default and virtual:
        notes.append(f"virtual threads served {virtual['requests_per_sec'] / default['requests_per_sec']:.1f}x "
                     "the default dispatcher's throughput at the same load.")
    pinned, free = by_name.get("synchronized-jdk21"), by_name.get("synchronized-jdk25")
    if pinned and free:
        notes.append(f"`synchronized` around the blocking call: {pinned['requests_per_sec']:,.0f} req/s on Java 21 "
                     f"(pinned), {free['requests_per_sec']:,.0f} req/s on Java 25.")
    high = [v for v in results["variants"] if (v.get("extra") or {}).get("group") == "footprint" and v.get("footprint")]
    if high:
        notes.append(f"at c={high[0]['concurrency']:,}: " + "; ".join(
            f"{v['name']} {v['footprint']['threads_max']:,} JVM threads, {v['footprint']['rss_max_mb']:,.0f} MB resident"
            for v in high) + ".")
    notes += [sentence for sentence in map(report.bound_sentence, results["variants"]) if sentence]
    return notes + report.timeline_notes(results)


# -- what the chapter's claims read (pul.claims: lab06.facts.NAME) ------------------------

# A variant whose mean latency is under this share of its run's length: the requests a time-limited
# run leaves in flight at its end, which count in no latency, move its mean by a few percent only.
SHORT_LATENCY = 0.1


def littles_law(v: dict) -> float | None:
    """The requests in flight that the run's mean latency and throughput make by Little's law,
    as a share of those ab kept in flight: mean x req/s / concurrency. 1 where every request of the
    run counts; below 1 by the waits of the requests still in flight when ab stopped, which are in
    no latency (left_waiting_s)."""
    if not v.get("mean_ms") or not v.get("requests_per_sec") or not v.get("concurrency"):
        return None
    return v["mean_ms"] * v["requests_per_sec"] / 1000 / v["concurrency"]


def left_waiting_s(v: dict) -> float | None:
    """How long, on average, the requests still in flight when ab stopped had waited. Over the run,
    ab's `concurrency` requests in flight add up to concurrency x duration of waiting; the completed
    requests account for complete x mean of it, and the rest is the left-behind requests' (as many
    as ab kept in flight)."""
    if not v.get("complete") or not v.get("duration_s") or not v.get("concurrency") or v.get("mean_ms") is None:
        return None
    return (v["concurrency"] * v["duration_s"] - v["complete"] * v["mean_ms"] / 1000) / v["concurrency"]


def _medians(v: dict) -> dict:
    """The median over a variant's timeline samples of the JVM's platform threads and of every
    pool's gauges: jvm_threads_median_VARIANT, POOL_MEASURE_median_VARIANT (default_busy_median_default,
    connections_awaiting_median_jdbc_connections_4, ...), and the platform threads the JVM started
    during the run (threads_started_VARIANT). Nothing for a variant without a timeline."""
    timeline, name = v.get("timeline") or {}, claims_key(v["name"])
    found = {}
    threads = [x for x in timeline.get("jvm_threads", []) if x is not None]
    if threads:
        found[f"jvm_threads_median_{name}"] = statistics.median(threads)
    if timeline.get("jvm_threads_started") is not None:
        found[f"threads_started_{name}"] = timeline["jvm_threads_started"]
    for pool, measures in (timeline.get("pools") or {}).items():
        for measure in measures:
            values = report.timeline_samples(v, pool, measure)
            if values:
                found[f"{claims_key(pool)}_{measure}_median_{name}"] = statistics.median(values)
    return found


def _carriers(v: dict) -> dict:
    """The virtual-thread scheduler's gauges over a variant's samples (Java 24 and later): the share
    of samples with a carrier busy (carriers_busy_share_VARIANT) and the most virtual threads queued
    for one (carriers_queued_max_VARIANT). A carrier is busy for the few tenths of a millisecond a
    request's virtual thread runs on it, so a median can land either side of 1 from run to run;
    a share cannot."""
    busy = report.timeline_samples(v, "carriers", "busy")
    queued = report.timeline_samples(v, "carriers", "queued")
    name = claims_key(v["name"])
    found = {}
    if busy:
        found[f"carriers_busy_share_{name}"] = round(sum(1 for b in busy if b > 0) / len(busy), 3)
    if queued:
        found[f"carriers_queued_max_{name}"] = max(queued)
    return found


def facts(results: dict, lab) -> dict:
    """What the chapter's claims read of a run beyond its records: per variant, Little's law on its
    latency (littles_law_VARIANT, left_waiting_s_VARIANT), the most JVM threads its footprint saw
    (threads_max_VARIANT) and its timeline's medians (_medians); over the variants whose mean latency
    is under SHORT_LATENCY of their run, how many (short_latency_variants, of variants) and their
    least and greatest littles_law (littles_law_short_min, littles_law_short_max); and the variant
    whose server spent the most CPU per request (most_cpu_per_request, its name). From the
    scheduler's own run (scheduler_run), its timelines' medians and the scheduler's gauges (_carriers),
    prefixed scheduler_."""
    values = {"variants": len(results["variants"])}
    short = []
    for v in results["variants"]:
        name = claims_key(v["name"])
        ratio, left = littles_law(v), left_waiting_s(v)
        if ratio is not None:
            values[f"littles_law_{name}"] = round(ratio, 4)
            if v.get("duration_s") and v["mean_ms"] < SHORT_LATENCY * 1000 * v["duration_s"]:
                short.append(ratio)
        if left is not None:
            values[f"left_waiting_s_{name}"] = round(left, 3)
        if v.get("footprint"):
            values[f"threads_max_{name}"] = v["footprint"]["threads_max"]
        values.update(_medians(v))
    values["short_latency_variants"] = len(short)
    if short:
        values.update(littles_law_short_min=round(min(short), 4), littles_law_short_max=round(max(short), 4))
    for v in (scheduler_run(lab) or {}).get("variants", []):
        values.update({f"scheduler_{key}": value for key, value in {**_medians(v), **_carriers(v)}.items()})
    costs = [v for v in results["variants"] if v.get("server_cpu_ms_per_request") is not None]
    if costs:
        values["most_cpu_per_request"] = max(costs, key=lambda v: v["server_cpu_ms_per_request"])["name"]
    return values


# -- the passages whose reading depends on the machine (generated, so a re-run cannot leave them stale) --

def _pool_at_high(results: dict) -> tuple[dict, bool] | None:
    """The 100-thread pool at the footprint's concurrency, and whether its threads bound it (True)
    or the core did (False); None where neither did or the run lacks what the passages read."""
    high = results["params"]["high_concurrency"]
    v = next((v for v in results["variants"] if v["name"] == f"pool-c={high}"), None)
    bounds = (v or {}).get("bounds") or {}
    if not v or v.get("bound_by") not in ("threads", model.SERVER_CPU) or None in (
            bounds.get("threads"), bounds.get(model.SERVER_CPU)):
        return None
    return v, v["bound_by"] == "threads"


# Closes the timeline's pool-c=1000 bullet, whichever bound the run found.
POOL_TIMELINE_MORE = ("  Whether the threads or the core bind there depends on the machine, as\n"
                      "  [below](#a-thousand-in-flight-the-threads-you-no-longer-pay-for) explains.\n")


def pool_timeline_markdown(results: dict) -> str:
    """The timeline's reading of pool-c=1000, by the bound the table names: its threads (all busy,
    the rest queued) or the core (then how long each thread was held, busy ÷ rate by Little's law,
    against the work's own time: a thread whose sleep has ended keeps its place in the pool until
    the core runs it)."""
    found = _pool_at_high(results)
    if not found:
        return ""
    v, threads_bind = found
    medians = _medians(v)
    key = claims_key(v["name"])
    busy, queued = medians.get(f"pool_busy_median_{key}"), medians.get(f"pool_queued_median_{key}")
    if busy is None or queued is None:
        return ""
    waiting = v["concurrency"] - v["pool_threads"]
    if threads_bind:
        return (f"- **{v['name']}**: {busy:,.0f} of the pool's {v['pool_threads']} threads busy at the median, "
                f"and {queued:,.0f} of the other {waiting:,} requests queued behind them: its threads bind it, "
                "the bound the table names.\n" + POOL_TIMELINE_MORE)
    held_ms = busy / v["requests_per_sec"] * 1000
    return (f"- **{v['name']}**: here the core binds it. {busy:,.0f} of the pool's {v['pool_threads']} threads "
            f"are busy at the median, each held {busy:,.0f} ÷ {v['requests_per_sec']:,.0f}/s = {held_ms:,.0f} ms "
            "by Little's law, "
            + (f"about the {v['service_ms']:g} ms of the work itself" if held_ms <= 1.1 * v["service_ms"] else
               f"more than the {v['service_ms']:g} ms of the work itself (a thread whose wait has ended keeps "
               "its place in the pool until the core runs it)")
            + (f", and {queued:,.0f} tasks wait in its queue.\n" if queued >= 1 else
               "; its queue is empty at the median: the other requests wait for the core before they reach "
               "the pool.\n") + POOL_TIMELINE_MORE)


def thousand_markdown(results: dict) -> str:
    """Which bound holds the 100-thread pool at the footprint's concurrency on this machine: its
    threads' or the core's, whichever is lower here."""
    found = _pool_at_high(results)
    if not found:
        return ""
    v, threads_bind = found
    threads, core = v["bounds"]["threads"], v["bounds"][model.SERVER_CPU]
    arithmetic = (f"its {v['pool_threads']} threads allow {v['pool_threads']} ÷ {v['service_ms']:g} ms = "
                  f"{threads:,.0f} requests a second")
    if threads_bind:
        return (f"The {v['pool_threads']}-thread pool meets its own bound first: {arithmetic}, and this core "
                f"could serve more of its requests than that ({core:,.0f} a second). On a slower core, whose "
                f"bound falls below {threads:,.0f}, the core binds all three, and the *bound by* column names "
                "the server CPU.\n")
    return (f"The {v['pool_threads']}-thread pool has a bound of its own as well: {arithmetic}. On this machine "
            f"the core serves fewer of its requests than that ({core:,.0f} a second), so the core binds it too"
            + (f", if only just, {1 - core / threads:.0%} under the threads' bound" if core > 0.9 * threads else "")
            + f". On a faster core, whose bound rises above {threads:,.0f}, the pool's threads bind first, and "
            "the *bound by* column names the threads.\n")


def pinned_waiting_markdown(results: dict) -> str:
    """Why the pinned row's mean latency falls short of Little's law: the requests ab left in flight
    when its time ran out, whose waiting is in no latency (left_waiting_s)."""
    v = next((v for v in results["variants"] if v["name"] == "synchronized-jdk21"), None)
    left, ratio = (left_waiting_s(v), littles_law(v)) if v else (None, None)
    if left is None or ratio is None or ratio >= 1:
        return ""
    total = v["concurrency"] * v["duration_s"]
    done = v["complete"] * v["mean_ms"] / 1000
    return (f"This row's mean is {1 - ratio:.0%} under it. The law holds; the run is short. ab stops after "
            f"{results['params']['seconds']} seconds, and the requests still in flight then count in no latency. "
            f"Over the run, {v['concurrency']} requests in flight add up to {v['concurrency']} × "
            f"{v['duration_s']:.1f} s = {total:,.0f} s of waiting. The requests ab completed account for about "
            f"{done:,.0f} s of it, their number times their mean; the rest belongs to the {v['concurrency']} that "
            f"ab left behind, which had waited {left:.1f} s each, on average, when it stopped. A row whose requests "
            f"take {v['service_ms']:g} ms leaves a sliver of its waiting uncounted; this one leaves "
            f"{left * v['concurrency'] / total:.0%}.\n")


def throughput_figure(results: dict) -> str:
    params = results["params"]
    return report.measured_vs_predicted_svg(
        results, f"Lab 06: {params['work_ms']} ms of blocking work (jdbc: {params['query_ms']} ms in PostgreSQL) "
                 "per request")


# The timelines' series both figures draw: HikariCP's connections, and the virtual-thread
# scheduler's own gauges (VirtualThreads.Scheduler; Java 24 and later, absent before).
CONNECTION_SERIES = (("connections", "active", "connections: in use"),
                     ("connections", "awaiting", "threads awaiting a connection"))
CARRIER_SERIES = (("carriers", "busy", "carriers: virtual threads mounted"),
                  ("carriers", "queued", "virtual threads waiting for a carrier"))


def timeline_figure(results: dict) -> str:
    """A thousand in flight on the 100-thread pool and on virtual threads (no pool: the JVM's
    platform threads show their carriers, and on Java 24 and later the scheduler's gauges the
    carriers busy and the virtual threads waiting for one), and virtual threads waiting for 4
    connections."""
    high = results["params"]["high_concurrency"]
    return report.timeline_svg(
        results, ["default", f"pool-c={high}", f"virtual-c={high}", "jdbc-connections=4"],
        [("default", "busy", "default dispatcher: busy"), ("default", "queued", "default dispatcher: queued tasks"),
         ("pool", "busy", "100-thread pool: busy"), ("pool", "queued", "100-thread pool: queued tasks"),
         *CONNECTION_SERIES, *CARRIER_SERIES, ("jvm", "threads", "JVM platform threads")],
        "Lab 06: the pools while each variant ran (sampled 20 times a second)")


# A run of its own, results/scheduler/: the two variants whose virtual-thread scheduler chapter 6
# reads (Java 24 and later), made with `scripts/lab run 06 --variant virtual-c=1000 --variant
# jdbc-connections=4 --results-dir labs/06-virtual-threads/results/scheduler`.
SCHEDULER_RUN = "scheduler"


def scheduler_run(lab) -> dict | None:
    """The committed run of the scheduler's gauges, if the lab has one."""
    path = lab.dir / "results" / SCHEDULER_RUN / "latest.json"
    return load(path) if path.exists() else None


def scheduler_figure(run: dict) -> str:
    """The virtual-thread scheduler's own gauges while a thousand virtual threads share the core and
    while fifty wait for four connections (VirtualThreads.Scheduler; Java 24 and later)."""
    names = [v["name"] for v in run["variants"]]
    return report.timeline_svg(
        run, names,
        [*CARRIER_SERIES, *CONNECTION_SERIES],
        "Lab 06: the virtual-thread scheduler while each variant ran (Java 25, sampled 20 times a second)")


def scheduler_markdown(run: dict, main: dict) -> str:
    """What the scheduler's gauges showed in its run: at a thousand in flight the carrier busy in a
    share of the samples and virtual threads queued for it; waiting for connections, the carrier
    mostly idle and the waiting virtual threads parked in HikariCP, not queued for a carrier."""
    by_name = {v["name"]: v for v in run["variants"]}
    high = f"virtual-c={main['params']['high_concurrency']}"
    jdbc = next((v for name, v in by_name.items() if name.startswith("jdbc-connections=")), None)
    if high not in by_name or jdbc is None:
        return ""
    crowded, waiting = _carriers(by_name[high]), _carriers(jdbc)
    awaiting = report.timeline_samples(jdbc, "connections", "awaiting")
    if len(crowded) < 2 or len(waiting) < 2 or not awaiting:
        return ""
    c, j = claims_key(high), claims_key(jdbc["name"])
    return (f"At `{high}` the scheduler's one carrier was busy in {crowded[f'carriers_busy_share_{c}']:.0%} of "
            f"the samples, and up to {crowded[f'carriers_queued_max_{c}']:,.0f} virtual threads were queued for "
            "it: each request's virtual thread needs the carrier only briefly, to start and to finish around its "
            f"sleep, and a thousand of them take turns. At `{jdbc['name']}`, with "
            f"{statistics.median(awaiting):,.0f} virtual threads waiting for a connection at the median, the "
            f"carrier was busy in only {waiting[f'carriers_busy_share_{j}']:.0%} of the samples, and its queue "
            f"never held more than {waiting[f'carriers_queued_max_{j}']:,.0f}.\n")


def footprint_figure(results: dict) -> str:
    """Threads and resident memory of each variant's server, two panels side by side."""
    rows = footprint_rows(results)
    data = "\n".join(f'"{v["name"]}" {v["footprint"]["threads_max"]} {v["footprint"]["rss_max_mb"]}' for v in rows)
    script = report.svg_header(height=440) + f"""
set multiplot layout 1,2 title "The server's footprint under load"
{report.CLUSTERED_BARS}set xtics rotate by -35
set grid ytics
set key off
set yrange [0:*]
$data << EOD
{data}
EOD
set title "JVM threads (max)"
plot $data using 2:xtic(1) linecolor rgb "#1f77b4"
set title "resident memory, MB (max)"
plot $data using 3:xtic(1) linecolor rgb "#ff7f0e"
unset multiplot
"""
    return report.gnuplot_svg(script)


def render(results: dict, lab) -> dict[str, str]:
    table = markdown_table(results, table_columns(results)) + "\n" + machine_line(results) + "\n"
    summary = "\n".join(f"- {note}" for note in summary_notes(results)) + "\n"
    return {
        "book/src/generated/lab06-bounds.md": report.bounds_markdown(results),
        "book/src/generated/lab06-table.md": table,
        "book/src/generated/lab06-footprint.md": footprint_markdown(results),
        "book/src/generated/lab06-summary.md": summary,
        "book/src/generated/lab06-pool-timeline.md": pool_timeline_markdown(results),
        "book/src/generated/lab06-thousand.md": thousand_markdown(results),
        "book/src/generated/lab06-pinned-waiting.md": pinned_waiting_markdown(results),
        "book/src/figures/lab06-throughput.svg": throughput_figure(results),
        "book/src/figures/lab06-footprint.svg": footprint_figure(results),
        "book/src/figures/lab06-timeline.svg": timeline_figure(results),
        **({"book/src/figures/lab06-scheduler.svg": scheduler_figure(scheduler),
            "book/src/generated/lab06-scheduler.md": scheduler_markdown(scheduler, results)}
           if (scheduler := scheduler_run(lab)) else {}),
    }


# -- "At a glance" (book/src/at-a-glance.md): this lab's rules, each worked on its run ------------

def glance_virtual_threads(lab06: glance.Run) -> str:
    """No threads' bound on virtual threads; k carriers ÷ S when pinned; N ÷ S on a pool of connections."""
    parts = []
    virtual, pinned, jdbc = (lab06.variant(name) for name in ("virtual", "synchronized-jdk21", "jdbc-connections=4"))
    if virtual:
        bounds = virtual.get("bounds") or {}
        rate, c, service = virtual["requests_per_sec"], virtual["concurrency"], glance.shown(virtual["service_ms"] / 1000, 3)
        parts.append(f"{glance.run_line(lab06)}, `virtual`: *c* ÷ *S* = {c} ÷ {service:.3f} s = {glance.rate(c / service)}"
                     + (f" and the core's *k* ÷ *D* = {glance.rate(bounds[model.SERVER_CPU])}"
                        if bounds.get(model.SERVER_CPU) else "")
                     + f"; it served {glance.rate(rate)}, no pool of threads in the way.")
    if pinned:
        carriers = (pinned.get("extra") or {}).get("carriers") or pinned.get("pool_threads")
        service = glance.shown(pinned["service_ms"] / 1000, 3)
        parts.append(f"`synchronized-jdk21`, pinned on Java 21: {carriers} carrier{'' if carriers == 1 else 's'} "
                     f"÷ *S* = {carriers} ÷ {service:.3f} s = {glance.rate(carriers / service)}; it served "
                     f"{pinned['requests_per_sec']:,.1f} req/s. " + pinned_latency(pinned))
    if jdbc:
        connections = (jdbc.get("extra") or {}).get("connections")
        service = glance.shown(jdbc["service_ms"], 1)
        if connections:
            parts.append(f"`jdbc-connections={connections}`: *N* ÷ *S* = {connections} ÷ {glance.ms(service, 1)} = "
                         f"{glance.rate(connections * 1000 / service)}; it served {glance.rate(jdbc['requests_per_sec'])}.")
    if not parts:
        return glance.missing(lab06, "virtual", "synchronized-jdk21", "jdbc-connections=4")
    return " ".join(parts) + "\n"


# ab's mean latency is short of Little's law's c ÷ λ by more than this share when the requests it
# left in flight at the end of its run (whose waits it never times) held much of the run's waiting.
SHORT_MEAN = 0.9


def pinned_latency(v: dict) -> str:
    """W of a pinned step by Little's law, c ÷ λ; and why ab's mean falls short of it, where it does:
    ab times only the requests that finished before its run ended, and the c it left in flight had
    waited too (chapter 6, "The pinned row's latency")."""
    c, rate = v["concurrency"], glance.shown(v["requests_per_sec"], 1)
    little_s = c / rate
    text = f"By Little's law *W* = *c* ÷ *λ* = {c} ÷ {rate:,.1f}/s = {little_s:.2f} s"
    if v.get("mean_ms") is None:
        return text + "."
    if v["mean_ms"] / 1000 >= SHORT_MEAN * little_s:
        return text + f", and `ab` timed a mean of {glance.ms(v['mean_ms'], 0)}."
    left_s = left_waiting_s(v)
    return (text + f"; `ab`'s mean, {glance.ms(v['mean_ms'], 0)}, is shorter because it times only the requests "
            f"that finished before its run did, not the {c} it left in flight"
            + (f", which had waited {left_s:.1f} s each on average when it stopped" if left_s else "") + ".")


# The page's rules this lab's run works (pul.glance: book/src/generated/at-a-glance-NAME.md).
GLANCE = {
    "virtual-threads": glance_virtual_threads,
}
