"""Lab 01's book artifacts and summary lines, from a results file."""

from __future__ import annotations

import re
import statistics

from pul import glance, report
from pul.claims import key as claims_key
from pul.probe import SAMPLES_FOR_P99, describe_tail, probe_p99
from pul.results import machine_line, markdown_table, raw_text

from .driver import LANGUAGES


def summary_notes(results: dict) -> list[str]:
    by_name = {v["name"]: v for v in results["variants"]}
    notes = []
    for language in LANGUAGES:
        blocking, offloaded = by_name.get(f"{language}-blocking"), by_name.get(f"{language}-offloaded")
        if blocking and offloaded:
            notes.append(f"{language}: offloading gave {offloaded['requests_per_sec'] / blocking['requests_per_sec']:.1f}x "
                         "the throughput of blocking on the default dispatcher.")
    for v in results["variants"]:
        p = v["probe"]
        if p and p.get("p50_ms") is not None:
            notes.append(f"{v['name']}: /status answered in {p['p50_ms']:.1f} ms at the median, "
                         f"{describe_tail(p)}, while the load ran.")
        elif p:
            notes.append(f"{v['name']}: /status never answered while the load ran ({p['failed']:,} failed).")
    for language in LANGUAGES:
        sentence = cpu_sentence(language, by_name.get(f"{language}-blocking"), by_name.get(f"{language}-offloaded"))
        if sentence:
            notes.append(sentence)
    notes += [sentence for sentence in map(report.bound_sentence, results["variants"]) if sentence]
    return notes + report.timeline_notes(results)


def compiler_ms_per_request(v: dict) -> float | None:
    """The JIT compiler threads' part of a variant's server CPU per request: their share of a
    core during the measured run (jit_share) spread over the requests served in it."""
    if v.get("jit_share") is None or not v.get("requests_per_sec"):
        return None
    return v["jit_share"] * 1000 / v["requests_per_sec"]


def cpu_sentence(language: str, blocking: dict | None, offloaded: dict | None) -> str | None:
    """Blocking's server CPU per request against offloading's, with and without the JIT
    compiler's part: a variant measured while the compiler still works pays for it."""
    if not (blocking and offloaded) or None in (blocking.get("server_cpu_ms_per_request"),
                                                 offloaded.get("server_cpu_ms_per_request")):
        return None
    b, o = blocking["server_cpu_ms_per_request"], offloaded["server_cpu_ms_per_request"]
    sentence = (f"{language}: the server spent {b:.2f} ms of CPU per request blocking and {o:.2f} ms "
                "offloaded")
    b_jit, o_jit = compiler_ms_per_request(blocking), compiler_ms_per_request(offloaded)
    if b_jit is None or o_jit is None:
        return sentence + f" ({b / o:.1f}x)."
    b_net, o_net = b - b_jit, o - o_jit
    return (sentence + f" ({b / o:.1f}x); the JIT compiler's threads took {b_jit:.2f} and {o_jit:.2f} ms of that, "
            f"which leaves {b_net:.2f} and {o_net:.2f} ms ({b_net / o_net:.1f}x).")


def render(results: dict, lab) -> dict[str, str]:
    table = markdown_table(results) + "\n" + machine_line(results) + "\n"
    probe_rows = ["| variant under load | /status p50 ms | /status p99 ms | /status max ms | answered |",
                  "|:---|---:|---:|---:|---:|"]
    for v in results["variants"]:
        if v["probe"]:
            p = v["probe"]
            answered = f"{p['requests']:,}" + (f" of {p['scheduled']:,}" if "scheduled" in p else "")
            probe_rows.append(f"| {v['name']} | {_ms(p.get('p50_ms'))} | {_ms(probe_p99(p))} "
                              f"| {_ms(p.get('max_ms'))} | {answered} |")
    probe_rows.append(f"\nA p99 is shown only from {SAMPLES_FOR_P99} answered probes; below that it would be "
                      "the maximum under another name.")
    summary = "\n".join(f"- {note}" for note in summary_notes(results)) + "\n"
    return {
        "book/src/generated/lab01-bounds.md": report.bounds_markdown(results),
        "book/src/generated/lab01-table.md": table,
        "book/src/generated/lab01-status-table.md": "\n".join(probe_rows) + "\n",
        "book/src/generated/lab01-summary.md": summary,
        "book/src/figures/lab01-throughput.svg": throughput_figure(results),
        "book/src/figures/lab01-status-latency.svg": status_figure(results),
        "book/src/figures/lab01-timeline.svg": timeline_figure(results),
        # For the chapter "Measuring with ApacheBench": a real ab report and Little's law on it.
        "book/src/generated/lab01-ab-output.md": ab_output_example(results, lab.dir, AB_EXAMPLE),
        "book/src/generated/lab01-littles-law.md": littles_law_table(results),
    }


# The variant whose raw ab report the chapter "Measuring with ApacheBench" shows.
AB_EXAMPLE = "java-blocking"


def ab_output_example(results: dict, lab_dir, variant: str) -> str:
    """One variant's raw ab report from the committed run, as a text block."""
    record = next(v for v in results["variants"] if v["name"] == variant)
    text = (lab_dir / "results" / record["ab_output"]).read_text()
    # The percentile file's absolute path says where the run happened, not what it did.
    text = re.sub(r"-e \S*/", "-e ", text).rstrip("\n")
    return f"```text\n{text}\n```\n"


def littles_law_table(results: dict) -> str:
    """Little's law checked on each variant: lambda x W against ab's concurrency, and
    lambda x S (threads busy working) against the size of the pool the work ran on."""
    rows = ["| variant | λ (req/s) | W (s) | λ × W | c | S (s) | λ × S | T |",
            "|:---|---:|---:|---:|---:|---:|---:|---:|"]
    for v in results["variants"]:
        rate, latency, work = v["requests_per_sec"], v["mean_ms"] / 1000, v["service_ms"] / 1000
        rows.append(f"| {v['name']} | {rate:,.0f} | {latency:.4f} | {rate * latency:.1f} | {v['concurrency']} "
                    f"| {work:.3f} | {rate * work:.1f} | {v['pool_threads']} |")
    return "\n".join(rows) + "\n"


def throughput_figure(results: dict) -> str:
    params = results["params"]
    return report.measured_vs_predicted_svg(
        results, f"Lab 01: {params['work_ms']} ms of blocking work per request, "
                 f"{params['concurrency']} requests in flight")


def timeline_figure(results: dict) -> str:
    """The Java variants' pools over their measured runs: the default dispatcher held at its size
    while blocking, the offload pool holding the requests in flight when offloaded."""
    return report.timeline_svg(
        results, ["java-blocking", "java-offloaded"],
        [("default", "busy", "default dispatcher: busy"), ("default", "threads", "default dispatcher: threads"),
         ("default", "queued", "default dispatcher: queued tasks"),
         ("offload", "busy", "offload pool: busy"), ("offload", "threads", "offload pool: threads")],
        "Lab 01: the pools while each variant ran (sampled 20 times a second)")


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f}"


def status_figure(results: dict) -> str:
    """How long a trivial /status took while each variant's load ran (log scale): the median, the
    p99 where enough probes answered to carry one (a gap otherwise), and the maximum."""
    probed = [v for v in results["variants"] if v["probe"] and v["probe"].get("p50_ms") is not None]

    def row(v: dict) -> str:
        p, p99 = v["probe"], probe_p99(v["probe"])
        return (f'"{v["name"]} (n={p["requests"]})" {p["p50_ms"]:.2f} '
                f'{"?" if p99 is None else f"{p99:.2f}"} {p["max_ms"]:.2f}')
    data = "\n".join(row(v) for v in probed)
    script = report.svg_header() + f"""
set title "How long /status took while each variant was under load"
{report.CLUSTERED_BARS}set ylabel "milliseconds (log scale)"
set logscale y
set yrange [0.5:*]
set grid ytics
set key top right
set datafile missing "?"
$data << EOD
{data}
EOD
plot $data using 2:xtic(1) title "median" linecolor rgb "#2ca02c", \\
     '' using 3 title "99th percentile (from {SAMPLES_FOR_P99} answers)" linecolor rgb "#d62728", \\
     '' using 4 title "maximum" linecolor rgb "#7f7f7f"
"""
    return report.gnuplot_svg(script)


# -- what the prose's claims read (pul.claims: lab01.facts.NAME) --------------------------

# The pools of the timeline the chapter reads, and what it reads of each.
TIMELINE_POOLS = ["default", "offload"]
TIMELINE_MEASURES = ["busy", "queued"]
# The lines of ab's "Connection Times" table the chapter "Measuring" reads, and their columns.
AB_TIMES = ["Connect", "Waiting", "Total"]
AB_TIME_COLUMNS = ["min", "mean", "sd", "median", "max"]


def facts(results: dict, lab) -> dict:
    """What the prose's claims read of a run besides its records, per variant (its name as a claim
    writes it, VARIANT): the median and the most of each pool's busy threads and queued tasks over
    its timeline (busy_median_POOL_VARIANT, queued_most_POOL_VARIANT, ...); its server CPU per
    request that the JIT compiler's threads took (compiler_ms_VARIANT) and the rest
    (serving_cpu_ms_VARIANT); its warm-up's rounds, the least of their compiler shares and the share
    of the server's cores its last round's requests kept busy (warmup_rounds_VARIANT,
    warmup_jit_share_least_VARIANT, warmup_core_share_last_VARIANT). And of the whole run: the most
    CPU steal of any variant (steal_share_most), and the means of AB_TIMES in AB_EXAMPLE's raw ab
    report, which "Measuring with ApacheBench" shows (ab_connect_mean_ms, ..., where `lab` has it)."""
    found = {}
    for v in results["variants"]:
        name = claims_key(v["name"])
        found.update(timeline_facts(v, name))
        compiler = compiler_ms_per_request(v)
        if compiler is not None and v.get("server_cpu_ms_per_request") is not None:
            found[f"compiler_ms_{name}"] = round(compiler, 4)
            found[f"serving_cpu_ms_{name}"] = round(v["server_cpu_ms_per_request"] - compiler, 4)
        found.update(warmup_facts(v, name, (results.get("machine") or {}).get("server_available_processors") or 1))
    steal = [v["cpu_steal_share"] for v in results["variants"] if v.get("cpu_steal_share") is not None]
    if steal:
        found["steal_share_most"] = max(steal)
    example = next((v for v in results["variants"] if v["name"] == AB_EXAMPLE and v.get("ab_output")), None)
    text = raw_text(lab.dir / "results", example["ab_output"]) if lab is not None and example is not None else None
    if text is not None:
        found.update({f"ab_{line.lower()}_mean_ms": row["mean"] for line, row in ab_connection_times(text).items()})
    return found


def timeline_facts(v: dict, name: str) -> dict:
    """The median and the most of each TIMELINE_POOLS pool's TIMELINE_MEASURES over a variant's
    timeline samples (none for a pool or a variant without them)."""
    found = {}
    for pool in TIMELINE_POOLS:
        for measure in TIMELINE_MEASURES:
            values = report.timeline_samples(v, pool, measure)
            if values:
                found[f"{measure}_median_{pool}_{name}"] = statistics.median(values)
                found[f"{measure}_most_{pool}_{name}"] = max(values)
    return found


def warmup_facts(v: dict, name: str, server_cores: int) -> dict:
    """How a variant's warm-up went: its rounds, the least share of a core its JIT compiler took in
    any of them, and the share of the server's cores its last round's requests kept busy (the
    compiler's CPU left out, as pul.run reads it)."""
    rounds = (v.get("warmup") or {}).get("rounds") or []
    if not rounds:
        return {}
    found = {f"warmup_rounds_{name}": len(rounds)}
    shares = [r["jit_share"] for r in rounds if r.get("jit_share") is not None]
    if shares:
        found[f"warmup_jit_share_least_{name}"] = min(shares)
    last = rounds[-1]
    if last.get("server_cpu_ms") is not None and last.get("requests_per_sec"):
        found[f"warmup_core_share_last_{name}"] = round(
            last["requests_per_sec"] * last["server_cpu_ms"] / 1000 / server_cores, 3)
    return found


def ab_connection_times(text: str) -> dict[str, dict[str, float]]:
    """ab's "Connection Times (ms)" table: for each of AB_TIMES found, its AB_TIME_COLUMNS."""
    found = {}
    for line in AB_TIMES:
        match = re.search(rf"^{line}:\s+" + r"\s+".join([r"([\d.]+)"] * len(AB_TIME_COLUMNS)) + r"\s*$",
                          text, re.M)
        if match:
            found[line] = {column: float(value) for column, value in zip(AB_TIME_COLUMNS, match.groups())}
    return found


# -- "At a glance" (book/src/at-a-glance.md): this lab's rules, each worked on its run ------------

def glance_littles_law(lab01: glance.Run) -> str:
    """L = λ × W on a blocking variant; busy threads λ × S on an offloaded one."""
    blocking, offloaded = lab01.variant("java-blocking"), lab01.variant("java-offloaded")
    if blocking is None:
        return glance.missing(lab01, "java-blocking")
    rate, latency = glance.shown(blocking["requests_per_sec"], 0), glance.shown(blocking["mean_ms"] / 1000, 3)
    text = (f"{glance.run_line(lab01)}, `java-blocking`: *λ* = {glance.rate(rate)} and *W* = {latency:.3f} s, so "
            f"*L* = *λ* × *W* = {rate * latency:.1f} requests in the system, against the "
            f"*c* = {blocking['concurrency']} that `ab` kept in flight.")
    if offloaded is not None:
        rate, service = glance.shown(offloaded["requests_per_sec"], 0), glance.shown(offloaded["service_ms"] / 1000, 3)
        text += (f" `java-offloaded`: *n* = *λ* × *S* = {rate:,.0f}/s × {service:.3f} s = {rate * service:.1f} "
                 f"threads busy at once: the threads that load needs, of the pool's *T* = "
                 f"{offloaded['pool_threads']}.")
    return text + "\n"


def glance_pool_bound(lab01: glance.Run) -> str:
    """min(c, T) ÷ S against the measured rate, and W = c ÷ λ."""
    v = lab01.variant("java-blocking")
    if v is None or not v.get("pool_threads") or not v.get("requests_per_sec"):
        return glance.missing(lab01, "java-blocking")
    c, threads, service = v["concurrency"], v["pool_threads"], glance.shown(v["service_ms"] / 1000, 3)
    bound = glance.shown(min(c, threads) / service, 0)
    rate = glance.shown(v["requests_per_sec"], 0)
    return (f"{glance.run_line(lab01)}, `java-blocking`, its work on Play's default dispatcher: "
            f"min(*c*, *T*) ÷ *S* = min({c}, {threads}) ÷ {service:.3f} s = {glance.rate(bound)}; it served "
            f"{glance.rate(rate)} ({rate / bound:.2f} of it), and *W* = *c* ÷ *λ* = {c} ÷ {rate:,.0f}/s = "
            f"{glance.ms(c * 1000 / rate, 0)}, where `ab` timed a mean of {glance.ms(v['mean_ms'], 0)}: "
            f"{glance.ms(v['service_ms'], 0)} of work, the rest waiting for a thread.\n")


def glance_example(lab01: glance.Run) -> str:
    """The page's first question, worked with the rules and lab 01's measured CPU per request."""
    wait, clients, cores = glance.EXAMPLE["wait_ms"], glance.EXAMPLE["clients"], glance.EXAMPLE["cores"]
    threads = glance.default_dispatcher_threads(cores)
    blocked = min(clients, threads) * 1000 / wait
    offloaded = clients * 1000 / wait
    text = (f"- **Blocking on Play's default dispatcher**, which has max({glance.DEFAULT_DISPATCHER['min']}, *k*) = "
            f"{threads} threads on "
            f"{cores} cores: *λ* ≤ min(*c*, *T*) ÷ *S* = min({clients}, {threads}) ÷ {glance.seconds(wait)} = "
            f"{glance.rate(blocked)}, and *W* = *c* ÷ *λ* = {clients} ÷ {blocked:,.0f}/s = "
            f"{glance.ms(clients * 1000 / blocked, 0)}: {glance.ms(wait, 0)} of work, the rest waiting for a thread.\n"
            f"- **On a pool of its own** with a thread for each client (*T* ≥ {clients}): *λ* ≤ {clients} ÷ "
            f"{glance.seconds(wait)} = {glance.rate(offloaded)}, and *W* ≈ *S* = {glance.ms(wait, 0)}, if the cores allow it.")
    v = lab01.variant("java-offloaded")
    cpu_ms = ((v or {}).get("calibration") or {}).get("server_cpu_ms")
    if cpu_ms:
        cpu_ms = glance.shown(cpu_ms, 3)
        ceiling = cores * 1000 / cpu_ms
        share = offloaded * cpu_ms / 1000 / cores
        text += (f" Lab 01's offloaded requests cost its server *D* = {glance.ms(cpu_ms, 3)} of CPU each "
                 f"(`java-offloaded`, calibrated in lab {lab01.number}'s run). At that price {cores} cores allow "
                 f"*k* ÷ *D* = {cores} ÷ {glance.ms(cpu_ms, 3)} = {glance.rate(ceiling)}, "
                 f"and {glance.rate(offloaded)} keeps them *U* = *λ* × *D* ÷ *k* = {share:.0%} busy: "
                 + ("the threads' bound holds, with little queueing for the cores." if share < 0.5 else
                    "the cores are close enough to full that requests queue for them: expect less than the "
                    "threads' bound (mean-value analysis)."))
    connections = min(clients, glance.PLAY_MAX_POOL_SIZE)
    jdbc = connections * 1000 / wait
    text += (f"\n- **If the {glance.ms(wait, 0)} of blocking is a JDBC call**, the connections bound it too, however many threads "
             f"the pool has: Play's HikariCP pool has *N* = {glance.PLAY_MAX_POOL_SIZE} connections unless you set "
             f"`maximumPoolSize`, so *λ* ≤ min(*c*, *T*, *N*) ÷ *S* = min({clients}, {clients}, "
             f"{glance.PLAY_MAX_POOL_SIZE}) ÷ {glance.seconds(wait)} = {glance.rate(jdbc)}, and *W* = *c* ÷ *λ* = {clients} ÷ "
             f"{jdbc:,.0f}/s = {glance.ms(clients * 1000 / jdbc, 0)}.")
    return text + "\n"


# The page's rules this lab's run works (pul.glance: book/src/generated/at-a-glance-NAME.md).
GLANCE = {
    "littles-law": glance_littles_law,
    "pool-bound": glance_pool_bound,
    "example": glance_example,
}
