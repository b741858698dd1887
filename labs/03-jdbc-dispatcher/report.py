"""Lab 03's book artifacts, its summary lines and the facts the chapter's claims read, from a
results file."""

from __future__ import annotations

import math
import statistics

from pul import glance, model, report
from pul.claims import key as claims_key
from pul.probe import describe_tail, probe_p99
from pul.results import _fmt, machine_line, markdown_table, predicted_cell, ratio_cell

from .driver import LOCKSTEP, WIDE_JITTER


def summary_notes(results: dict) -> list[str]:
    notes = []
    pg = (results.get("pools") or {}).get("postgresql")
    if pg:
        settings = ", ".join(f"{k}={v}" for k, v in pg["settings"].items())
        notes.append(f"Database: {pg['version'].split(' on ')[0]} ({settings}); "
                     f"{_where(results['params'])}.")
    for v in results["variants"]:
        if v["failed"] or v["non_2xx"]:
            notes.append(f"{v['name']}: {v['non_2xx']:,} of {v['requests']:,} requests got no connection "
                         f"within {results['params']['connection_timeout_ms']} ms (503), {v['failed']:,} failed.")
    for v in results["variants"]:
        if v.get("probe") and v["probe"].get("p50_ms") is not None:
            notes.append(f"{v['name']}: /status answered in {v['probe']['p50_ms']:.1f} ms at the median, "
                         f"{describe_tail(v['probe'])}, while the load ran.")
    notes += [note for note in map(report.band_note, results["variants"]) if note]
    return notes + report.timeline_notes(results)


def timeline_figure(results: dict) -> str:
    """Each set-up's threads and connections over its measured run: where the requests waited."""
    return report.timeline_svg(
        results, [v["name"] for v in results["variants"]],
        [(report.OWN_POOL, "busy", f"{report.OWN_POOL}: busy"), (report.OWN_POOL, "threads", f"{report.OWN_POOL}: threads"),
         (report.OWN_POOL, "queued", f"{report.OWN_POOL}: queued tasks"),
         ("connections", "active", "connections: in use"), ("connections", "awaiting", "threads awaiting a connection")],
        "Lab 03: the pools while each set-up ran (sampled 20 times a second)")

def render(results: dict, lab) -> dict[str, str]:
    variants, sweep = split(results)
    artifacts = {}
    if variants["variants"]:
        artifacts["book/src/generated/lab03-table.md"] = (
            markdown_table(variants, with_goodput(TABLE_COLUMNS, variants["variants"])) + "\n"
            + machine_line(results) + " "
            + _database_line(results) + "\n")
        artifacts["book/src/generated/lab03-summary.md"] = \
            "\n".join(f"- {note}" for note in summary_notes(variants)) + "\n"
    if sweep["variants"]:
        artifacts["book/src/generated/lab03-sweep-table.md"] = (
            markdown_table(sweep, with_goodput(SHARED_SWEEP_COLUMNS if _one_server(sweep["variants"])
                                               else SWEEP_COLUMNS, sweep["variants"]))
            + "\n" + machine_line(results) + " "
            + _database_line(results) + "\n")
        artifacts["book/src/figures/lab03-sweep.svg"] = sweep_figure(sweep)
        artifacts["book/src/generated/lab03-sweep-facts.md"] = sweep_facts_table(sweep)
        artifacts["book/src/generated/lab03-mva.md"] = mva_text(sweep)
    if any(v.get("timeline") for v in variants["variants"]):
        artifacts["book/src/figures/lab03-timeline.svg"] = timeline_figure(variants)
    spread = database_bound_table(results)
    artifacts["book/src/generated/lab03-bounds.md"] = (report.bounds_markdown(results)
                                                       + (f"\n{spread}" if spread else ""))
    return artifacts


def is_sweep_step(variant: dict) -> bool:
    """A step of the sweep, the lockstep and wide-jitter steps included."""
    return variant["name"].startswith(("pool=", LOCKSTEP, WIDE_JITTER))


def is_lockstep_step(variant: dict) -> bool:
    return variant["name"].startswith(LOCKSTEP)


def is_wide_jitter_step(variant: dict) -> bool:
    return variant["name"].startswith(WIDE_JITTER)


def split(results: dict) -> tuple[dict, dict]:
    """The results twice: with the four variants only, and with the sweep's steps only."""
    return ({**results, "variants": [v for v in results["variants"] if not is_sweep_step(v)]},
            {**results, "variants": [v for v in results["variants"] if is_sweep_step(v)]})


def _where(params: dict) -> str:
    if params.get("database") == "DATABASE_URL":
        return "the database in DATABASE_URL"
    if params.get("database") == "the target's":
        return "the database of the server under test (--target), on another machine"
    cpus = params.get("postgres_cpus")
    return ("a throwaway cluster " + (f"pinned to CPU {cpus} (beside ab)" if cpus else "(not pinned)"))


def _database_line(results: dict) -> str:
    pg = (results.get("pools") or {}).get("postgresql")
    version = pg["version"].split(" on ")[0] if pg else "PostgreSQL"
    settings = f", max_connections={pg['settings']['max_connections']}" if pg else ""
    return " ".join(filter(None, [f"Database: {version}{settings}, {_where(results['params'])}.",
                                  _mode(results["params"])]))


def _mode(params: dict) -> str:
    """Which mode made the run (runs from before the modes were thorough's: a server per set-up)."""
    if "mode" not in params:  # a run from before the modes: as thorough, and said nowhere
        return ""
    if params["mode"] == "thorough":
        return "Mode: thorough (`--thorough`: a server per set-up)."
    return "Mode: default (two servers, a database.dispatcher per size, shorter steps)."


def _status_tail(probe: dict | None) -> str:
    """The probe's p99 and how many answered; the maximum instead when too few answered for a p99."""
    if not probe or probe.get("max_ms") is None:
        return "–"
    p99 = probe_p99(probe)
    n = f"({probe['requests']:,})"
    return f"{_fmt(p99, 1)} {n}" if p99 is not None else f"max {_fmt(probe['max_ms'], 1)} {n}"


def _extra(v: dict, key: str, digits: int = 0) -> str:
    return _fmt((v.get("extra") or {}).get(key), digits)


# The probe's cell is its p99 only from SAMPLES_FOR_P99 answers on, else its maximum ("max ..."):
# the heading says both, so that no reader takes a maximum of a few dozen probes for a p99.
STATUS_HEADING = "/status p99 (or max) ms (answers)"


def goodput(v: dict) -> float | None:
    """2xx responses per second: ab's requests/s counts every response it completed, the
    non-2xx ones (fast 503s here) included (ab.c: done / timetaken; err_response counts a status
    not starting with 2). A failed request is not counted as good either."""
    if not v.get("complete") or v.get("requests_per_sec") is None:
        return None
    good = max(0, v["complete"] - (v.get("non_2xx") or 0) - (v.get("failed") or 0))
    return v["requests_per_sec"] * good / v["complete"]


GOODPUT_COLUMN = ("goodput (2xx/s)", lambda v: _fmt(goodput(v), 0), True)


def with_goodput(columns: list, variants: list[dict]) -> list:
    """The columns, with goodput right after req/s when any row had responses that were not 2xx
    (or failed): there, req/s alone overstates what was served."""
    if not any(v.get("non_2xx") or v.get("failed") for v in variants):
        return columns
    at = next(i for i, c in enumerate(columns) if c[0] == "req/s") + 1
    return [*columns[:at], GOODPUT_COLUMN, *columns[at:]]


TABLE_COLUMNS = [
    ("variant", lambda v: v["name"], False),
    ("connections", lambda v: _extra(v, "pool_size"), True),
    ("threads", lambda v: _fmt(v["pool_threads"]), True),
    ("req/s", lambda v: _fmt(v["requests_per_sec"], 0), True),
    ("p50 ms", lambda v: _fmt(v["p50_ms"], 1), True),
    ("p99 ms", lambda v: _fmt(v["p99_ms"], 1), True),
    ("failed", lambda v: _fmt(v["failed"]), True),
    ("non-2xx (timeouts)", lambda v: _fmt(v["non_2xx"]), True),
    (STATUS_HEADING, lambda v: _status_tail(v.get("probe")), True),
    ("Play CPU", lambda v: f"{v['server_cpu_utilization']:.0%}" if v.get("server_cpu_utilization") is not None else "–", True),
    ("PostgreSQL CPU", lambda v: f"{v['extra']['postgres_cpu_utilization']:.0%}"
     if (v.get("extra") or {}).get("postgres_cpu_utilization") is not None else "–", True),
    ("its core, all users", lambda v: f"{v['load_cores_busy']:.0%}" if v.get("load_cores_busy") is not None else "–", True),
    ("predicted req/s", predicted_cell, True),
    ("bound by", lambda v: _fmt(v.get("bound_by")), False),
    ("measured/predicted", ratio_cell, True),
]

SWEEP_COLUMNS = [c for c in TABLE_COLUMNS if c[0] not in ("threads", STATUS_HEADING)]
SWEEP_COLUMNS[1] = ("pool (connections = threads)", lambda v: _extra(v, "pool_size"), True)
# The default mode: one server has connections for the largest pool; a step's threads bound those in use.
SHARED_SWEEP_COLUMNS = [*SWEEP_COLUMNS]
SHARED_SWEEP_COLUMNS[1] = ("pool (threads = most connections in use)", SWEEP_COLUMNS[1][1], True)


def _sweep_model(results: dict) -> dict:
    """The sweep's prediction inputs, the median over its servers' calibrations."""
    variants = sorted((v for v in results["variants"] if v["name"].startswith("pool=")),
                      key=lambda v: v["extra"]["pool_size"])
    extra = [v["extra"] for v in variants]
    model = {"variants": variants, "c": results["params"]["concurrency"],
             "lockstep": [v for v in results["variants"] if is_lockstep_step(v)],
             "wide_jitter": [v for v in results["variants"] if is_wide_jitter_step(v)],
             "busy_ms": statistics.median(v["service_ms"] for v in variants),
             "alone_ms": statistics.median(e["query_alone_ms"] for e in extra),
             "jitter": (results.get("pools") or {}).get("query_jitter")}
    if all(e.get("postgres_cpu_ms_per_query") for e in extra):
        model["cpu_ms"] = statistics.median(e["postgres_cpu_ms_per_query"] for e in extra)
        model["cores"] = extra[0]["postgres_cores"]
        model["ceiling"] = model["cores"] * 1000.0 / model["cpu_ms"]
    return model


def _one_server(variants: list[dict]) -> bool:
    """Whether the sweep ran on one server (the default mode), so one calibration serves all of it."""
    return all((v.get("extra") or {}).get("server") == "shared" for v in variants)


def _pool(v: dict) -> str:
    return f"`pool={v['extra']['pool_size']}`"


def sweep_rows(results: dict) -> list[tuple[str, str, float | int, str]]:
    """The sweep's facts: its calibration, its prediction, and what the chapter compares of its
    steps, as (what, the fact's name, value, the value as the table shows it). The steps' own
    figures are the sweep's table."""
    m = _sweep_model(results)
    variants, busy, one = m["variants"], m["busy_ms"], _one_server(m["variants"])
    over = "" if one else "; the median over the servers"
    jitter = f", varied by ±{m['jitter']:.0%}" if m.get("jitter") else ""
    query_ms = results["params"]["query_ms"]
    rows = [(f"the wait of a query, *w*: `pg_sleep` of `--query-ms`{jitter}", "wait_ms", query_ms, f"{query_ms} ms"),
            ("the rest of its database work (a connection from the pool, the two statements, the answer), timed "
             f"alone with no wait at start-up{over}", "alone_ms", m["alone_ms"], f"{m['alone_ms']:.2f} ms"),
            ("the time a query held its connection, *S*: the steps' median", "hold_ms", busy, f"{busy:.1f} ms")]
    if "ceiling" in m:
        cores, knee = m["cores"], m["ceiling"] * busy / 1000.0
        rows += [(f"PostgreSQL's CPU per query, timed alone at start-up, *d*{over}", "d_ms", m["cpu_ms"],
                  f"{m['cpu_ms']:.2f} ms"),
                 ("PostgreSQL's cores, *k*", "cores", cores, f"{cores}"),
                 ("PostgreSQL's limit, *k* ÷ *d*: the figure's dashed line", "limit_per_s", m["ceiling"],
                  f"{m['ceiling']:,.0f} queries/s"),
                 ("the corner, *N*\\* = *k* × *S* ÷ *d*", "corner", knee, f"about {knee:.0f} connections")]
        if not one:
            rows += _calibration_rows(variants)
        hikari = 2 * cores
        near = min(variants, key=lambda v: (abs(v["extra"]["pool_size"] - hikari), v["extra"]["pool_size"]))
        corner = min(variants, key=lambda v: (abs(v["extra"]["pool_size"] - knee), v["extra"]["pool_size"]))
        rows += [("HikariCP's starting point, *k* × 2 + effective spindles, with the data in memory",
                  "hikari_connections", hikari, f"{hikari} connections"),
                 ("the step nearest HikariCP's number", "hikari_pool", near["extra"]["pool_size"], _pool(near)),
                 ("the step nearest the corner", "corner_pool", corner["extra"]["pool_size"], _pool(corner))]
        if near is not corner:
            ratio = corner["requests_per_sec"] / near["requests_per_sec"]
            rows.append(("requests/s of the step nearest the corner ÷ the step nearest HikariCP's number",
                         "corner_over_hikari", ratio, f"{ratio:.1f}"))
    best = max(variants, key=lambda v: v["requests_per_sec"])
    rows.append(("the step that served the most requests/s", "best_pool", best["extra"]["pool_size"], _pool(best)))
    by_size = {v["extra"]["pool_size"]: v for v in variants}
    for steps, what, name in ((m["lockstep"], "every wait exactly *w*", "lockstep_share"),
                              (m["wide_jitter"], "waits varied more", "wide_jitter_share")):
        for step in steps[:1]:
            same = by_size.get(step["extra"]["pool_size"])
            if same:
                share = step["requests_per_sec"] / same["requests_per_sec"]
                rows.append((f"requests/s of `{step['name']}` ({what}) ÷ {_pool(same)}", name, share, f"{share:.0%}"))
    return rows


def _calibration_rows(variants: list[dict]) -> list[tuple[str, str, float, str]]:
    """A server per step: how far their calibrations of *d* differ, and whether the same work's wall
    time moved with its CPU (then the machine ran faster or slower, not PostgreSQL doing other work)."""
    cpu = [v["extra"]["postgres_cpu_ms_per_query"] for v in variants]
    wall = [v["extra"]["query_alone_ms"] for v in variants]
    rows = [("the least and the most *d* of the servers' calibrations", "d_spread_ms", max(cpu) - min(cpu),
             f"{min(cpu):.2f} to {max(cpu):.2f} ms")]
    if len(cpu) >= 3 and len(set(cpu)) >= 2 and len(set(wall)) >= 2:
        r = statistics.correlation(cpu, wall)
        rows.append(("the correlation of that work's wall time with *d* over the servers (near 1: the machine's "
                     "speed moved both)", "d_wall_correlation", r, f"{r:.2f}"))
    return rows


def sweep_facts_table(results: dict) -> str:
    return ("| the sweep, from the committed run | value |\n|:---|---:|\n"
            + "".join(f"| {label} | {text} |\n" for label, _, _, text in sweep_rows(results)))


# -- the worked example of mean-value analysis ("Queueing at the corner") -------------------
# Its first rows, one connection at a time, on the sweep's own S and d (Listing 3-11's facts), on
# one core as the chapter's steps are: pul.model.mean_value_steps, the lines that draw the sweep's
# curve.
MVA_EXAMPLE_ROWS = 3
_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def _sig(x: float, digits: int = 4) -> str:
    """`x` to `digits` significant figures, never in exponent form (2.774, 80.27, 0.03340, 36.04)."""
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{x:,.{decimals}f}"


def mva_example(results: dict) -> dict | None:
    """The worked example: S (the sweep's median hold time) and d (PostgreSQL's CPU per query), the
    first MVA_EXAMPLE_ROWS rows of the analysis on one core, Little's law alone for as many
    connections, and at the corner N* = S ÷ d (rounded to a whole connection) the analysis against
    the bounds' min(N* ÷ S, 1 ÷ d). None for a run without a sweep calibrated for d."""
    if not any(v["name"].startswith("pool=") for v in results["variants"]):
        return None
    m = _sweep_model(results)
    if "cpu_ms" not in m:
        return None
    hold, d = m["busy_ms"], m["cpu_ms"]
    at = max(1, round(hold / d))
    return {"hold_ms": hold, "d_ms": d, "cores": m["cores"],
            "rows": model.mean_value_steps(MVA_EXAMPLE_ROWS, hold, d),
            "little_per_s": MVA_EXAMPLE_ROWS * 1000.0 / hold,
            "corner": hold / d, "corner_n": at,
            "corner_per_s": model.mean_value_analysis(at, hold, d),
            "bounds_per_s": min(at * 1000.0 / hold, 1000.0 / d)}


def _anchored(parts: dict[str, str]) -> str:
    """Snippets for the chapter to include by anchor ({{#include FILE:NAME}})."""
    return "".join(f"<!-- ANCHOR: {name} -->\n{text}\n<!-- ANCHOR_END: {name} -->\n" for name, text in parts.items())


def mva_text(results: dict) -> str:
    """mva_example for the chapter: its inputs (`inputs`), the worked table (`table`: each row's
    arithmetic as the chapter's three steps write it) and where it leads (`corner`)."""
    ex = mva_example(results)
    if ex is None:
        missing = "(this run has no sweep to work it on: `scripts/lab run 03` makes one)"
        return _anchored({"inputs": missing, "table": missing, "corner": ""})
    hold, d = ex["hold_ms"], ex["d_ms"]
    inputs = f"*S* = {_sig(hold)} ms, of which *d* = {_sig(d)} ms at the core"
    if ex["cores"] != 1:
        inputs += f" (worked on one core, as the steps above are; the run's PostgreSQL had *k* = {ex['cores']})"
    lines = ["| *n* | *R*(*n*) | *λ*(*n*) | *Q*(*n*) |", "|---:|---:|---:|---:|"]
    queue = 0.0
    for row in ex["rows"]:
        at_cpu, rate = row["at_cpu_ms"], row["requests_per_sec"]
        lines.append(f"| {row['n']} | {_sig(d)} ms × (1 + {_sig(queue, 3)}) = {_sig(at_cpu)} ms "
                     f"| {row['n']} ÷ ({_sig(hold - d)} + {_sig(at_cpu)}) ms = {_sig(rate)}/s "
                     f"| {_sig(rate)}/s × {_sig(at_cpu)} ms = {_sig(row['queue'], 3)} |")
        queue = row["queue"]
    n = len(ex["rows"])
    last = ex["rows"][-1]["requests_per_sec"]
    cost = 1 - last / ex["little_per_s"]
    corner = (f"Little's law alone would say {_sig(ex['little_per_s'])}/s for {_WORDS.get(n, n)} connections: "
              f"queueing costs {cost:.1%} so far, and more as the core fills. At the corner "
              f"(*N*\\* ≈ {ex['corner_n']} here) the same steps give {ex['corner_per_s']:,.0f}/s against the "
              f"bounds' {ex['bounds_per_s']:,.0f}/s.")
    return _anchored({"inputs": inputs + ":", "table": "\n".join(lines), "corner": corner})


def facts(results: dict, lab) -> dict:
    """What the chapter's claims read of a run (pul.claims: lab03.facts.NAME): every row of the sweep's
    facts table, by its name in sweep_rows (none for a run without a sweep), the database CPU
    bound's spread over the rows, as the table under the bounds has it (db_*,
    database_bound_facts), what the four set-ups' timelines show (timeline_facts), and each
    set-up's goodput, the table's 2xx/s (goodput_VARIANT), and, with a sweep, how much the server
    varied the waits of the steps that set no jitter of their own (query_jitter: lab.query-jitter,
    ±50% as 0.5); and how many times /calibrate ran a request's database work (calibration_runs)."""
    variants, sweep = split(results)
    values = ({name: round(value, 4) if isinstance(value, float) else value
               for _, name, value, _ in sweep_rows(sweep)} if sweep["variants"] else {})
    jitter = (results.get("pools") or {}).get("query_jitter")
    if sweep["variants"] and jitter is not None:
        values["query_jitter"] = jitter
    runs = ((results.get("pools") or {}).get("calibration") or {}).get("runs")
    if runs is not None:
        values["calibration_runs"] = runs
    good = {f"goodput_{claims_key(v['name'])}": round(rate, 2) for v in variants["variants"]
            if (rate := goodput(v)) is not None}
    return {**values, **database_bound_facts(results), **timeline_facts(variants), **good}


# What the chapter reads of each of the four set-ups' timelines: (pool, measure, the fact's name).
TIMELINE_FACTS = [(report.OWN_POOL, "busy", "busy"), (report.OWN_POOL, "queued", "queued"),
                  ("connections", "active", "connections"), ("connections", "awaiting", "awaiting")]


def timeline_facts(results: dict) -> dict:
    """The median over each variant's timeline samples of its own dispatcher's busy threads and queued
    tasks, of the connections in use and of the threads awaiting one: busy_median_VARIANT,
    queued_median_VARIANT, connections_median_VARIANT, awaiting_median_VARIANT (the timeline figure
    draws them; the summary's notes give the busy threads' share); and the share of its samples
    with every connection of its pool in use (connections_full_share_VARIANT)."""
    found = {}
    for v in results["variants"]:
        for pool, measure, name in TIMELINE_FACTS:
            values = report.timeline_samples(v, v.get("pool") if pool == report.OWN_POOL else pool, measure)
            if values:
                found[f"{name}_median_{claims_key(v['name'])}"] = statistics.median(values)
        active = report.timeline_samples(v, "connections", "active")
        size = (v.get("extra") or {}).get("connections")
        if active and size:
            found[f"connections_full_share_{claims_key(v['name'])}"] = round(sum(x >= size for x in active) / len(active), 3)
    return found


# -- the database CPU bound, row by row ------------------------------------------------
# The explanation is prose in the chapter (after Listing 3-12); the numbers it reads are this table,
# under the bounds, and the facts db_* (facts()), so that its claims are checked against the run.

def _database_bound_rows(results: dict, calibrated: str) -> list[dict]:
    """The rows whose database CPU bound is the shared core's, with `calibrated` in their calibration
    (the lockstep step aside: the convoy sets its prediction)."""
    return [v for v in results["variants"]
            if (v.get("extra") or {}).get("database_on_load_cores") and (v.get("bounds") or {}).get(model.DATABASE_CPU)
            and (v.get("calibration") or {}).get(calibrated) and not v["extra"].get(model.CONVOY)]


def database_bound(results: dict) -> dict | None:
    """Why the database CPU bound differs from row to row, as numbers: it is k / D, D calibrated just
    before each step. Runs whose calibration measured the database's shared core
    (load_cores_cpu_ms) have D from it: all that core spent per request; older runs have D =
    PostgreSQL's CPU per query + ab's CPU per request. {"rows": [(what, the fact's name, least, its
    row or None, most, its row or None, unit)], "rows_with_it": how many rows, "lockstep_aside": whether
    a lockstep row was left out}; None when fewer than two rows have that bound."""
    rows = _database_bound_rows(results, "load_cores_cpu_ms")
    shared = len(rows) >= 2
    if not shared:
        rows = _database_bound_rows(results, "load_cpu_ms")
        if len(rows) < 2:
            return None
    cores = rows[0]["extra"]["database_on_load_cores"]["cores"]
    per_row = {
        "s_ms": {v["name"]: v["calibration"]["load_cores_cpu_ms"] if shared else
                 v["extra"]["database_on_load_cores"]["cpu_ms"] + v["calibration"]["load_cpu_ms"] for v in rows},
        "bound_per_s": {v["name"]: v["bounds"][model.DATABASE_CPU] for v in rows},
        "binding_bound_per_s": {v["name"]: v["bounds"][model.DATABASE_CPU] for v in rows
                                if v.get("bound_by") == model.DATABASE_CPU},
        "rate_per_s": {v["name"]: v["requests_per_sec"] for v in rows},
        "d_ms": {v["name"]: v["extra"]["database_on_load_cores"]["cpu_ms"] for v in rows},
        "spent_ms": {v["name"]: v["extra"]["postgres_cpu_ms_per_request"] for v in rows
                     if v["extra"].get("postgres_cpu_ms_per_request")},
    }
    if not shared:
        per_row["ab_ms"] = {v["name"]: v["calibration"]["load_cpu_ms"] for v in rows}
    s_what = ("*D*: all the CPU the database's core spent per request (PostgreSQL, `ab`, the driver), in the "
              "round just before the step, at its concurrency" if shared else
              "*D*: PostgreSQL's CPU per query, *d*, plus `ab`'s CPU per request in the round just before the step")
    k = f"{cores:g} core{'' if cores == 1 else 's'}"
    labels = [("s_ms", s_what, "ms", True),
              ("bound_per_s", f"the bound, *k* ÷ *D*, with *k* = {k}", "req/s", True),
              ("binding_bound_per_s", "the same, over the rows it binds", "req/s", True),
              ("rate_per_s", "requests/s measured", "req/s", True),
              ("d_ms", "*d*: PostgreSQL's CPU per query, timed alone at each server's start", "ms", False),
              ("spent_ms", "PostgreSQL's CPU per request during the measured run", "ms", True),
              ("ab_ms", "`ab`'s CPU per request, in the round just before the step", "ms", True)]
    table = []
    for name, what, unit, with_rows in labels:
        values = per_row.get(name)
        if not values:
            continue
        least, most = min(values, key=values.get), max(values, key=values.get)
        table.append((what, name, values[least], least if with_rows else None, values[most],
                      most if with_rows else None, unit))
    return {"rows": table, "rows_with_it": len(rows),
            "lockstep_aside": any((v.get("extra") or {}).get(model.CONVOY) for v in results["variants"])}


def database_bound_table(results: dict) -> str:
    """database_bound as a table, for under the bounds listing; empty when it has none."""
    found = database_bound(results)
    if found is None:
        return ""
    aside = "; the lockstep step aside" if found["lockstep_aside"] else ""

    def value(x, unit):
        return f"{x:,.0f} {unit}" if unit == "req/s" else f"{x:.2f} {unit}"

    lines = [f"| the database CPU bound, over the {found['rows_with_it']} rows that have it{aside} "
             "| least | its row | most | its row |", "|:---|---:|:---|---:|:---|"]
    lines += [f"| {what} | {value(least, unit)} | {f'`{lrow}`' if lrow else '–'} | {value(most, unit)} | "
              f"{f'`{mrow}`' if mrow else '–'} |" for what, _, least, lrow, most, mrow, unit in found["rows"]]
    return "\n".join(lines) + "\n"


def database_bound_facts(results: dict) -> dict:
    """database_bound's rows as facts: db_NAME_least, db_NAME_most and, where the table names them,
    db_NAME_least_row and db_NAME_most_row (a row's name); db_rows, how many rows have the bound."""
    found = database_bound(results)
    if found is None:
        return {}
    values = {"db_rows": found["rows_with_it"]}
    for _, name, least, lrow, most, mrow, _ in found["rows"]:
        values.update({f"db_{name}_least": round(least, 4), f"db_{name}_most": round(most, 4)})
        if lrow:
            values.update({f"db_{name}_least_row": lrow, f"db_{name}_most_row": mrow})
    return values


def sweep_figure(results: dict) -> str:
    """Throughput (top) and latency (bottom) against pool size, with the predictions."""
    m = _sweep_model(results)
    variants, c, busy = m["variants"], m["c"], m["busy_ms"]
    rows = "\n".join(f'{v["extra"]["pool_size"]} {v["requests_per_sec"]:.1f} {v["mean_ms"]:.1f} {v["p99_ms"]:.1f}'
                     for v in variants)
    sizes = [v["extra"]["pool_size"] for v in variants]
    low, high = min(sizes) / 1.3, max(sizes) * 1.3
    def point_rows(steps: list[dict]) -> str:
        return "\n".join(f'{v["extra"]["pool_size"]} {v["requests_per_sec"]:.1f}' for v in steps)

    # The extra steps, as single points beside the sweep's line.
    extra_points = (', $lockstep using 1:2 with points pointtype 2 pointsize 2 linewidth 2 linecolor rgb "#d62728" '
                    f'title "measured, every wait exactly {results["params"]["query_ms"]} ms"') if m["lockstep"] else ""
    if m["wide_jitter"]:
        spread = m["wide_jitter"][0]["extra"]["query_jitter"]
        extra_points += (', $wide using 1:2 with points pointtype 9 pointsize 1.8 linecolor rgb "#9467bd" '
                         f'title "measured, waits varied by ±{spread:.0%}"')
    measured_title = f"measured, waits varied by ±{m['jitter']:.0%}" if m.get("jitter") else "measured"
    ceiling = m.get("ceiling")
    # The queueing curve, and Little's law for the latency it implies (c requests in flight).
    curve = ""
    if ceiling:
        points = sorted({max(1, round(low * (high / low) ** (i / 120))) for i in range(121)})
        curve = "\n".join(f"{n} {x:.2f} {c * 1000.0 / x:.2f}" for n in points
                          for x in [model.mean_value_analysis(min(n, c), busy, m["cpu_ms"], m["cores"])])
    top = max([v["requests_per_sec"] for v in variants] + ([ceiling] if ceiling else [])) * 2.0
    extra_plots = (f', ceiling(x) with lines dashtype 2 linewidth 2 linecolor rgb "#d62728" '
                   f'title "PostgreSQL CPU limit: {m["cores"]} core / {m["cpu_ms"]:.2f} ms per query", '
                   f'$queueing using 1:2 with lines linewidth 2 dashtype 3 linecolor rgb "#2ca02c" '
                   f'title "with queueing at the CPU (mean-value analysis)"') if ceiling else ""
    latency_model = (', $queueing using 1:3 with lines linewidth 2 dashtype 3 linecolor rgb "#2ca02c" '
                     f'title "Little\'s law: {c} / predicted throughput"') if ceiling else ""
    script = report.svg_header(760, 660) + f"""
set multiplot layout 2,1 title "Lab 03 sweep: {c} requests in flight, {results['params']['query_ms']} ms of database wait per query"
set logscale x 2
set xrange [{low:.2f}:{high:.2f}]
set xtics ({", ".join(str(s) for s in sizes)})
set grid
set samples 400
set key top left Left reverse
set ylabel "requests per second"
set yrange [0:{top:.0f}]
littles(x) = (x < {c} ? x : {c}) * 1000.0 / {busy:.3f}
ceiling(x) = {ceiling or 0:.1f}
$data << EOD
{rows}
EOD
$queueing << EOD
{curve}
EOD
$lockstep << EOD
{point_rows(m["lockstep"])}
EOD
$wide << EOD
{point_rows(m["wide_jitter"])}
EOD
plot littles(x) with lines linewidth 2 linecolor rgb "#999999" title "Little's law: min({c}, pool) / {busy:.1f} ms"{extra_plots}, \\
     $data using 1:2 with linespoints pointtype 7 pointsize 1.2 linewidth 2 linecolor rgb "#1f77b4" title "{measured_title}"{extra_points}
set xlabel "{'pool size (database.dispatcher threads = the most connections in use)' if _one_server(variants)
               else 'pool size (connections = database.dispatcher threads)'}"
set ylabel "latency (ms)"
set yrange [0:*]
set key top right
plot $data using 1:3 with linespoints pointtype 7 pointsize 1.2 linewidth 2 linecolor rgb "#1f77b4" title "measured mean", \\
     $data using 1:4 with linespoints pointtype 5 pointsize 1.0 linewidth 2 linecolor rgb "#ff7f0e" title "measured p99"{latency_model}
unset multiplot
"""
    return report.gnuplot_svg(script)


# -- "At a glance" (book/src/at-a-glance.md): this lab's rules, each worked on its run ------------

def glance_jdbc_sizing(lab03: glance.Run) -> str:
    """The corner N* = k × S ÷ d against HikariCP's k × 2, and the dispatcher's threads T against N."""
    f = lab03.facts()
    parts = []
    if "corner" in f:
        hold, cpu = glance.shown(f["hold_ms"], 1), glance.shown(f["d_ms"], 2)
        parts.append(
            f"{glance.run_line(lab03)}: each request checked out a connection once and held it *S* = {glance.ms(hold)} (*w* = "
            f"{glance.ms(f['wait_ms'], 0)} of `pg_sleep`, the rest its work) and cost PostgreSQL *d* = "
            f"{glance.ms(cpu, 2)} of CPU on *k* = {f['cores']} core{'' if f['cores'] == 1 else 's'}, so "
            f"*N*\\* = *k* × *S* ÷ *d* = {f['cores']} × {glance.ms(hold)} ÷ {glance.ms(cpu, 2)} ≈ "
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
                     f"{glance.rate(sized['requests_per_sec'])}, against {glance.rate(default['requests_per_sec'])} with the "
                     f"JDBC calls on the default dispatcher's *T* = {default['pool_threads']} "
                     f"(`default-dispatcher`).")
    if oversized and sized and oversized.get("complete"):
        timeout = (lab03.data.get("params") or {}).get("connection_timeout_ms")
        goodput = f.get("goodput_oversized_dispatcher")
        parts.append(f"With *T* = {oversized['pool_threads']} threads for *N* = "
                     f"{(oversized.get('extra') or {}).get('connections', '?')} connections "
                     f"(`oversized-dispatcher`), {oversized['non_2xx'] / oversized['complete']:.0%} of the answers "
                     f"were 503s" + (f", after HikariCP's {timeout}-ms `connectionTimeout`" if timeout else "")
                     + (f", and its goodput was {glance.rate(goodput)}" if goodput is not None else "") + ".")
    if not parts:
        return glance.missing(lab03, "pool=32", "database-dispatcher")
    return " ".join(parts) + "\n"


def glance_convoy(lab03: glance.Run) -> str:
    """A lockstep step's range: the perfect convoy's floor up to the smooth prediction."""
    step = next((v for v in (lab03.data or {}).get("variants", [])
                 if ((v.get("extra") or {}).get(model.CONVOY) or {}).get("floor_requests_per_sec")), None)
    if step is None:
        return glance.missing(lab03, "lockstep-pool=32")
    c, extra = step["extra"][model.CONVOY], step["extra"]
    n, wait, cpu = c["in_service"], glance.shown(c["wait_ms"], 0), glance.shown(c["cpu_ms"], 2)
    # The requests in service: a JDBC call holds a thread of the dispatcher and a connection, so
    # n = min(c, T, N); a step of the default mode has fewer threads than connections.
    threads = extra.get("dispatcher_size") or step.get("pool_threads")
    connections = extra.get("connections") or extra.get("pool_size")
    in_service = (f"*n* = min(*c*, *T*, *N*) = min({step['concurrency']}, {threads}, {connections}) = {n} "
                  f"requests in service (*T* the dispatcher's threads, *N* the connections), "
                  if threads and connections and min(step["concurrency"], threads, connections) == n else
                  f"*n* = {n} requests in service, ")
    floor = glance.shown(n * 1000 / (wait + n * cpu / c["cores"]), 0)
    smooth, rate = glance.shown(c["smooth_requests_per_sec"], 0), glance.shown(step["requests_per_sec"], 0)
    return (f"{glance.run_line(lab03)}, `{step['name']}`: {in_service}every wait exactly *w* = {glance.ms(wait, 0)}. The "
            f"floor *n* ÷ (*w* + *n* × *D* ÷ *k*) = {n} ÷ ({glance.ms(wait, 0)} + {n} × {glance.ms(cpu, 2)} ÷ "
            f"{c['cores']:g}) = {glance.rate(floor)}, the smooth prediction (mean-value analysis) {glance.rate(smooth)}. "
            f"It served {glance.rate(rate)}: {rate / floor:.2f} times the floor, {rate / smooth:.2f} of the smooth "
            "prediction.\n")


# The page's rules this lab's run works (pul.glance: book/src/generated/at-a-glance-NAME.md).
GLANCE = {
    "jdbc-sizing": glance_jdbc_sizing,
    "convoy": glance_convoy,
}
