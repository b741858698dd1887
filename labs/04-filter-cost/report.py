"""Lab 04's analysis of a results file (costs, which tool was the limit), its book artifacts and
summary lines."""

from __future__ import annotations

import statistics

from pul import report
from pul.results import _fmt, machine_line, markdown_table

from .driver import (BASELINE, BASELINE_AGAIN, KINDS, LOAD_SATURATED, NO_CSRF, SERVER_SATURATED,
                     WARMUP_JIT_QUIET, WARMUP_SETTLED)


def summary_notes(results: dict) -> list[str]:
    analysis = analyse(results)
    notes = [f"Load tools: {analysis['verdict']}"]
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
                     f"({'within' if analysis['baseline_agreement'] <= 0.10 else 'NOT within'} 10%).")
    for kind, fit in analysis["per_filter"].items():
        notes.append(f"{LABELS[kind]}: about {fit['slope_us']:.1f} µs per filter per request from throughput, "
                     f"{fit['cpu_slope_us']:.1f} µs from server CPU time (least-squares slope over chain "
                     f"lengths {', '.join(str(n) for n in fit['lengths'])}).")
    return notes

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
        ("server CPU µs/req", lambda v: _fmt(analysis["cost"][v["name"]]["cpu_us"], 1), True),
        ("cost µs/req vs none", lambda v: cost(v, "us"), True),
        ("CPU cost µs/req vs none", lambda v: cost(v, "cpu_cost_us"), True),
        ("failed", lambda v: _fmt(sum(r["failed"] + r["non_2xx"] for r in v["extra"]["runs"])), True),
    ]

def render(results: dict, lab) -> dict[str, str]:
    analysis = analyse(results)
    table = markdown_table(results, table_columns(results)) + "\n" + machine_line(results) + "\n"
    summary = "\n".join(f"- {note}" for note in summary_notes(results)) + "\n"
    return {
        "book/src/generated/lab04-table.md": table,
        "book/src/generated/lab04-summary.md": summary,
        "book/src/generated/lab04-tools.md": tools_table(results, analysis),
        "book/src/generated/lab04-why.md": why_text(results, analysis),
        "book/src/figures/lab04-throughput.svg": throughput_figure(results, analysis),
        "book/src/figures/lab04-cost.svg": cost_figure(results, analysis),
    }


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


def analyse(results: dict) -> dict:
    """Per variant and tool: median and spread; which tool saturated what; cost vs the baseline."""
    tools_ = {v["name"]: {tool: _summary([r for r in v["extra"].get("runs", []) if r["tool"] == tool])
                          for tool in ("ab", "wrk")}
              for v in results["variants"]}
    # The reference tool is the one that loaded the server hardest on the baseline: with the server
    # saturated, 1 / throughput is the server's time per request, so differences are costs.
    base = tools_.get(BASELINE) or next(iter(tools_.values()))
    available = [t for t in ("wrk", "ab") if base.get(t)]
    ref = max(available, key=lambda t: base[t]["median"])
    verdict_parts = []
    for tool in available:
        s = base[tool]
        limit = "limit: " + limit_of(s)
        verdict_parts.append(f"{tool} {s['median']:,.0f} req/s on '{BASELINE}' (server CPU "
                             f"{s['server_utilization']:.0%}, {tool} CPU {s['load_utilization']:.0%}: {limit})")
    verdict = "; ".join(verdict_parts) + f". Costs are computed from {ref}."
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
    return {"tools": tools_, "reference_tool": ref, "verdict": verdict, "cost": cost,
            "baseline_rate": base_ref["median"], "baseline_again_rate": again["median"] if again else None,
            "baseline_agreement": agreement, "per_filter": per_filter}


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


def why_text(results: dict, analysis: dict) -> str:
    """The chapter's "Why" section, as sentences computed from the results (no typed numbers)."""
    cost, fits, tools_ = analysis["cost"], analysis["per_filter"], analysis["tools"]
    ref = analysis["reference_tool"]
    base = tools_[BASELINE][ref]
    base_us = 1e6 / base["median"]
    # Run-to-run noise of the baseline, as time per request: costs smaller than this are not resolved.
    noise_us = 1e6 / base["min"] - 1e6 / base["max"]
    out = []

    def has(name):
        return name in cost and cost[name]["us"] is not None

    plain, essential = fits.get("plain"), fits.get("essential")
    if plain and essential:
        text = (f"**A `Filter` costs far more than an `EssentialFilter`.** Fitted over the chain lengths, each "
                f"no-op Scala `Filter` added about {plain['slope_us']:.1f} µs per request "
                f"({plain['cpu_slope_us']:.1f} µs of server CPU), each no-op `EssentialFilter` about "
                f"{essential['slope_us']:.1f} µs ({essential['cpu_slope_us']:.1f} µs of CPU). ")
        if plain["slope_us"] <= max(3 * essential["slope_us"], 0):
            text = ("**The two kinds cost about the same here**, against the prediction: "
                    f"{plain['slope_us']:.1f} µs per `Filter` and {essential['slope_us']:.1f} µs per "
                    "`EssentialFilter`. ")
        elif abs(essential["slope_us"]) * max(essential["lengths"]) <= noise_us:
            text += (f"Even the longest `EssentialFilter` chain stays within the baseline's own run-to-run spread "
                     f"({noise_us:.1f} µs per request): its cost is too small for this machine to resolve, "
                     "as predicted. The `Filter`'s cost is the adapter: two promises, a flattened accumulator "
                     "and several callbacks on the default dispatcher, per filter, per request.")
        else:
            text += (f"The `Filter` costs about {plain['slope_us'] / essential['slope_us']:.0f} times as much: "
                     "the difference is the adapter's two promises, flattened accumulator and callbacks.")
        out.append(text)
    longest = max(plain["lengths"]) if plain else None
    lengths = [n for n in (plain["lengths"] if plain else []) if has(f"plain-x{n}")]
    if len(lengths) >= 2:
        per_filter = {n: cost[f"plain-x{n}"]["us"] / n for n in lengths}
        listed = ", ".join(f"{per_filter[n]:.1f} µs with {n}" + (" (within the noise)"
                                                                 if cost[f"plain-x{n}"]["us"] <= noise_us else "")
                           for n in lengths)
        # The shape, from the chains whose cost the machine resolves.
        resolved = [n for n in lengths if cost[f"plain-x{n}"]["us"] > noise_us]
        text = (f"**The cost grows with the chain.** {longest} `Filter`s added "
                f"{cost[f'plain-x{longest}']['us']:.1f} µs per request. Per filter that is {listed}. ")
        if len(resolved) >= 2:
            short, long_ = per_filter[min(resolved)], per_filter[max(resolved)]
            ratio = long_ / short if short > 0 else None
            if ratio is not None and ratio > 1.5:
                text += (f"Each filter costs more the longer the chain ({ratio:.1f} times as much per filter with "
                         f"{max(resolved)} as with {min(resolved)}): the growth is more than linear, against the "
                         "prediction, so the fitted slope is an average over these lengths, not the price of "
                         "one filter (exercise 1 maps the curve).")
            elif ratio is not None and ratio < 1 / 1.5:
                text += ("The first filters cost more than the later ones: the growth is less than linear "
                         "(exercise 1 maps the curve).")
            else:
                text += "Close to linear, as predicted: the fitted slope is the price of one filter."
        else:
            text += ("Only the longest chain stands out of the baseline's run-to-run spread, so the slope fitted "
                     "over all lengths is the best estimate of one filter's cost; whether the growth is exactly "
                     "linear needs more chain lengths (exercise 1).")
        out.append(text)
    idle_base = tools_[BASELINE][ref]["server_cores_idle"]
    if longest and f"plain-x{longest}" in tools_ and tools_[f"plain-x{longest}"].get(ref):
        idle = tools_[f"plain-x{longest}"][ref]["server_cores_idle"]
        if idle >= idle_base + 0.10:
            out.append(f"**Part of a `Filter`'s cost is waiting, not computing.** During `plain-x{longest}` the "
                       f"server's core sat idle {idle:.0%} of the time (against {idle_base:.0%} with no filters), "
                       f"although {results['variants'][0]['concurrency']} requests were always in flight: "
                       "the requests were waiting for their callbacks to be picked up by a dispatcher thread. "
                       "That is why the throughput cost is larger than the CPU cost.")
    java_plain, java_essential = fits.get("java-plain"), fits.get("java-essential")
    if java_plain and plain:
        essential_part = (f" A Java `EssentialFilter` cost about {java_essential['slope_us']:.1f} µs per request "
                          f"({java_essential['cpu_slope_us']:.1f} µs of CPU)." if java_essential else "")
        if java_plain["slope_us"] > 2 * plain["slope_us"]:
            out.append(
                f"**The Java `Filter` is the expensive one.** Each no-op Java `Filter` cost about "
                f"{java_plain['slope_us']:.0f} µs per request ({java_plain['cpu_slope_us']:.0f} µs of server CPU), "
                f"{java_plain['slope_us'] / plain['slope_us']:.0f} times the Scala `Filter`.{essential_part} "
                "The reason is visible in Play's source: a Java `Filter` is run by turning it into a Scala "
                "`Filter` and the result back into a Java action (`asScala().apply(next).asJava()`). The "
                "round trip keeps only the *sink* of the adapter's flattened accumulator, not its shortcut for "
                "requests without a body, so Play runs each filter's accumulator by materialising an Akka "
                "stream — per filter, per request. This is the \"materialises the body accumulator\" of the "
                "report in Play's tracker.")
        else:
            compare = ("more than" if java_plain["slope_us"] > 1.15 * plain["slope_us"] else
                       "less than" if java_plain["slope_us"] < 0.85 * plain["slope_us"] else "about as much as")
            out.append(f"**Java follows Scala.** A no-op Java `Filter` cost about {java_plain['slope_us']:.1f} µs "
                       f"per request, {compare} the Scala one.{essential_part}")
    if has("logging-plain") and has("logging-essential"):
        lp, le = cost["logging-plain"]["us"], cost["logging-essential"]["us"]
        if abs(lp - le) <= noise_us:
            out.append(f"**The timing filter's two forms were too close to tell apart here**: {lp:.1f} µs per "
                       f"request as a `Filter`, {le:.1f} µs as an `EssentialFilter`, a difference within the "
                       f"baseline's run-to-run spread ({noise_us:.1f} µs). Both versions map the result once "
                       "with the injected execution context, Play's default dispatcher; only the `Filter` adds "
                       "the adapter, and with one filter in the chain the adapter is cheap (exercise 3).")
        else:
            out.append(f"**The timing filter** cost {lp:.1f} µs per request as a `Filter` and {le:.1f} µs as an "
                       "`EssentialFilter`. Both map the result once on the default dispatcher; only the `Filter` "
                       "pays the adapter on top.")
    if has("play-defaults"):
        d = cost["play-defaults"]
        text = (f"**Play's three default filters** together added {d['us']:.1f} µs per request "
                f"({d['cpu_cost_us']:.1f} µs of server CPU): {d['us'] / base_us:.0%} on top of the "
                f"{base_us:.0f} µs a request with no filters takes. They are `EssentialFilter`s, so this is "
                "the work they do, not an adapter"
                + (" — more than the few microseconds the prediction expected." if d["us"] > 10 else "."))
        if has(NO_CSRF):
            n = cost[NO_CSRF]
            csrf_us, csrf_cpu = d["us"] - n["us"], d["cpu_cost_us"] - n["cpu_cost_us"]
            text += (f" Without the CSRF filter, the other two (security headers, allowed hosts) added "
                     f"{n['us']:.1f} µs ({n['cpu_cost_us']:.1f} µs of CPU), so the CSRF filter's share was "
                     f"about {csrf_us:.1f} µs ({csrf_cpu:.1f} µs of CPU)")
            text += (" — within this run's noise, so read it as \"small\"." if abs(csrf_us) <= noise_us else
                     ". On a `GET` whose `Accept` header admits HTML (ab sends `*/*`; wrk sends none, which "
                     "counts as accepting anything) the CSRF filter checks nothing, but it prepares a new token "
                     "for the request in case the page renders a form, and maps the result to add it.")
        out.append(text)
    if plain:
        slope = plain["slope_us"]
        factor = slope / 8.0
        scale = ("the same order of magnitude" if 1 / 3 <= factor <= 3 else
                 f"about {1 / factor:.0f} times less" if 0 < factor < 1 / 3 else
                 f"about {factor:.0f} times more" if factor > 3 else "too little to resolve here")
        out.append(f"**Compared with the 2016 write-up**: there, one no-op filter added about 8 µs per request "
                   f"(from its 60,328 and 40,668 requests/s); here a Scala `Filter` added about {slope:.1f} µs "
                   f"(the fitted slope) on one core of a different machine and a later Play: {scale}. The "
                   "lesson has not changed: every filter is paid for on every request.")
    if analysis["baseline_agreement"] is not None:
        agreement = analysis["baseline_agreement"]
        out.append(f"**How repeatable is this?** The baseline measured again at the end of the run, on a fresh "
                   f"server, came out {agreement:.1%} away from the first measurement "
                   f"({'within' if agreement <= 0.10 else 'outside'} the 10% the lab aims for), and the "
                   f"baseline's own runs spanned {base['min']:,.0f}–{base['max']:,.0f} requests/s. Costs smaller "
                   f"than about {noise_us:.0f} µs per request are within that noise.")
    text = f"**Which side was the limit?** {analysis['verdict']}"
    ab, wrk_ = tools_[BASELINE].get("ab"), tools_[BASELINE].get("wrk")
    if ab and wrk_ and limit_of(ab) == limit_of(wrk_) == "server CPU":
        text += (" Both tools kept the server's core busy while using a fraction of their own, so the "
                 "server, not the load generator, set the pace.")
        apart = abs(ab["median"] - wrk_["median"]) / max(ab["median"], wrk_["median"])
        if apart <= 0.03:
            text += (f" So they reached nearly the same rate ({apart:.1%} apart), and the server spent about "
                     f"the same CPU time on a request from either: {ab['cpu_us']:.1f} µs from ab, "
                     f"{wrk_['cpu_us']:.1f} µs from wrk.")
        else:
            text += (f" They still reach rates {apart:.0%} apart because a request costs the server different "
                     f"CPU time: {ab['cpu_us']:.1f} µs from ab and {wrk_['cpu_us']:.1f} µs from wrk on "
                     f"`{BASELINE}` (ab speaks HTTP/1.0 with a keep-alive header and sends more headers; wrk "
                     "speaks plain HTTP/1.1).")
        text += " The costs here are differences measured with one tool, so any such offset cancels out."
    out.append(text)
    return "\n\n".join(out) + "\n"


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
