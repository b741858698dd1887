"""Lab 04's analysis of a results file (costs, which tool was the limit), its book artifacts and
summary lines."""

from __future__ import annotations

import statistics

from pul import report
from pul.results import _fmt, machine_line, markdown_table

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
        ("measured/predicted", lambda v: _fmt(v.get("measured_over_predicted"), 2), True),
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


def profile_outputs(lab, main: dict) -> dict[str, str]:
    """The flame graphs and the table of the committed --profile run (results/profile)."""
    run = report.profiled_run(lab)
    if run is None:
        return {}
    return {
        "book/src/generated/lab04-profile.md": "<!-- ANCHOR: table -->\n"
        + report.profile_markdown(lab, run, PROFILED, PROFILE_COLUMNS, main) + "<!-- ANCHOR_END: table -->\n"
        + "<!-- ANCHOR: threads -->\n" + threads_sentence(main) + "\n<!-- ANCHOR_END: threads -->\n",
        **report.flame_figures(lab, run, {f"book/src/figures/lab04-flame-{name}.svg": name for name in FLAME_GRAPHS}),
    }


# -- the two modes, side by side --------------------------------------------------

# The --thorough run the book compares the default mode's with (`scripts/lab run 04 --thorough
# --results-dir labs/04-filter-cost/results/thorough`).
THOROUGH_DIR = "thorough"


def timeline_figure(results: dict) -> str:
    """No filters, ten plain Filters, ten EssentialFilters: the server's core and its default
    dispatcher over each chain's first ab run."""
    return report.timeline_svg(
        results, ["none", "plain-x10", "essential-x10"],
        [("default", "busy", "default dispatcher: busy"), ("default", "threads", "default dispatcher: threads"),
         ("default", "queued", "default dispatcher: queued tasks")],
        "Lab 04: the default dispatcher and the core while each chain ran (the first ab run)")


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


def modes_text(results: dict, thorough: dict | None) -> str:
    """The default mode's run against a --thorough one (a fresh server per set-up): the same costs?"""
    if thorough is None or results.get("params", {}).get("mode") == THOROUGH:
        return ("No `--thorough` run is committed next to this one, so the book cannot compare the two "
                "modes here.\n")
    one, fresh = _ab_costs(results), _ab_costs(thorough)
    names = [n for n in one if n in fresh and n != BASELINE_AGAIN]
    rows = ["| set-up | one server: ab req/s | cost µs/req | fresh servers: ab req/s | cost µs/req | "
            "cost difference µs/req | one server ÷ fresh |", "|---|---:|---:|---:|---:|---:|---:|"]
    gaps, ratios = [], []
    for n in names:
        (r1, c1), (r2, c2) = one[n], fresh[n]
        gap = None if c1 is None or c2 is None else c1 - c2
        ratio = c1 / c2 if gap is not None and min(c1, c2) >= LARGE_COST_US else None
        if gap is not None:
            gaps.append(abs(gap))
        if ratio is not None:
            ratios.append(ratio)
        rows.append(f"| {n} | {r1:,.0f} | {_cost(c1)} | {r2:,.0f} | {_cost(c2)} | {_cost(gap)} | "
                    f"{'–' if ratio is None else f'{ratio:.2f}'} |")
    order = [n for n in ("java-plain-x10", "plain-x10", "essential-x10") if n in one and n in fresh]

    def ranking(costs):
        return sorted(order, key=lambda n: -costs[n][1])

    same_order = ranking(one) == ranking(fresh)
    text = "\n".join(rows) + "\n\n"
    text += (f"Both runs measured {len(names)} set-ups with ab. Against each run's own baseline, the costs "
             f"differ by {statistics.median(gaps):.1f} µs per request at the median and {max(gaps):.1f} µs "
             f"at most; the ten-filter chains rank "
             + " > ".join(f"`{n}`" for n in ranking(one))
             + (" in both." if same_order else " on the one server, but "
                + " > ".join(f"`{n}`" for n in ranking(fresh)) + " on fresh servers.")
             + (f" Where both costs are {LARGE_COST_US:g} µs or more, the one server's is "
                f"{min(ratios):.2f}–{max(ratios):.2f} times the fresh servers'." if ratios else "")
             + f" The fresh-server run: {thorough['started_at'][:10]}, {thorough['duration_s']:,.0f} s, "
             f"load average {thorough['machine'].get('load_average_at_start')} at start.\n") if gaps else ""
    return text


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


# -- the "Why" section's numbers and outcome-dependent sentences ---------------------
# The argument itself is prose in the chapter; these are the snippets it includes, each
# between ANCHOR markers (`{{#include generated/lab04-why-facts.md:NAME}}`), so the book never
# states an outcome the committed run does not show.

KIND_MD = {"plain": "Scala `Filter`", "essential": "Scala `EssentialFilter`",
           "java-plain": "Java `Filter`", "java-essential": "Java `EssentialFilter`"}
# The write-up (sources/002): one no-op Scala `Filter` on Play 2.5, 1 s / 40,668 - 1 s / 60,328 (its
# numbers, quoted in the chapter). Like for like here: `plain-x1`, one no-op Scala `Filter`.
WRITEUP_US = 8.0


def why_text(results: dict, analysis: dict) -> str:
    """Every snippet the chapter's "Why" section includes, each between its anchor markers."""
    n = why_numbers(analysis)
    parts = {"facts": facts_table(analysis, n), "limit": limit_sentence(analysis),
             "noise": noise_sentence(results, analysis, n), "kinds": kinds_sentence(analysis, n),
             "then-and-now": then_and_now_sentence(analysis, n), "growth": growth_sentence(results, analysis, n),
             "java": java_sentence(analysis), "timing": timing_sentence(results, analysis, n),
             "defaults": defaults_sentence(analysis, n)}
    return "\n".join(f"<!-- ANCHOR: {name} -->\n{text.rstrip()}\n<!-- ANCHOR_END: {name} -->\n"
                     for name, text in parts.items())


def why_numbers(analysis: dict) -> dict:
    """The baseline's time per request and its run-to-run noise (costs below it are not resolved)."""
    base = analysis["tools"][BASELINE][analysis["reference_tool"]]
    return {"base": base, "base_us": 1e6 / base["median"], "noise_us": 1e6 / base["min"] - 1e6 / base["max"]}


def _has(analysis: dict, name: str) -> bool:
    return name in analysis["cost"] and analysis["cost"][name]["us"] is not None


def _csrf_share(analysis: dict) -> tuple[float, float]:
    d, n = analysis["cost"]["play-defaults"], analysis["cost"][NO_CSRF]
    return d["us"] - n["us"], d["cpu_cost_us"] - n["cpu_cost_us"]


def facts_table(analysis: dict, n: dict) -> str:
    """The numbers the argument uses, in one table."""
    cost, ref = analysis["cost"], analysis["reference_tool"]

    def measured(name, label):
        return [(f"{label} (`{name}`)", cost[name]["us"], cost[name]["cpu_cost_us"])] if _has(analysis, name) else []

    csrf = ([("the CSRF filter's share: the difference of those two", *_csrf_share(analysis))]
            if _has(analysis, "play-defaults") and _has(analysis, NO_CSRF) else [])
    rows = ([(f"a whole request with no filters (`{BASELINE}`): 1 s ÷ its median throughput", n["base_us"],
              n["base"]["cpu_us"]),
             (f"run-to-run spread of `{BASELINE}`: 1 s ÷ its slowest run − 1 s ÷ its fastest", n["noise_us"], None)]
            + [(f"one no-op {KIND_MD[kind]}: the fitted slope over chains of "
                f"{', '.join(str(k) for k in fit['lengths'])}", fit["slope_us"], fit["cpu_slope_us"])
               for kind, fit in analysis["per_filter"].items()]
            + measured("play-defaults", "Play's three default filters")
            + measured(NO_CSRF, "the defaults without the CSRF filter") + csrf
            + measured("logging-plain", "the timing filter as a `Filter`")
            + measured("logging-essential", "the timing filter as an `EssentialFilter`"))
    lines = [f"| from the committed run ({ref}) | µs per request | server CPU µs per request |", "|:---|---:|---:|"]
    lines += [f"| {label} | {us:.1f} | {'–' if cpu is None else f'{cpu:.1f}'} |" for label, us, cpu in rows]
    return "\n".join(lines) + "\n"


def limit_sentence(analysis: dict) -> str:
    """Which side set the pace on the baseline, and whether the two tools agree."""
    ref, base = analysis["reference_tool"], analysis["tools"][BASELINE]
    tools_ = {t: s for t, s in base.items() if s}
    reached = "; ".join(f"{t} reached {s['median']:,.0f} requests/s with the server's core "
                        f"{s['server_utilization']:.0%} busy and its own {s['load_utilization']:.0%} "
                        f"(limit: {limit_of(s)})" for t, s in tools_.items())
    text = f"On `{BASELINE}`, {reached}. "
    ab, wrk_ = tools_.get("ab"), tools_.get("wrk")
    if not (ab and wrk_ and limit_of(ab) == limit_of(wrk_) == "server CPU"):
        return text + f"The costs come from {ref}, {analysis['reference_reason']}."
    text += ("Both tools kept the server's core busy while using a fraction of their own: the server, not the "
             f"load generator, set the pace. The costs come from {ref}, {analysis['reference_reason']}. ")
    apart = abs(ab["median"] - wrk_["median"]) / max(ab["median"], wrk_["median"])
    if apart <= 0.03:
        return text + (f"The two tools reached nearly the same rate ({apart:.1%} apart), and the server spent about "
                       f"the same CPU time on a request from either: {ab['cpu_us']:.1f} µs from ab, "
                       f"{wrk_['cpu_us']:.1f} µs from wrk.")
    return text + (f"The two tools reached rates {apart:.0%} apart because a request cost the server different CPU "
                   f"time: {ab['cpu_us']:.1f} µs from ab and {wrk_['cpu_us']:.1f} µs from wrk (ab speaks HTTP/1.0 "
                   "with a keep-alive header and sends more headers; wrk speaks plain HTTP/1.1).")


def noise_sentence(results: dict, analysis: dict, n: dict) -> str:
    agreement = analysis["baseline_agreement"]
    last = results["variants"][-1]
    when = " at the end of the run" if last["name"] == BASELINE_AGAIN and not last.get("interleaved") else ""
    repeat = ("" if agreement is None else
              f"The baseline measured again{when} (`{BASELINE_AGAIN}`), {_where_again(results)}, came "
              f"out {agreement:.1%} away from the first measurement "
              f"({'within' if agreement <= BASELINE_AIM else 'outside'} the {BASELINE_AIM:.0%} the lab aims for), "
              "and t")
    return ((repeat or "T") + f"he baseline's own runs spanned {n['base']['min']:,.0f}–{n['base']['max']:,.0f} "
            f"requests/s: costs smaller than about {n['noise_us']:.1f} µs per request are within that noise.")


def _where_again(results: dict) -> str:
    if results["variants"][-1].get("interleaved"):
        return ("on the same server, as the last set-up of every round of runs (each round runs every set-up "
                "once, `none` first)")
    return ("on the same server, after every other set-up" if results.get("params", {}).get("mode") == DEFAULT
            else "on a fresh server")


def kinds_sentence(analysis: dict, n: dict) -> str:
    plain, essential = analysis["per_filter"].get("plain"), analysis["per_filter"].get("essential")
    if not (plain and essential):
        return "This run did not measure both kinds of no-op Scala filter."
    if plain["slope_us"] <= max(3 * essential["slope_us"], 0):
        return (f"**The two kinds cost about the same here**, against the prediction: {plain['slope_us']:.1f} µs "
                f"per `Filter` and {essential['slope_us']:.1f} µs per `EssentialFilter`.")
    text = (f"**A `Filter` costs far more than an `EssentialFilter`.** Each no-op Scala `Filter` added about "
            f"{plain['slope_us']:.1f} µs per request ({plain['cpu_slope_us']:.1f} µs of server CPU), each no-op "
            f"`EssentialFilter` about {essential['slope_us']:.1f} µs ({essential['cpu_slope_us']:.1f} µs of CPU). ")
    if abs(essential["slope_us"]) * max(essential["lengths"]) <= n["noise_us"]:
        return text + ("Even the longest `EssentialFilter` chain stays within the baseline's run-to-run spread: "
                       "its cost is too small for this machine to resolve, as predicted.")
    return text + f"The `Filter` costs about {plain['slope_us'] / essential['slope_us']:.0f} times as much."


def then_and_now_sentence(analysis: dict, n: dict) -> str:
    """The write-up's one no-op Scala `Filter` against the same set-up here, `plain-x1`; not the fitted
    slope, which averages over longer chains."""
    if not _has(analysis, "plain-x1"):
        return ("This run did not measure one no-op Scala `Filter` alone (`plain-x1`), the write-up's set-up, so "
                "it cannot be compared with it.")
    one = analysis["cost"]["plain-x1"]
    if one["us"] <= n["noise_us"]:
        scale = (f"within the baseline's run-to-run spread ({n['noise_us']:.1f} µs), too little for this run to "
                 "tell from zero")
    else:
        factor = one["us"] / WRITEUP_US
        scale = ("the same order of magnitude" if 1 / 3 <= factor <= 3 else
                 f"about {1 / factor:.0f} times less" if factor < 1 / 3 else f"about {factor:.0f} times more")
    text = (f"In the write-up, one no-op Scala `Filter` on Play 2.5 added about {WRITEUP_US:.0f} µs per request. "
            f"Here the same set-up (`plain-x1`) added {one['us']:.1f} µs ({one['cpu_cost_us']:.1f} µs of server "
            f"CPU): {scale}.")
    plain = analysis["per_filter"].get("plain")
    if plain and max(plain["lengths"]) > 1:
        text += (f" The fitted slope, {plain['slope_us']:.1f} µs per `Filter`, answers another question: what a "
                 f"`Filter` costs on average in chains of {_listed(plain['lengths'])} filters.")
    return text


def _listed(items) -> str:
    """1, 3 and 10"""
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def growth_sentence(results: dict, analysis: dict, n: dict) -> str:
    cost, plain = analysis["cost"], analysis["per_filter"].get("plain")
    lengths = [k for k in (plain["lengths"] if plain else []) if _has(analysis, f"plain-x{k}")]
    if len(lengths) < 2:
        return "This run measured fewer than two `Filter` chain lengths, so it cannot show how the cost grows."
    longest = max(lengths)
    per_filter = {k: cost[f"plain-x{k}"]["us"] / k for k in lengths}
    resolved = [k for k in lengths if cost[f"plain-x{k}"]["us"] > n["noise_us"]]
    listed = ", ".join(f"{per_filter[k]:.1f} µs with {k}" + ("" if k in resolved else " (within the noise)")
                       for k in lengths)
    text = (f"{longest} `Filter`s added {cost[f'plain-x{longest}']['us']:.1f} µs per request. "
            f"Per filter that is {listed}. ")
    if len(resolved) < 2:
        text += ("Only the longest chain stands out of the baseline's run-to-run spread, so the slope fitted over "
                 "all lengths is the best estimate of one filter's cost; whether the growth is exactly linear "
                 "needs more chain lengths.")
    else:
        short, long_ = per_filter[min(resolved)], per_filter[max(resolved)]
        ratio = long_ / short if short > 0 else None
        if ratio is not None and ratio > 1.5:
            text += (f"Each filter cost more the longer the chain ({ratio:.1f} times as much per filter with "
                     f"{max(resolved)} as with {min(resolved)}): the growth is more than linear, against the "
                     "prediction, so the fitted slope is an average over these lengths, not the price of one filter.")
        elif ratio is not None and ratio < 1 / 1.5:
            text += "The first filters cost more than the later ones: the growth is less than linear."
        else:
            text += "Close to linear, as predicted: the fitted slope is the price of one filter."
    return text + waiting_sentence(results, analysis, longest)


def waiting_sentence(results: dict, analysis: dict, longest: int) -> str:
    """Only when the server's core sat idle notably more with the longest chain than with none."""
    ref, tools_ = analysis["reference_tool"], analysis["tools"]
    idle_base = tools_[BASELINE][ref]["server_cores_idle"]
    longest_run = tools_.get(f"plain-x{longest}", {}).get(ref)
    if not longest_run or longest_run["server_cores_idle"] < idle_base + 0.10:
        return ""
    return (f"\n\n**Part of a `Filter`'s cost is waiting, not computing.** During `plain-x{longest}` the server's "
            f"core sat idle {longest_run['server_cores_idle']:.0%} of the time (against {idle_base:.0%} with no "
            f"filters), although {results['variants'][0]['concurrency']} requests were always in flight: the "
            "requests were waiting for their callbacks to be picked up by a dispatcher thread. That is why the "
            "throughput cost is larger than the CPU cost.")


def java_sentence(analysis: dict) -> str:
    fits = analysis["per_filter"]
    java_plain, java_essential, plain = fits.get("java-plain"), fits.get("java-essential"), fits.get("plain")
    if not (java_plain and plain):
        return "This run did not measure both the Java and the Scala `Filter`."
    essential_part = (f" A Java `EssentialFilter` cost about {java_essential['slope_us']:.1f} µs per request "
                      f"({java_essential['cpu_slope_us']:.1f} µs of CPU)." if java_essential else "")
    if java_plain["slope_us"] > 2 * plain["slope_us"]:
        return (f"**The Java `Filter` is the expensive one.** Each no-op Java `Filter` cost about "
                f"{java_plain['slope_us']:.0f} µs per request ({java_plain['cpu_slope_us']:.0f} µs of server CPU), "
                f"{java_plain['slope_us'] / plain['slope_us']:.0f} times the Scala `Filter`.{essential_part}")
    compare = ("more than" if java_plain["slope_us"] > 1.15 * plain["slope_us"] else
               "less than" if java_plain["slope_us"] < 0.85 * plain["slope_us"] else "about as much as")
    return (f"**Java follows Scala.** A no-op Java `Filter` cost about {java_plain['slope_us']:.1f} µs per request, "
            f"{compare} the Scala one.{essential_part}")


def timing_sentence(results: dict, analysis: dict, n: dict) -> str:
    if not (_has(analysis, "logging-plain") and _has(analysis, "logging-essential")):
        return "This run did not measure both forms of the timing filter."
    log = results.get("settings", {}).get("lab.access-log", "")
    logged = (f"This run turned the log line on (`lab.access-log={log}`), so these costs include it. "
              if log.upper() in ("DEBUG", "TRACE", "ALL") else "")
    lp, le = analysis["cost"]["logging-plain"]["us"], analysis["cost"]["logging-essential"]["us"]
    if abs(lp - le) <= n["noise_us"]:
        return logged + (f"**The two forms were too close to tell apart here**: {lp:.1f} µs per request as a "
                         f"`Filter`, {le:.1f} µs as an `EssentialFilter`, a difference within the baseline's "
                         "run-to-run spread. With one filter in the chain, the adapter is cheap."
                         + _timing_over_noop(analysis, n))
    return logged + (f"The timing filter cost {lp:.1f} µs per request as a `Filter` and {le:.1f} µs as an "
                     "`EssentialFilter`." + _timing_over_noop(analysis, n))


def _timing_over_noop(analysis: dict, n: dict) -> str:
    """What the timing filter's own work adds to a no-op filter of the same kind, each alone in its chain."""
    parts = []
    for timing, noop, kind in (("logging-plain", "plain-x1", "a `Filter`"),
                               ("logging-essential", "essential-x1", "an `EssentialFilter`")):
        if _has(analysis, timing) and _has(analysis, noop):
            us = analysis["cost"][timing]["us"] - analysis["cost"][noop]["us"]
            cpu = analysis["cost"][timing]["cpu_cost_us"] - analysis["cost"][noop]["cpu_cost_us"]
            noise = " — within the noise" if abs(us) <= n["noise_us"] else ""
            parts.append(f"{us:+.1f} µs ({cpu:+.1f} µs of CPU) as {kind}, against `{noop}`{noise}")
    if not parts:
        return ""
    return (" Against a no-op filter of the same kind alone in its chain, the timing filter's own work came to "
            + "; and ".join(parts) + ".")


def defaults_sentence(analysis: dict, n: dict) -> str:
    if not _has(analysis, "play-defaults"):
        return "This run did not measure Play's default filters."
    d = analysis["cost"]["play-defaults"]
    text = (f"Together the three added {d['us']:.1f} µs per request ({d['cpu_cost_us']:.1f} µs of server CPU): "
            f"{d['us'] / n['base_us']:.0%} on top of the {n['base_us']:.1f} µs a request with no filters takes"
            + (" — more than the few microseconds the prediction expected." if d["us"] > 10 else "."))
    if not _has(analysis, NO_CSRF):
        return text
    no_csrf = analysis["cost"][NO_CSRF]
    csrf_us, csrf_cpu = _csrf_share(analysis)
    small = " — within this run's noise, so read it as \"small\"." if abs(csrf_us) <= n["noise_us"] else "."
    return text + (f" Without the CSRF filter, the other two added {no_csrf['us']:.1f} µs "
                   f"({no_csrf['cpu_cost_us']:.1f} µs of CPU), so the CSRF filter's share was about {csrf_us:.1f} µs "
                   f"({csrf_cpu:.1f} µs of CPU){small}")


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


def threads_sentence(results: dict) -> str:
    """The JVM's threads over each Java Filter set-up's first run in the main run (its timeline),
    against the baseline's: a thread started per request shows as a rising count."""
    def most(name: str) -> int | None:
        v = next((v for v in results["variants"] if v["name"] == name), None)
        counts = [c for c in ((v or {}).get("timeline") or {}).get("jvm_threads", []) if c is not None]
        return max(counts) if counts else None
    found = {name: most(name) for name in ("none", "java-plain-x1", "java-plain-x10", "java-essential-x10")}
    if None in found.values():
        return "The main run has no timeline of the JVM's threads for these set-ups."
    return (f"In the main run, the JVM had at most {found['none']} threads during the first run without filters and "
            f"{found['java-essential-x10']} with ten Java `EssentialFilter`s, but {found['java-plain-x1']} with one "
            f"Java `Filter` and {found['java-plain-x10']} with ten: threads started for requests and not yet ended.")
