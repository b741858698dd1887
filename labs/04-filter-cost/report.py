"""Lab 04's analysis of a results file (costs, which tool was the limit), its book artifacts, its
summary lines and the facts the chapter's claims read."""

from __future__ import annotations

import statistics

from pul import glance, model, report
from pul.results import _fmt, machine_line, markdown_table, ratio_cell

from .driver import (BASELINE, BASELINE_AGAIN, DEFAULT, KINDS, LOAD_SATURATED, NO_CSRF, SERVER_SATURATED,
                     THOROUGH, WARMUP_JIT_QUIET, WARMUP_SETTLED)

# The baseline's two copies should agree this closely: a bigger gap is noise that hides the
# smaller costs.
BASELINE_AIM = 0.05


def summary_notes(results: dict) -> list[str]:
    analysis = analyse(results)
    notes = [f"Load tools: {analysis['verdict']}"]
    mode = results.get("params", {}).get("mode")
    if mode:
        notes.append(MODES.get(mode, f"Mode: {mode}."))
    warmups = [(v["name"], v["warmup"]) for v in results["variants"] if v.get("warmup")]
    if warmups:
        counts = [len(w["rounds"]) for _, w in warmups]
        unsettled = [name for name, w in warmups if not w["settled"]]
        span = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"
        notes.append(f"Warm-up: {span} rounds of {results['params']['seconds']} s per set-up, "
                     f"until two agreed within {WARMUP_SETTLED:.0%} and the JIT compiled for under "
                     f"{WARMUP_JIT_QUIET:.0%} of the last; "
                     + (f"did NOT settle: {', '.join(unsettled)}." if unsettled else "every set-up settled."))
    if analysis["baseline_agreement"] is not None:
        notes.append(f"Baseline repeat: {BASELINE} {analysis['baseline_rate']:,.0f} req/s vs {BASELINE_AGAIN} "
                     f"{analysis['baseline_again_rate']:,.0f} req/s ({analysis['reference_tool']}), "
                     f"{analysis['baseline_agreement']:.1%} apart "
                     f"({'within' if analysis['baseline_agreement'] <= BASELINE_AIM else 'NOT within'} "
                     f"{BASELINE_AIM:.0%}); " + DRIFT[analysis.get("baseline_drift") or "none"])
    for kind, fit in analysis["per_filter"].items():
        notes.append(f"{LABELS[kind]}: about {fit['slope_us']:.1f} µs per filter per request from throughput, "
                     f"{fit['cpu_slope_us']:.1f} µs from server CPU time (least-squares slope over chain "
                     f"lengths {', '.join(str(n) for n in fit['lengths'])}).")
    notes += [note for note in map(report.band_note, results["variants"]) if note]
    return notes

DRIFT = {
    "none": "the two copies' runs overlap: the difference is the runs' own noise.",
    "slower": "every run of the repeat was slower than every run of the first copy: the server slowed down "
              "over the run.",
    "faster": "every run of the repeat was faster than every run of the first copy: the server was still "
              "getting faster over the run.",
}

# Results made before the two modes existed have no params["mode"]: they were thorough runs, and
# their text stays as it was.
MODES = {
    DEFAULT: "Mode: default. One server offered every set-up, each request naming its filter chain in its path; "
             "it warmed up until its JIT went quiet, then each set-up briefly; the runs were interleaved (run r of "
             "every set-up before run r + 1 of any), the baseline's two more; ab only. `--thorough` measures each "
             "set-up on a fresh server, with ab and wrk.",
    THOROUGH: "Mode: thorough. A fresh server per set-up, each warmed up until its JIT went quiet; ab and wrk.",
}


def table_columns(results: dict):
    analysis = analyse(results)
    ref = analysis["reference_tool"]

    def spread(v, tool):
        s = analysis["tools"][v["name"]].get(tool)
        return "–" if not s else f"{s['median']:,.0f} ({s['min']:,.0f}–{s['max']:,.0f})"

    def latency(v, key):
        run = analysis["tools"][v["name"]][ref]["median_run"]
        return _fmt(run[key], 2)

    def cost(v, key):
        value = analysis["cost"][v["name"]][key]
        return "–" if value is None else f"{value:+.1f}"

    return [
        ("set-up", lambda v: v["name"], False),
        ("wrk req/s median (min–max)", lambda v: spread(v, "wrk"), True),
        ("ab req/s median (min–max)", lambda v: spread(v, "ab"), True),
        (f"mean ms ({ref})", lambda v: latency(v, "mean_ms"), True),
        (f"p99 ms ({ref})", lambda v: latency(v, "p99_ms"), True),
        # One tool for every row's costs (analyse: the reference tool), named in the headers.
        (f"server CPU µs/req ({ref})", lambda v: _fmt(analysis["cost"][v["name"]]["cpu_us"], 1), True),
        (f"cost µs/req vs none ({ref})", lambda v: cost(v, "us"), True),
        (f"CPU cost µs/req vs none ({ref})", lambda v: cost(v, "cpu_cost_us"), True),
        ("failed", lambda v: _fmt(sum(r["failed"] + r["non_2xx"] for r in runs_of(v))), True),
        # The model: the server's core or ab's, calibrated before the step (pul.model).
        ("predicted req/s", lambda v: _fmt(v.get("predicted_requests_per_sec"), 0), True),
        ("bound by", lambda v: _fmt(v.get("bound_by")), False),
        ("measured/predicted", ratio_cell, True),
    ]

def render(results: dict, lab) -> dict[str, str]:
    analysis = analyse(results)
    table = markdown_table(results, table_columns(results)) + "\n" + machine_line(results) + "\n"
    summary = "\n".join(f"- {note}" for note in summary_notes(results)) + "\n"
    return {
        "book/src/generated/lab04-table.md": table,
        "book/src/generated/lab04-summary.md": summary,
        "book/src/generated/lab04-tools.md": tools_table(results, analysis),
        "book/src/generated/lab04-why-facts.md": why_text(results, analysis),
        "book/src/figures/lab04-throughput.svg": throughput_figure(results, analysis),
        "book/src/figures/lab04-cost.svg": cost_figure(results, analysis),
        "book/src/figures/lab04-timeline.svg": timeline_figure(results),
        "book/src/generated/lab04-bounds.md": report.bounds_markdown(results),
        "book/src/generated/lab04-modes.md": modes_text(results, report.committed_run(lab, THOROUGH_DIR)),
        **profile_outputs(lab, results),
    }


# -- where the CPU goes (the committed --profile run) ----------------------------------

# The set-ups of the profiled run, and the two the chapter's flame graphs show.
PROFILED = ["none", "plain-x1", "java-plain-x1", "plain-x10", "essential-x10", "java-plain-x10", "java-essential-x10"]
FLAME_GRAPHS = ["plain-x10", "java-plain-x10"]
# Where a chain of plain Filters spends its samples (a sample counts when its stack has such a frame).
PROFILE_COLUMNS = [
    ("Play's FlattenedAccumulator", lambda f: f.startswith("play/api/libs/streams/FlattenedAccumulator")),
    ("Akka Streams' materializer", lambda f: f.startswith("akka/stream/impl/PhasedFusingActorMaterializer")),
    ("a new actor's bookkeeping (akka/actor/dungeon/Children)", lambda f: f.startswith("akka/actor/dungeon/Children")),
    ("a thread started per task (CompletableFuture$ThreadPerTaskExecutor)",
     lambda f: f.startswith("java/util/concurrent/CompletableFuture$ThreadPerTaskExecutor")),
    ("on a thread of its own ([Thread-N])", lambda f: f == "[Thread-N]"),
]


# The facts' names of PROFILE_COLUMNS' shares, in the same order (profile_NAME_SETUP).
PROFILE_COLUMN_FACTS = ["accumulator", "materializer", "actor", "thread_per_task", "own_thread"]


def profile_facts(lab) -> dict:
    """What the chapter reads of the committed --profile run's table, per PROFILED set-up: its server
    CPU per request (profile_cpu_us_SETUP), its samples (profile_samples_SETUP) and each column's
    share of them (profile_materializer_SETUP, ...). Empty without a profiled run."""
    found = {}
    for name, (v, shares) in report.profile_column_facts(lab, PROFILED, PROFILE_COLUMN_FACTS, PROFILE_COLUMNS).items():
        setup = _fact(name)
        found[f"profile_cpu_us_{setup}"] = round(v["server_cpu_ms_per_request"] * 1000, 1)
        found[f"profile_samples_{setup}"] = v["profile"]["samples"]
        found.update(shares)
    return found


def profile_outputs(lab, main: dict) -> dict[str, str]:
    """The flame graphs and the table of the committed --profile run (results/profile)."""
    run = report.profiled_run(lab)
    if run is None:
        return {}
    return {
        "book/src/generated/lab04-profile.md": "<!-- ANCHOR: table -->\n"
        + report.profile_markdown(lab, run, PROFILED, PROFILE_COLUMNS, main) + "<!-- ANCHOR_END: table -->\n"
        + "<!-- ANCHOR: threads -->\n" + threads_table(main) + "<!-- ANCHOR_END: threads -->\n",
        **report.flame_figures(lab, run, {f"book/src/figures/lab04-flame-{name}.svg": name for name in FLAME_GRAPHS}),
    }


# -- the two modes, side by side --------------------------------------------------

# The --thorough run the book compares the default mode's with (`scripts/lab run 04 --thorough
# --results-dir labs/04-filter-cost/results/thorough`).
THOROUGH_DIR = "thorough"


# The set-ups of the timeline figure: no filters, ten plain Filters, ten EssentialFilters.
TIMELINE = ["none", "plain-x10", "essential-x10"]


def timeline_figure(results: dict) -> str:
    """TIMELINE's set-ups: the server's core and its default dispatcher over each chain's first ab run."""
    return report.timeline_svg(
        results, TIMELINE,
        [("default", "busy", "default dispatcher: busy"), ("default", "threads", "default dispatcher: threads"),
         ("default", "queued", "default dispatcher: queued tasks")],
        "Lab 04: the default dispatcher and the core while each chain ran (the first ab run)")


def timeline_facts(results: dict) -> dict:
    """What the chapter reads of the timeline figure: the default dispatcher's size
    (dispatcher_threads, as the server reported it) and, per TIMELINE set-up, the median over its
    samples of the dispatcher's busy threads and queued tasks (busy_median_SETUP,
    queued_median_SETUP). A set-up without a timeline has none."""
    found = {}
    size = ((results.get("pools") or {}).get("pools") or {}).get("default", {}).get("threads")
    if size:
        found["dispatcher_threads"] = size
    for v in (v for v in results["variants"] if v["name"] in TIMELINE):
        for measure in ("busy", "queued"):
            values = report.timeline_samples(v, "default", measure)
            if values:
                found[f"{measure}_median_{_fact(v['name'])}"] = statistics.median(values)
    return found


def _ab_costs(results: dict) -> dict[str, tuple[float, float | None]]:
    """Per set-up: ab's median req/s and its cost in µs per request against the same run's baseline."""
    medians = {}
    for v in results["variants"]:
        rates = [r["requests_per_sec"] for r in runs_of(v) if r["tool"] == "ab"]
        if rates:
            medians[v["name"]] = statistics.median(rates)
    base = medians.get(BASELINE)
    return {name: (rate, None if base is None or name == BASELINE else 1e6 / rate - 1e6 / base)
            for name, rate in medians.items()}


def modes_comparison(results: dict, thorough: dict | None) -> dict | None:
    """The default mode's run against a --thorough one (a fresh server per set-up), each cost against
    its own run's baseline: per set-up, and what the chapter's claims read of them (facts' modes_*).
    None without a --thorough run to compare with."""
    if thorough is None or results.get("params", {}).get("mode") == THOROUGH:
        return None
    one, fresh = _ab_costs(results), _ab_costs(thorough)
    rows = []
    for n in (n for n in one if n in fresh and n != BASELINE_AGAIN):
        (r1, c1), (r2, c2) = one[n], fresh[n]
        gap = None if c1 is None or c2 is None else c1 - c2
        ratio = c1 / c2 if gap is not None and min(c1, c2) >= LARGE_COST_US else None
        rows.append((n, r1, c1, r2, c2, gap, ratio))
    gaps = [abs(row[5]) for row in rows if row[5] is not None]
    ratios = [row[6] for row in rows if row[6] is not None]
    order = [n for n in ("java-plain-x10", "plain-x10", "essential-x10") if n in one and n in fresh]

    def ranking(costs):
        return " > ".join(sorted(order, key=lambda n: -costs[n][1]))

    found = {"setups": len(rows), "ranking": ranking(one), "fresh_ranking": ranking(fresh)}
    if gaps:
        found.update(gap_median_us=statistics.median(gaps), gap_max_us=max(gaps))
    if ratios:
        found.update(ratio_min=min(ratios), ratio_max=max(ratios))
    return {"rows": rows, "facts": found}


def modes_text(results: dict, thorough: dict | None) -> str:
    """The two modes' costs side by side, set-up by set-up, and what they add up to, in two tables."""
    compared = modes_comparison(results, thorough)
    if compared is None:
        return ("No `--thorough` run is committed next to this one, so the book cannot compare the two "
                "modes here.\n")
    lines = ["| set-up | one server: ab req/s | cost µs/req | fresh servers: ab req/s | cost µs/req | "
             "cost difference µs/req | one server ÷ fresh |", "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {n} | {r1:,.0f} | {_cost(c1)} | {r2:,.0f} | {_cost(c2)} | {_cost(gap)} | "
              f"{'–' if ratio is None else f'{ratio:.2f}'} |" for n, r1, c1, r2, c2, gap, ratio in compared["rows"]]
    f = compared["facts"]
    summary = [("set-ups both runs measured with ab", f"{f['setups']}")]
    if "gap_median_us" in f:
        apart = "how far apart a set-up's two costs were"
        summary += [(f"{apart}: the median over the set-ups", f"{f['gap_median_us']:.1f} µs"),
                    (f"{apart}: the most", f"{f['gap_max_us']:.1f} µs")]
    summary += [("the ten-filter chains, dearest first, on the one server", _ranked(f["ranking"])),
                ("the same on fresh servers", _ranked(f["fresh_ranking"]))]
    if "ratio_min" in f:
        summary.append((f"one server ÷ fresh, where both costs are {LARGE_COST_US:g} µs or more",
                        f"{f['ratio_min']:.2f}–{f['ratio_max']:.2f}"))
    lines += ["", "| the two runs compared | value |", "|:---|---:|"]
    lines += [f"| {what} | {value} |" for what, value in summary]
    lines += ["", f"The fresh-server run: {thorough['started_at'][:10]}, {thorough['duration_s']:,.0f} s, "
              f"load average {thorough['machine'].get('load_average_at_start')} at start."]
    return "\n".join(lines) + "\n"


def _ranked(ranking: str) -> str:
    """java-plain-x10 > plain-x10 -> `java-plain-x10` > `plain-x10`"""
    return " > ".join(f"`{n}`" for n in ranking.split(" > ")) if ranking else "–"


# Costs this large are compared as a ratio too: a few µs of noise is then a small share of them.
LARGE_COST_US = 10.0


def _cost(us: float | None) -> str:
    return "–" if us is None else f"{us:+.1f}"


# -- analysis of a results file -----------------------------------------------------

def _summary(runs: list[dict]) -> dict | None:
    if not runs:
        return None
    ordered = sorted(runs, key=lambda r: r["requests_per_sec"])
    rates = [r["requests_per_sec"] for r in ordered]
    return {
        "median": statistics.median(rates), "min": rates[0], "max": rates[-1], "runs": len(rates),
        "median_run": ordered[(len(ordered) - 1) // 2],
        "server_utilization": statistics.median(r["server_cpu_utilization"] or 0 for r in runs),
        "load_utilization": statistics.median(r["load_cpu_utilization"] or 0 for r in runs),
        "server_cores_idle": statistics.median(r.get("server_cores_idle") or 0 for r in runs),
        "cpu_us": statistics.median(r["server_cpu_us_per_request"] for r in runs),
    }


def limit_of(summary: dict) -> str:
    """What held the throughput down, from the CPU the two sides used and the server core's idle time."""
    if summary["load_utilization"] >= LOAD_SATURATED:
        return "load generator"
    if summary["server_utilization"] >= SERVER_SATURATED:
        return "server CPU"
    if summary["server_cores_idle"] >= 0.20:
        return "server waiting (its core idle)"
    return "server core shared with other programs"


def runs_of(v: dict) -> list[dict]:
    """A variant's measured runs; one ab run without repeats (an exercise check's --repeat 1 in the
    default mode) is the variant's own record, which the driver keeps no `runs` list for."""
    if v["extra"].get("runs"):
        return v["extra"]["runs"]
    per_request = v.get("server_cpu_ms_per_request")
    return [{"tool": "ab", "requests_per_sec": v["requests_per_sec"], "complete": v["complete"],
             "mean_ms": v["mean_ms"], "p50_ms": v["p50_ms"], "p99_ms": v["p99_ms"], "max_ms": v["max_ms"],
             "failed": v["failed"], "non_2xx": v["non_2xx"],
             "server_cpu_utilization": v.get("server_cpu_utilization"), "load_cpu_utilization": None,
             "server_cores_idle": None, "load_cores_busy": v.get("load_cores_busy"),
             "server_cpu_us_per_request": None if per_request is None else per_request * 1000}]


def baseline_drift(results: dict, tool: str) -> str | None:
    """Whether the baseline's two copies differ by more than their runs' noise: "slower" or
    "faster" when every run of the repeat was slower (faster) than every run of the first copy,
    "none" when the two sets of runs overlap; None without a repeat.

    A server still warming up over the run, or one that slowed down, separates them; noise alone
    separates five runs from five others in 2 of 252 orderings (a rank test's extreme)."""
    by_name = {v["name"]: v for v in results["variants"]}
    if BASELINE not in by_name or BASELINE_AGAIN not in by_name:
        return None
    first, again = ([r["requests_per_sec"] for r in runs_of(by_name[name]) if r["tool"] == tool]
                    for name in (BASELINE, BASELINE_AGAIN))
    if not first or not again:
        return None
    if max(again) < min(first):
        return "slower"
    if min(again) > max(first):
        return "faster"
    return "none"


def analyse(results: dict) -> dict:
    """Per variant and tool: median and spread; which tool saturated what; cost vs the baseline."""
    tools_ = {v["name"]: {tool: _summary([r for r in runs_of(v) if r["tool"] == tool])
                          for tool in ("ab", "wrk")}
              for v in results["variants"]}
    # The reference tool is the one that loaded the server hardest on the baseline: with the server
    # saturated, 1 / throughput is the server's time per request, so differences are costs. It is one
    # tool for every set-up, even where the other pushed that set-up harder: a cost subtracts two
    # set-ups' times per request, and each tool's requests cost the server differently.
    base = tools_.get(BASELINE) or next(iter(tools_.values()))
    available = [t for t in ("wrk", "ab") if base.get(t)]
    ref = max(available, key=lambda t: base[t]["median"])
    verdict_parts = []
    for tool in available:
        s = base[tool]
        limit = "limit: " + limit_of(s)
        verdict_parts.append(f"{tool} {s['median']:,.0f} req/s on '{BASELINE}' (server CPU "
                             f"{s['server_utilization']:.0%}, {tool} CPU {s['load_utilization']:.0%}: {limit})")
    reason = ("the only load tool this run used" if len(available) == 1 else
              f"the tool that pushed '{BASELINE}' hardest, used for every set-up")
    verdict = "; ".join(verdict_parts) + f". Every cost is computed from {ref}, {reason}."
    base_ref = base[ref]
    cost = {}
    for name, per_tool in tools_.items():
        s = per_tool.get(ref)
        cost[name] = {
            "us": None if s is None or name == BASELINE else round(1e6 / s["median"] - 1e6 / base_ref["median"], 2),
            "cpu_us": s["cpu_us"] if s else None,
            "cpu_cost_us": None if s is None or name == BASELINE else round(s["cpu_us"] - base_ref["cpu_us"], 2),
        }
    again = tools_.get(BASELINE_AGAIN, {}).get(ref)
    agreement = abs(again["median"] - base_ref["median"]) / base_ref["median"] if again else None
    drift = baseline_drift(results, ref)
    per_filter = {}
    by_name = {v["name"]: v for v in results["variants"]}
    for kind in KINDS:
        names = [n for n in by_name if by_name[n]["extra"].get("setup") == kind and cost[n]["us"] is not None]
        if names:
            lengths = [by_name[n]["extra"]["chain_length"] for n in names]

            def slope(key):
                # Least squares through the origin: no filters cost nothing extra by definition.
                return round(sum(k * cost[n][key] for k, n in zip(lengths, names)) / sum(k * k for k in lengths), 2)

            per_filter[kind] = {"slope_us": slope("us"), "cpu_slope_us": slope("cpu_cost_us"),
                                "lengths": lengths}
    return {"tools": tools_, "reference_tool": ref, "reference_reason": reason, "verdict": verdict, "cost": cost,
            "baseline_rate": base_ref["median"], "baseline_again_rate": again["median"] if again else None,
            "baseline_agreement": agreement, "baseline_drift": drift, "per_filter": per_filter}


def tools_table(results: dict, analysis: dict) -> str:
    """Per set-up: what each load tool reached, and how busy the server's and the tool's cores were."""
    rows = ["| set-up | tool | req/s median | server CPU | server core idle | load-generator CPU | limit |",
            "|:---|:---|---:|---:|---:|---:|:---|"]
    for v in results["variants"]:
        for tool in ("ab", "wrk"):
            s = analysis["tools"][v["name"]].get(tool)
            if not s:
                continue
            limit = limit_of(s)
            rows.append(f"| {v['name']} | {tool} | {s['median']:,.0f} | {s['server_utilization']:.0%} | "
                        f"{s['server_cores_idle']:.0%} | {s['load_utilization']:.0%} | {limit} |")
    return "\n".join(rows) + "\n"


# -- the "Why" section's facts ---------------------------------------------------------
# The argument is prose in the chapter. The numbers it reads are one generated table (the `facts`
# anchor of generated/lab04-why-facts.md), and each of its sentences that states what the run
# measured carries a claim on facts() (pul.claims), so a re-made run cannot leave it stale.

KIND_MD = {"plain": "Scala `Filter`", "essential": "Scala `EssentialFilter`",
           "java-plain": "Java `Filter`", "java-essential": "Java `EssentialFilter`"}
# The facts' names of one filter of each kind (scala_filter_us, scala_filter_cpu_us, ...).
KIND_FACT = {"plain": "scala_filter", "essential": "scala_essential_filter",
             "java-plain": "java_filter", "java-essential": "java_essential_filter"}
# The timing filter against the no-op filter of its kind, each alone in its chain.
TIMING = [("logging-plain", "plain-x1", "a `Filter`", "timing_own_filter"),
          ("logging-essential", "essential-x1", "an `EssentialFilter`", "timing_own_essential_filter")]


def why_text(results: dict, analysis: dict) -> str:
    """generated/lab04-why-facts.md: the facts table, between the anchor markers the chapter includes
    it by."""
    table = facts_table(analysis, why_numbers(analysis)).rstrip()
    return f"<!-- ANCHOR: facts -->\n{table}\n<!-- ANCHOR_END: facts -->\n"


def why_numbers(analysis: dict) -> dict:
    """The baseline's time per request and its run-to-run noise (costs below it are not resolved)."""
    base = analysis["tools"][BASELINE][analysis["reference_tool"]]
    return {"base": base, "base_us": 1e6 / base["median"], "noise_us": 1e6 / base["min"] - 1e6 / base["max"]}


def _has(analysis: dict, name: str) -> bool:
    return name in analysis["cost"] and analysis["cost"][name]["us"] is not None


def _csrf_share(analysis: dict) -> tuple[float, float]:
    d, n = analysis["cost"]["play-defaults"], analysis["cost"][NO_CSRF]
    return d["us"] - n["us"], d["cpu_cost_us"] - n["cpu_cost_us"]


def _fact(name: str) -> str:
    """A set-up's name as a fact's: plain-x10 -> plain_x10."""
    return name.replace("-", "_")


def why_rows(analysis: dict, n: dict) -> list[tuple[str, str, float, float | None]]:
    """The facts table's rows: (what, the fact's name, µs per request, server CPU µs per request or
    None). facts() names each row's figures NAME_us and NAME_cpu_us."""
    cost = analysis["cost"]

    def measured(name, label, fact=None):
        return ([(f"{label} (`{name}`)", fact or _fact(name), cost[name]["us"], cost[name]["cpu_cost_us"])]
                if _has(analysis, name) else [])

    rows = [(f"a whole request with no filters (`{BASELINE}`): 1 s ÷ its median throughput", "baseline",
             n["base_us"], n["base"]["cpu_us"]),
            (f"run-to-run spread of `{BASELINE}`: 1 s ÷ its slowest run − 1 s ÷ its fastest", "noise",
             n["noise_us"], None)]
    rows += measured(BASELINE_AGAIN, "the baseline measured again, against the first", "baseline_again")
    rows += [(f"one no-op {KIND_MD[kind]}: the fitted slope over chains of "
              f"{', '.join(str(k) for k in fit['lengths'])}", KIND_FACT[kind], fit["slope_us"], fit["cpu_slope_us"])
             for kind, fit in analysis["per_filter"].items()]
    plain = analysis["per_filter"].get("plain")
    for k in sorted(plain["lengths"]) if plain else []:
        name = f"plain-x{k}"
        rows += measured(name, f"a chain of {'one' if k == 1 else k} no-op Scala `Filter`{'' if k == 1 else 's'}")
        if k > 1:
            rows.append((f"per filter in `{name}`: its cost ÷ {k}", f"{_fact(name)}_per_filter",
                         cost[name]["us"] / k, cost[name]["cpu_cost_us"] / k))
    rows += measured("essential-x1", "a chain of one no-op Scala `EssentialFilter`")
    rows += (measured("play-defaults", "Play's three default filters")
             + measured(NO_CSRF, "the defaults without the CSRF filter"))
    if _has(analysis, "play-defaults") and _has(analysis, NO_CSRF):
        rows.append(("the CSRF filter's share: the difference of those two", "csrf", *_csrf_share(analysis)))
    rows += (measured("logging-plain", "the timing filter as a `Filter`")
             + measured("logging-essential", "the timing filter as an `EssentialFilter`"))
    for timing, noop, kind, fact in TIMING:
        if _has(analysis, timing) and _has(analysis, noop):
            rows.append((f"the timing filter's own work as {kind}: `{timing}` − `{noop}`", fact,
                         cost[timing]["us"] - cost[noop]["us"],
                         cost[timing]["cpu_cost_us"] - cost[noop]["cpu_cost_us"]))
    return rows


def facts_table(analysis: dict, n: dict) -> str:
    """The numbers the argument uses, in one table."""
    lines = [f"| from the committed run ({analysis['reference_tool']}) | µs per request "
             "| server CPU µs per request |", "|:---|---:|---:|"]
    lines += [f"| {label} | {us:.1f} | {'–' if cpu is None else f'{cpu:.1f}'} |"
              for label, _, us, cpu in why_rows(analysis, n)]
    return "\n".join(lines) + "\n"


def facts(results: dict, lab) -> dict:
    """What the chapter's claims read of a run (pul.claims: lab04.facts.NAME): every row of the facts
    table (NAME_us, NAME_cpu_us), which tool the costs come from and what limited it on the
    baseline (as Listing 4-13 has it), how far the baseline's repeat came out from the first and
    whether it drifted (baseline_drift), the JVM's threads (threads_SETUP, as threads_table), the
    default mode's costs against the committed --thorough run's (modes_*, as modes_text), the
    default dispatcher in the timeline figure (timeline_facts) and the committed --profile run's
    table (profile_*, profile_facts)."""
    analysis = analyse(results)
    n = why_numbers(analysis)
    values = {}
    for _, name, us, cpu in why_rows(analysis, n):
        values[f"{name}_us"] = round(us, 2)
        if cpu is not None:
            values[f"{name}_cpu_us"] = round(cpu, 2)
    base = n["base"]
    values.update(reference_tool=analysis["reference_tool"], baseline_limit=limit_of(base),
                  baseline_server_cpu=base["server_utilization"], baseline_load_cpu=base["load_utilization"])
    if analysis["baseline_agreement"] is not None:
        values.update(baseline_agreement=round(analysis["baseline_agreement"], 4),
                      baseline_drift=analysis["baseline_drift"])
    values.update({f"threads_{_fact(name)}": count for name, count in most_threads(results).items()
                   if count is not None})
    compared = modes_comparison(results, report.committed_run(lab, THOROUGH_DIR))
    if compared:
        values.update({f"modes_{name}": round(value, 4) if isinstance(value, float) else value
                       for name, value in compared["facts"].items()})
    values.update(timeline_facts(results))
    values.update(profile_facts(lab))
    return values


COLOURS = {"plain": "#d62728", "essential": "#1f77b4", "java-plain": "#ff9896", "java-essential": "#aec7e8"}
LABELS = {"plain": "Scala Filter", "essential": "Scala EssentialFilter",
          "java-plain": "Java Filter", "java-essential": "Java EssentialFilter"}


def _series(results: dict, analysis: dict, value) -> str:
    """gnuplot data blocks, one per filter kind: chain length, value (0 = the baseline)."""
    by_name = {v["name"]: v for v in results["variants"]}
    blocks = []
    for kind in KINDS:
        points = sorted((v["extra"]["chain_length"], value(v["name"])) for v in by_name.values()
                        if v["extra"].get("setup") == kind)
        if points:
            lines = [f"0 {value(BASELINE):.3f}"] + [f"{n} {y:.3f}" for n, y in points]
            blocks.append((kind, "\n".join(lines)))
    return blocks


def _panel(results: dict, analysis: dict, title: str, ylabel: str, value, kinds=KINDS) -> str:
    """One gnuplot plot: a line per filter kind, chain length on x."""
    blocks = [(k, d) for k, d in _series(results, analysis, value) if k in kinds]
    data = "\n".join(f"${k.replace('-', '_')} << EOD\n{d}\nEOD" for k, d in blocks)
    plots = ", \\\n     ".join(
        f"${k.replace('-', '_')} using 1:2 with linespoints lw 2 pt 7 lc rgb \"{COLOURS[k]}\" title \"{LABELS[k]}\""
        for k, _ in blocks)
    return f"""
set title "{title}"
set xlabel "filters in the chain (0 = no filters)"
set ylabel "{ylabel}"
set yrange [*:*]
set xrange [0:*]
set grid
set key top left
{data}
plot {plots}
"""


def throughput_figure(results: dict, analysis: dict) -> str:
    """Median requests/s against chain length, with the min–max range of the runs as error bars."""
    ref = analysis["reference_tool"]
    tools_ = analysis["tools"]

    def row(n, name):
        t = tools_[name][ref]
        return f"{n} {t['median']:.1f} {t['min']:.1f} {t['max']:.1f}"

    blocks = []
    for kind in KINDS:
        points = sorted((v["extra"]["chain_length"], v["name"]) for v in results["variants"]
                        if v["extra"].get("setup") == kind)
        if points:
            blocks.append((kind, "\n".join([row(0, BASELINE)] + [row(n, name) for n, name in points])))
    longest = max(v["extra"]["chain_length"] or 0 for v in results["variants"])
    data = "\n".join(f"${k.replace('-', '_')} << EOD\n{d}\nEOD" for k, d in blocks)
    plots = ", \\\n     ".join(
        f"${k.replace('-', '_')} using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb \"{COLOURS[k]}\" "
        f"title \"{LABELS[k]}\"" for k, _ in blocks)
    script = report.svg_header() + f"""
set title "Lab 04: /status throughput vs. number of no-op filters ({ref}; median, bars: min–max of the runs)"
set xlabel "filters in the chain (0 = no filters)"
set ylabel "requests per second"
set yrange [0:*]
set xrange [-0.3:{longest + 0.3}]
set grid
set key at graph 0.98, graph 0.72 right top opaque box
{data}
plot {plots}
"""
    return report.gnuplot_svg(script)


def cost_figure(results: dict, analysis: dict) -> str:
    """Two panels: every kind, and the same without the Java Filter, whose cost would flatten the rest."""
    ref = analysis["reference_tool"]
    value = lambda name: analysis["cost"][name]["us"] or 0.0  # noqa: E731
    ylabel = "µs per request more than no filters"
    script = (report.svg_header(1000, 440) + "set multiplot layout 1,2\n"
              + _panel(results, analysis, f"Added time per request ({ref}): all four kinds", ylabel, value)
              + _panel(results, analysis, "The same without the Java Filter", ylabel, value,
                       kinds=("plain", "essential", "java-essential"))
              + "unset multiplot\n")
    return report.gnuplot_svg(script)


# The set-ups whose JVM threads the chapter compares: a thread started per request shows as a higher count.
THREADS = ["none", "java-plain-x1", "java-plain-x10", "java-essential-x10"]


def most_threads(results: dict) -> dict[str, int | None]:
    """The most threads the JVM had over each of THREADS' first run in the main run (its timeline)."""
    def most(name: str) -> int | None:
        v = next((v for v in results["variants"] if v["name"] == name), None)
        counts = [c for c in ((v or {}).get("timeline") or {}).get("jvm_threads", []) if c is not None]
        return max(counts) if counts else None
    return {name: most(name) for name in THREADS}


def threads_table(results: dict) -> str:
    found = most_threads(results)
    if None in found.values():
        return "The main run has no timeline of the JVM's threads for these set-ups.\n"
    return ("| set-up (main run, its first run) | most JVM threads |\n|:---|---:|\n"
            + "".join(f"| `{name}` | {count} |\n" for name, count in found.items()))


# -- "At a glance" (book/src/at-a-glance.md): this lab's rules, each worked on its run ------------

# A filter's slope is resolved when this many filters cost more than the noise (chapter 4: "even
# ten of them would cost less than the noise").
RESOLVING_FILTERS = 10


def glance_filter_cost(lab04: glance.Run) -> str:
    """1 ÷ λ of the baseline, and each kind of filter's cost per request (the fitted slope)."""
    f = lab04.facts()
    if "baseline_us" not in f:
        return glance.missing(lab04, "none")
    text = (f"{glance.run_line(lab04)}, measured with {f.get('reference_tool', 'ab')}: a request with no filters "
            f"(`none`) took 1 ÷ *λ* = {glance.us(f['baseline_us'])}")
    if f.get("baseline_limit") == model.SERVER_CPU and f.get("baseline_server_cpu") is not None:
        text += (f", the server's core setting the pace (*U* = {f['baseline_server_cpu']:.0%}, `ab`'s "
                 f"{f['baseline_load_cpu']:.0%})")
    elif f.get("baseline_limit"):
        text += f", paced by the {f['baseline_limit']}, not the server's core: read the costs with care"
    noise = f.get("noise_us")
    if noise is not None:
        text += (f". The noise, 1 ÷ *λ* of the slowest run of `none` less that of its fastest, was "
                 f"{glance.us(noise)}")
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
    return glance.us(slope_us)


# The page's rules this lab's run works (pul.glance: book/src/generated/at-a-glance-NAME.md).
GLANCE = {
    "filter-cost": glance_filter_cost,
}
