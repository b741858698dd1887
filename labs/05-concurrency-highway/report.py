"""Lab 05's analysis of a results file (Little's law at every step, the echo's bounds), its book
artifacts and summary lines."""

from __future__ import annotations

import math
import re
import statistics

from pul import glance, model, report
from pul.claims import key as claims_key
from pul.results import machine_line, predicted_cell

from .driver import (FIXED_LADDER_FACTOR, LITTLE_TOLERANCE, closed_loop, erlang_c, fixed_road, ladder, past_capacity,
                     wait_mdc, wait_mmc)


def little_check(v: dict) -> dict:
    """Little's law for one closed-loop step: in flight = throughput x mean time in the system.

    mean_ms is integrated from ab's 101 percentiles (trapezoids). The quantile function is
    monotone, so the true mean lies within mean +- (max - min) / 200 -- the left and right
    Riemann sums. With min >= 0 that gives the bounds used here. ab's "Time per request" is
    NOT used: ab computes it as c * duration / complete, i.e. from Little's law itself.
    """
    x = v["requests_per_sec"]
    half_width = v["max_ms"] / 200
    low, high = max(0.0, v["mean_ms"] - half_width), v["mean_ms"] + half_width
    in_flight = x * v["mean_ms"] / 1000
    c = v["concurrency"]
    holds = x * low / 1000 * (1 - LITTLE_TOLERANCE) <= c <= x * high / 1000 * (1 + LITTLE_TOLERANCE)
    return {"in_flight": in_flight, "ratio": in_flight / c, "holds": holds,
            "low": x * low / 1000, "high": x * high / 1000}


def sweep(results: dict, prefix: str) -> list[dict]:
    """The closed-loop steps of one sweep, by concurrency."""
    chosen = [v for v in results["variants"]
              if (v["name"].startswith(prefix) if prefix else v["name"].startswith("c="))]
    return sorted(chosen, key=lambda v: v["concurrency"])


def arrivals(v: dict) -> str:
    """How an open-loop step's requests arrived; runs from before --arrivals were evenly spaced."""
    return v["extra"].get("arrivals", "even")


def open_steps(results: dict) -> list[dict]:
    """The open-loop steps by offered rate, random (Poisson) arrivals before evenly spaced ones."""
    return sorted((v for v in results["variants"] if v["name"].startswith("open-")),
                  key=lambda v: (v["extra"]["offered_rate"], arrivals(v) != "poisson"))


def predicted_mean(v: dict) -> str:
    """The queueing model's mean latency for an open-loop step; past capacity it only holds for
    this run's length, since the wait grows for as long as requests keep coming."""
    ms = v["extra"].get("predicted_mean_ms")
    if ms is None:
        return "–"
    return f"{ms:,.0f} (grows)" if v["extra"].get("wait_grows") else f"{ms:,.1f}"


def echo_model(results: dict) -> dict | None:
    """The echo's bounds: an empty road, then a full one.

    Nothing tells us the echo's capacity in advance (CPU work whose cost per request depends on
    the machine and the JIT), so this model takes two measured numbers: W1, the time one
    request takes alone (the c=1 mean; r1_ms), and the plateau, the best throughput of the
    sweep. Then throughput <= min(c / W1, plateau), latency >= max(W1, c / plateau), and the
    knee is where the lines meet: c* = plateau x W1. The fixed-service endpoint is the one whose
    capacity is predicted before any request is sent.
    """
    steps = sweep(results, "")
    if not steps or steps[0]["concurrency"] != 1:
        return None
    r1_ms = steps[0]["mean_ms"]
    best = max(steps, key=lambda v: v["requests_per_sec"])
    return {"r1_ms": r1_ms, "capacity": best["requests_per_sec"], "best_c": best["concurrency"],
            "knee": best["requests_per_sec"] * r1_ms / 1000}


def knee_arithmetic(model: dict) -> tuple[float, float, float]:
    """c* = plateau x W1 as the book shows it: W1 to a thousandth of a millisecond, the plateau to
    a whole request a second, and c* worked from those two as shown, so that its last digit follows
    from the numbers beside it (not from unrounded ones the reader cannot see)."""
    r1_ms, capacity = float(f"{model['r1_ms']:.3f}"), float(f"{model['capacity']:.0f}")
    return r1_ms, capacity, capacity * r1_ms / 1000


def fixed_model(results: dict) -> dict:
    """The fixed road as the server reported it (/pools): its lanes, service time, capacity, knee."""
    return fixed_road(results["pools"]["pools"]["lanes"]["threads"], results["pools"]["work_ms"])


def measured_knee(steps: list[dict]) -> dict | None:
    """The smallest concurrency already at 90 % of the best throughput of the sweep."""
    if not steps:
        return None
    best = max(v["requests_per_sec"] for v in steps)
    for v in steps:
        if v["requests_per_sec"] >= 0.9 * best:
            return v
    return None


def summary_notes(results: dict) -> list[str]:
    notes = []
    for prefix, label in (("", "echo"), ("fixed-", "fixed-service")):
        steps = sweep(results, prefix)
        if not steps:
            continue
        broken = [v for v in steps if not little_check(v)["holds"]]
        failing = [v["name"] for v in broken if v["failed"] or v["non_2xx"]]
        clean = [v["name"] for v in broken if not (v["failed"] or v["non_2xx"])]
        why = []
        if failing:
            why.append(f"at {', '.join(failing)} requests failed: connections held a place in flight "
                       "without a latency being timed for them")
        if clean:
            why.append(f"at {', '.join(clean)} nothing failed, so the load generator, not the server, "
                       "set the pace")
        notes.append(f"Little's law (c = throughput x mean latency, within the mean's bounds "
                     f"+-{LITTLE_TOLERANCE:.0%}), {label} sweep: "
                     + ("holds at every step." if not broken else
                        f"holds at every step except {', '.join(v['name'] for v in broken)}; "
                        + "; ".join(why) + "."))
        knee = measured_knee(steps)
        best = max(steps, key=lambda v: v["requests_per_sec"])
        last = steps[-1]
        notes.append(f"{label}: throughput reaches 90% of its best ({best['requests_per_sec']:,.0f} req/s "
                     f"at c={best['concurrency']}) at c={knee['concurrency']}; at c={last['concurrency']} "
                     f"it is {last['requests_per_sec']:,.0f} req/s with a mean latency of "
                     f"{last['mean_ms']:,.1f} ms ({last['mean_ms'] / steps[0]['mean_ms']:,.0f}x that at "
                     f"c={steps[0]['concurrency']}).")
    failures = [v for v in results["variants"] if v["failed"] or v["non_2xx"]]
    notes.append("No failed or non-2xx requests." if not failures else
                 "Failures: " + "; ".join(f"{v['name']}: {v['failed']} failed, {v['non_2xx']} non-2xx"
                                          + (f" ({', '.join(v['errors'])})" if v["errors"] else "")
                                          for v in failures))
    model = echo_model(results)
    if model:
        r1_ms, capacity, knee = knee_arithmetic(model)
        notes.append(f"echo bounds: W1 = {r1_ms:.3f} ms alone (c=1), plateau {capacity:,.0f} "
                     f"req/s (c={model['best_c']}) -> knee at c* = plateau x W1 = {knee:.1f}.")
    for v in open_steps(results):
        model = v["extra"].get("queue_model")
        notes.append(f"open loop, {arrivals(v)} arrivals at {v['extra']['offered_rate']} req/s "
                     f"({v['extra']['fraction_of_capacity']:.0%} of capacity): served "
                     f"{v['requests_per_sec']:,.0f} req/s, mean {v['mean_ms']:,.1f} ms"
                     + (f" (predicted {predicted_mean(v)} ms, {model})" if model else "")
                     + f", p99 {v['p99_ms']:,.1f} ms.")
    notes += [note for note in map(report.band_note, results["variants"]) if note]
    return notes


def render(results: dict, lab) -> dict[str, str]:
    machine = machine_line(results) + "\n"
    return {
        "book/src/generated/lab05-bounds.md": report.bounds_markdown(
            results, [v["name"] for v in results["variants"] if v["extra"].get("sweep") != "open"]),
        "book/src/generated/lab05-echo-table.md": closed_table(sweep(results, "")) + "\n" + machine,
        "book/src/generated/lab05-fixed-table.md": closed_table(sweep(results, "fixed-")) + "\n" + machine,
        "book/src/generated/lab05-open-table.md": open_table(results) + "\n" + machine,
        "book/src/generated/lab05-summary.md": "\n".join(f"- {n}" for n in summary_notes(results)) + "\n",
        "book/src/generated/lab05-model.md": model_sentences(results),
        "book/src/generated/lab05-erlang-c.md": erlang_c_text(results),
        "book/src/generated/lab05-prediction.md": prediction_text(results),
        "book/src/generated/lab05-past-capacity.md": past_capacity_text(results),
        "book/src/generated/lab05-cpu-per-request.md": cpu_per_request_table(sweep(results, ""))
        + "\n" + cpu_trend(sweep(results, "")) + "\n",
        "book/src/figures/lab05-throughput.svg": throughput_figure(results),
        "book/src/figures/lab05-latency.svg": latency_figure(results),
        "book/src/figures/lab05-timeline.svg": timeline_figure(results),
        "book/src/generated/lab05-edges.md": edges_text(report.committed_run(lab, EDGES_DIR)),
        **profile_outputs(lab, results),
    }


# -- where the echo's CPU goes (the committed --profile run) -----------------------------

# One request at a time, and the ladder's plateau, where the core is the bound; the chapter's
# flame graph is the plateau's.
PROFILED = ["c=1", "c=64"]
FLAME_GRAPH = "c=64"
PROFILE_COLUMNS = [
    ("Akka HTTP (akka/http)", lambda f: f.startswith("akka/http/")),
    ("Akka's TCP I/O (akka/io)", lambda f: f.startswith("akka/io/")),
    ("Play (play/)", lambda f: f.startswith("play/")),
    ("Play's body parser", lambda f: f.startswith("play/api/mvc/") and "BodyParser" in f),
    ("JSON (Play JSON, Jackson)", lambda f: f.startswith(("play/api/libs/json/", "com/fasterxml/jackson/"))),
    ("the echo action (controllers/Echo)", lambda f: f.startswith("controllers/Echo")),
]


# The facts' names of PROFILE_COLUMNS' shares, in the same order (profile_NAME_STEP).
PROFILE_COLUMN_FACTS = ["akka_http", "akka_io", "play", "body_parser", "json", "echo"]


def profile_facts(lab) -> dict:
    """What the chapter reads of the committed --profile run's table, per PROFILED step: each
    column's share of its samples (profile_akka_http_c_64, ...). Empty without a profiled run."""
    found = {}
    for _, shares in report.profile_column_facts(lab, PROFILED, PROFILE_COLUMN_FACTS, PROFILE_COLUMNS).values():
        found.update(shares)
    return found


def profile_outputs(lab, main: dict) -> dict[str, str]:
    """The flame graph and the table of the committed --profile run (results/profile)."""
    run = report.profiled_run(lab)
    if run is None:
        return {}
    return {
        "book/src/generated/lab05-profile.md": report.profile_markdown(lab, run, PROFILED, PROFILE_COLUMNS, main),
        **report.flame_figures(lab, run, {"book/src/figures/lab05-flame.svg": FLAME_GRAPH}),
    }


# -- past 1,024: the run that meets the accept backlog ------------------------------

# The run the chapter's "Past 1,024" reads (`scripts/lab run 05 --max-concurrency 10000 --variant
# c=8 --variant c=4096 --variant c=8192 --variant c=10000 --results-dir
# labs/05-concurrency-highway/results/edges`): c=8 warms the server up, as in the default run.
EDGES_DIR = "edges"


def edges_text(results: dict | None) -> str:
    """Per echo step that watched the listen queue: the queue's limit and fullest sample, the
    handshakes the kernel dropped (ListenOverflows), and what ab saw (its failed requests and its
    non-2xx responses, apart as measuring.md defines them; p99, max)."""
    if results is None:
        return ("No run past c = 1,024 is committed next to the default one, so this table is empty. "
                "Make it with the command above and `scripts/lab report`.\n")
    steps = [v for v in sweep(results, "") if v.get("listen_queue")]
    if not steps:
        return "The committed run past c = 1,024 has no step that watched the listen queue.\n"
    rows = ["| c | accept queue limit (Send-Q) | fullest (Recv-Q) | samples at the limit "
            "| handshakes dropped (ListenOverflows) | failed | non-2xx | p99 ms | max ms | req/s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v in steps:
        q = v["listen_queue"]
        full = q.get("full_share")
        rows.append(f"| {v['concurrency']:,} | {_n(q.get('accept_queue_limit'))} | {_n(q.get('accept_queue_max'))} "
                    f"| {'–' if full is None else f'{full:.0%}'} | {_n(q.get('listen_overflows'))} "
                    f"| {v['failed']:,} | {v['non_2xx']:,} | {_f(v['p99_ms'], 0)} | {_f(v['max_ms'], 0)} "
                    f"| {v['requests_per_sec']:,.0f} |")
    return "\n".join(rows) + "\n\n" + machine_line(results) + "\n"


def kernel_version(results: dict) -> dict:
    """The Linux kernel a run ran on, from its machine record ("... (kernel 6.18.44-...)"), as
    {"kernel_major": 6, "kernel_minor": 18}; empty where the record names none."""
    found = re.search(r"\(kernel (\d+)\.(\d+)", (results.get("machine") or {}).get("os") or "")
    return {"kernel_major": int(found.group(1)), "kernel_minor": int(found.group(2))} if found else {}


def facts(results: dict, lab) -> dict:
    """What the chapter's claims read beyond the default run's records (pul.claims: lab05.facts.NAME):
    the kernel the default run ran on (kernel_major, kernel_minor); what the closed-loop sweeps came
    to (sweep_facts), the steps' pools over their timelines (timeline_facts) and the shares of the
    committed --profile run (profile_facts); with open-loop steps, the timeout they ran with
    (openload_timeout_s: scripts/openload's own, which the lab leaves as it is); each step of the
    committed run past c = 1,024 (results/edges) that watched the listen queue, as edges_FIELD_STEP
    (edges_p99_ms_c_8192, ...): ab's p99, max, failed and non-2xx, the handshakes the kernel dropped
    (ListenOverflows), the share of samples at the queue's limit, that limit (the backlog in effect);
    and that run's step length (edges_step_seconds), top step (edges_max_concurrency) and kernel
    (edges_kernel_major, edges_kernel_minor). None of the edges_ facts for a lab without that run,
    and none of the profile's without `lab`."""
    values = {**kernel_version(results), **sweep_facts(results), **timeline_facts(results),
              **(profile_facts(lab) if lab is not None else {})}
    if open_steps(results):
        values["openload_timeout_s"] = openload_default("timeout")
    edges = report.committed_run(lab, EDGES_DIR) if lab is not None else None
    if edges is None:
        return values
    values.update({f"edges_{name}": number for name, number in kernel_version(edges).items()})
    for param in ("step_seconds", "max_concurrency"):
        if (edges.get("params") or {}).get(param) is not None:
            values[f"edges_{param}"] = edges["params"][param]
    for v in sweep(edges, ""):
        queue = v.get("listen_queue")
        if not queue:
            continue
        step = claims_key(v["name"])
        for field in ("p99_ms", "max_ms", "failed", "non_2xx"):
            values[f"edges_{field}_{step}"] = v[field]
        for field in ("listen_overflows", "full_share", "accept_queue_limit"):
            if queue.get(field) is not None:
                values[f"edges_{field}_{step}"] = queue[field]
    return values


# The closed-loop sweeps, by the prefix of their steps' names, and the name their facts carry.
SWEEPS = [("", "echo"), ("fixed-", "fixed")]


def sweep_facts(results: dict) -> dict:
    """Per closed-loop sweep (SWEEPS' names, SWEEP): its steps (SWEEP_steps), those its bound names
    the server's CPU (SWEEP_server_cpu_steps), those within the model's band of their prediction
    (SWEEP_within_band_steps), those where Little's law holds (SWEEP_little_steps), and those where it
    fails with no request failed (SWEEP_little_broken_clean_steps). Of the echo: how far the CPU per
    request moved between a step's calibration and its run, the compiler's part left out, at the
    median step (echo_drift_median, as a share: pul.model.serving_drift); and that CPU with one
    request in flight against the busier steps' median and most (cpu_alone_ms, cpu_busier_median_ms,
    cpu_busier_most_ms: cpu_trend's numbers); the echo's steps predicted as a range from the round
    trip in series (round_trip_steps) and the most requests in flight of any (round_trip_most_in_flight).
    And the most CPU steal of any step (steal_share_most), and
    the margin Little's law is checked with (little_tolerance: LITTLE_TOLERANCE)."""
    found = {}
    for prefix, label in SWEEPS:
        steps = sweep(results, prefix)
        if not steps:
            continue
        checks = [(v, little_check(v)) for v in steps]
        found.update({
            f"{label}_steps": len(steps),
            f"{label}_server_cpu_steps": sum(v.get("bound_by") == model.SERVER_CPU for v in steps),
            f"{label}_within_band_steps": sum(
                v.get("measured_over_predicted") is not None
                and report.model_band(v)[0] <= v["measured_over_predicted"] <= report.model_band(v)[1] for v in steps),
            f"{label}_little_steps": sum(check["holds"] for _, check in checks),
            f"{label}_little_broken_clean_steps": sum(not check["holds"] and not (v["failed"] or v["non_2xx"])
                                                      for v, check in checks)})
    # The echo's steps predicted from the round trip in series up to the core (pul.model.ROUND_TRIP):
    # how many, and the most requests in flight of any.
    if sweep(results, ""):
        trips = [v["concurrency"] for v in sweep(results, "") if (v.get("extra") or {}).get(model.ROUND_TRIP)]
        found["round_trip_steps"] = len(trips)
        found["round_trip_most_in_flight"] = max(trips, default=0)
    drifts = [abs(drift) for v in sweep(results, "") if (drift := model.serving_drift(v)) is not None]
    if drifts:
        found["echo_drift_median"] = round(statistics.median(drifts), 4)
    costs = cpu_by_load(sweep(results, ""))
    if costs is not None:
        alone, busier = costs
        found.update({"cpu_alone_ms": round(alone, 4),
                      "cpu_busier_median_ms": round(statistics.median(cost for _, cost in busier), 4),
                      "cpu_busier_most_ms": round(max(cost for _, cost in busier), 4)})
    if any(sweep(results, prefix) for prefix, _ in SWEEPS):
        found["little_tolerance"] = LITTLE_TOLERANCE
    steal = [v["cpu_steal_share"] for v in results["variants"] if v.get("cpu_steal_share") is not None]
    if steal:
        found["steal_share_most"] = max(steal)
    return found


# The pools of the timeline figure, and what the chapter reads of each.
TIMELINE_POOLS = ["default", "lanes"]
TIMELINE_MEASURES = ["busy", "queued"]


def timeline_facts(results: dict) -> dict:
    """Per step with a timeline (STEP, its name as a claim writes it): the median over its samples of
    TIMELINE_POOLS' TIMELINE_MEASURES (busy_median_default_c_64, queued_median_lanes_fixed_c_64, ...)
    and of the server's CPU, in cores (cpu_cores_median_STEP)."""
    found = {}
    for v in results["variants"]:
        timeline = v.get("timeline") or {}
        step = claims_key(v["name"])
        for pool in TIMELINE_POOLS:
            for measure in TIMELINE_MEASURES:
                values = report.timeline_samples(v, pool, measure)
                if values:
                    found[f"{measure}_median_{pool}_{step}"] = statistics.median(values)
        cores = [x for x in timeline.get("cpu_cores", []) if x is not None]
        if cores:
            found[f"cpu_cores_median_{step}"] = statistics.median(cores)
    return found


def _n(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def cpu_per_request_table(steps: list[dict]) -> str:
    """The echo's server CPU per request at each concurrency: calibrated before the step (the
    compiler's CPU left out, pul.run), and during it (the compiler's CPU counted, and left out);
    the JIT compiler's share of the server's cores in the calibration; and the bound they gave
    (pul.model.combine: (cores - the compiler's share, in cores) / the calibrated CPU per request)
    against the measured throughput, with the arithmetic of the step the compiler took most of."""
    rows = ["| c | CPU ms/request, calibrated, compiler left out | JIT compiler, cores, calibrated "
            "| CPU ms/request, measured, compiler counted | CPU ms/request, measured, compiler left out "
            "| server CPU bound req/s | measured req/s | bound by |",
            "|---:|---:|---:|---:|---:|---:|---:|:---|"]
    for v in steps:
        calibration = v.get("calibration") or {}
        compiler = model.compiler_share(calibration) if calibration.get("server_cpu_ms") else None
        rows.append(f"| {v['concurrency']:,} | {_f(calibration.get('server_cpu_ms'), 3)} | {_f(compiler, 3)} "
                    f"| {_f(v.get('server_cpu_ms_per_request'), 3)} | {_f(model.serving_cpu_ms(v), 3)} "
                    f"| {_f((v.get('bounds') or {}).get('server CPU'), 0)} "
                    f"| {_f(v['requests_per_sec'], 0)} | {v.get('bound_by') or '–'} |")
    return "\n".join(rows) + "\n" + bound_arithmetic(steps)


def bound_arithmetic(steps: list[dict]) -> str:
    """How the table's server CPU bound is worked out, on the step whose calibration the JIT
    compiler took the largest share of (the first step, where it took none anywhere); and, where
    the compiler's share of that step's run differed from its calibration's, by how much."""
    worked = [v for v in steps if (v.get("calibration") or {}).get("server_cpu_ms") and
              (v.get("bounds") or {}).get(model.SERVER_CPU)]
    if not worked:
        return ""
    v = max(worked, key=lambda s: model.compiler_share(s["calibration"]))
    calibration = v["calibration"]
    cores = calibration.get("server_cores") or 1
    share = model.compiler_share(calibration)
    text = (f"\nThe server CPU bound is (the server's cores − the JIT compiler's share, in cores) ÷ the CPU "
            f"per request, both calibrated: at c = {v['concurrency']:,}, "
            f"({cores:g} − {share:.3f}) ÷ {calibration['server_cpu_ms']:.3f} ms = "
            f"{v['bounds'][model.SERVER_CPU]:,.0f} req/s.")
    during = v.get("jit_share")
    if during is not None and round(during, 3) != round(share, 3):
        moved = "fell" if during < share else "rose"
        text += (f" At that step the compiler's share {moved} between the calibration and the run, from "
                 f"{share:.3f} to {during:.3f} of a core, so the run had {'more' if moved == 'fell' else 'less'} "
                 f"of the core than the bound gave it: it served {v['requests_per_sec']:,.0f} req/s.")
    return text + "\n"


def _f(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def goodput(v: dict) -> float:
    """Requests per second answered with a 2xx: ab's rate counts failed and non-2xx answers too
    (a 503 from admission control is a complete request to ab)."""
    complete = v["complete"]
    if not complete:
        return 0.0
    return v["requests_per_sec"] * max(0, complete - v["failed"] - v["non_2xx"]) / complete


def closed_table(steps: list[dict]) -> str:
    """One row per closed-loop step, with ab's failed requests and its non-2xx responses apart (a
    503 is a complete request with a non-2xx status, not a failed one: measuring.md); a 2xx/s
    (goodput) column joins when some step was answered with non-2xx responses (e.g. 503s from
    lab.admission-limit), since req/s then counts those too."""
    with_goodput = any(v["non_2xx"] for v in steps)
    extra_head, extra_rule = (" 2xx/s |", "---:|") if with_goodput else ("", "")
    rows = ["| c | req/s |" + extra_head + " mean ms | p50 ms | p90 ms | p99 ms | max ms | failed | non-2xx "
            "| server CPU | predicted req/s | λ·W (in flight) | λ·W / c | Little |",
            "|---:|---:|" + extra_rule + "---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|"]
    for v in steps:
        check = little_check(v)
        cpu = v.get("server_cpu_utilization")
        extra = f" {goodput(v):,.0f} |" if with_goodput else ""
        rows.append(
            f"| {v['concurrency']:,} | {v['requests_per_sec']:,.0f} |{extra} {_f(v['mean_ms'], 2)} | {_f(v['p50_ms'], 2)} "
            f"| {_f(v['p90_ms'], 2)} | {_f(v['p99_ms'], 2)} | {_f(v['max_ms'], 1)} | {v['failed']:,} | {v['non_2xx']:,} "
            f"| {'–' if cpu is None else f'{cpu:.0%}'} | {predicted_cell(v)} "
            f"| {check['in_flight']:,.2f} | {check['ratio']:.2f} | {'holds' if check['holds'] else '**off**'} |")
    return "\n".join(rows) + "\n"


def open_table(results: dict) -> str:
    """Per open-loop step: how requests arrived, the load, and the queueing model's mean latency
    (M/D/m for Poisson arrivals, D/D/m for even ones, a growing queue past capacity) next to the
    measured one."""
    rows = ["| arrivals | offered req/s | offered / capacity | served req/s | predicted mean ms | mean ms | p99 ms "
            "| failed | non-2xx |",
            "|:---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v in open_steps(results):
        utilisation = v["extra"].get("utilisation", v["extra"]["fraction_of_capacity"])
        rows.append(f"| {arrivals(v)} | {v['extra']['offered_rate']:,} | {utilisation:.0%} "
                    f"| {v['requests_per_sec']:,.0f} | {predicted_mean(v)} | {_f(v['mean_ms'])} | {_f(v['p99_ms'])} "
                    f"| {v['failed']:,} | {v['non_2xx']:,} |")
    return "\n".join(rows) + "\n"


def model_sentences(results: dict) -> str:
    """The models' numbers as a sentence for the chapter (never typed into the prose)."""
    fixed = fixed_model(results)
    text = (f"This run: `{results['command']}`, {results['duration_s'] // 60} min {results['duration_s'] % 60} s. "
            f"The fixed-service endpoint has {fixed['lanes']} lanes and {fixed['work_ms']} ms per request, so "
            f"its capacity is {fixed['lanes']} / {fixed['work_ms'] / 1000:g} s = **{fixed['capacity']:,.0f} req/s** "
            f"and its knee is at **c = {fixed['knee']}**.")
    model = echo_model(results)
    if model:
        r1_ms, capacity, knee = knee_arithmetic(model)
        text += (f" The echo, alone on the road (c = 1), took W₁ = **{r1_ms:.3f} ms**; its best "
                 f"throughput was **{capacity:,.0f} req/s** (at c = {model['best_c']:,}), so its bounds "
                 f"meet at c* = {capacity:,.0f}/s × {r1_ms / 1000:.6f} s ≈ **{knee:.1f}**.")
    return text + "\n"


def _anchored(parts: dict[str, str]) -> str:
    """Snippets for a chapter to include by anchor ({{#include FILE:NAME}})."""
    return "".join(f"<!-- ANCHOR: {name} -->\n{text}\n<!-- ANCHOR_END: {name} -->\n" for name, text in parts.items())


_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]


def _word(n: int) -> str:
    """A small count as a word (eight), a larger one in digits."""
    return _WORDS[n] if 0 <= n < len(_WORDS) else f"{n:,}"


def _equals(x: float) -> str:
    """"=" where a result is whole, "≈" where the text rounds it."""
    return "=" if abs(x - round(x)) < 1e-9 else "≈"


def fixed_prediction(params: dict) -> dict:
    """The fixed road's prediction from the run's own options, before any request is sent: its
    bounds (fixed_road), the knee's step, and the closed-loop model (closed_loop) at the ladder's
    steps past the knee (the first and the top of the fixed sweep's ladder)."""
    lanes, work_ms = params["pool_size"], params["work_ms"]
    road = fixed_road(lanes, work_ms)
    steps = ladder(min(params["max_concurrency"], FIXED_LADDER_FACTOR * lanes))
    past = [c for c in steps if c > lanes]
    shown = sorted({past[0], past[-1]}) if past else []
    return {**road, "past": [(c, closed_loop(c, lanes, work_ms)["latency_ms"]) for c in shown]}


def prediction_text(results: dict) -> str:
    """The chapter's prediction for the fixed road, from the run's --pool-size and --work-ms: the
    capacity and the knee (`capacity`), and the two lines of the closed-loop sweep (`ladder`)."""
    p = fixed_prediction(results["params"])
    m, work_ms, capacity = p["lanes"], p["work_ms"], p["capacity"]
    service = f"{work_ms / 1000:.3f} s"
    lead = f"{_word(m).capitalize()} lanes, {work_ms:g} ms to cross:"
    formula = (f"> capacity *λ*<sub>max</sub> = {m} ÷ {service} = {capacity:,.0f} requests/s, knee at "
               f"*c*\\* = {capacity:,.0f}/s × {service} = {capacity * work_ms / 1000:,.0f}")
    lines = [f"- from c = 1 to {m}, throughput doubles with every doubling of *c* and the mean latency "
             f"stays at {work_ms:g} ms;",
             f"- from c = {m} on, throughput stays at {capacity:,.0f} requests/s and latency doubles with every "
             f"doubling of *c*" + (": " + ", ".join(f"{latency:,.0f} ms at c = {c:,}" for c, latency in p["past"])
                                  if p["past"] else "") + "."]
    return _anchored({"capacity": f"{lead}\n\n{formula}", "ladder": "\n".join(lines)})


def openload_default(option: str):
    """The default of one of scripts/openload's options, which the lab leaves to it (--timeout)."""
    import importlib.machinery
    import importlib.util

    from pul.claims import REPO

    loader = importlib.machinery.SourceFileLoader("openload_script", str(REPO / "scripts" / "openload"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return getattr(module.parse_args(["--rate", "1", "http://127.0.0.1/"]), option)


_SHARES = {2: "half", 3: "a third", 4: "a quarter", 5: "a fifth", 10: "a tenth"}


def past_capacity_step(results: dict) -> dict | None:
    """The run's open-loop steps past capacity, worked out (driver.past_capacity) at the highest
    offered rate: its rate, the lanes and service time it ran on, its length, the cap on requests in
    flight it ran with, and openload's timeout; None where the run has none past capacity."""
    over = [v for v in open_steps(results) if v["extra"].get("fraction_of_capacity", 0) > 1]
    if not over:
        return None
    v = max(over, key=lambda v: v["extra"]["offered_rate"])
    worked = past_capacity(v["extra"]["offered_rate"], v["pool_threads"], v["service_ms"], v["extra"]["seconds"],
                           v["concurrency"], openload_default("timeout"))
    return {**worked, "fraction": v["extra"]["fraction_of_capacity"]}


def past_capacity_text(results: dict) -> str:
    """The open-loop page's arithmetic past capacity, from the run's step there (past_capacity_step):
    how much faster requests arrive than the lanes finish (`excess`), the mean wait it predicts over
    the step (`mean`), and how long a run may last before openload's cap or timeout hides requests
    (`limits`)."""
    w = past_capacity_step(results)
    if w is None:
        missing = "(This run has no open-loop step past capacity: `scripts/lab run 05` makes one.)"
        return _anchored({"excess": missing, "mean": "", "limits": ""})
    growth, seconds, servers, excess = w["growth"], w["seconds"], w["servers"], w["excess"]
    share = _SHARES.get(round(1 / growth)) if abs(1 / growth - round(1 / growth)) < 1e-9 else None
    rate = f"{excess:,.0f}"
    excess_text = (f"At {w['fraction']:.0%} of capacity, {rate} requests a second more arrive than the "
                   f"{w['capacity']:,.0f} the lanes finish.")
    mean_text = (f"Here *a* ÷ *m* = {w['utilisation']:g}, so a request due *t* seconds in waits {growth:g} · *t*"
                 + (f", {share} of *t*" if share else "") + f"; the lab's open-loop steps last *τ* = {seconds:g} s "
                 f"(`OPEN_LOOP_SECONDS` in `driver.py`), so the prediction is {w['service_ms']:g} ms + {growth:g} × "
                 f"{seconds:g} s ÷ 2 = {w['mean_ms']:,.0f} ms.")
    cap, timeout = w["cap_after_s"], w["timeout_after_s"]
    first = min(cap, timeout)
    minutes = max(1, math.ceil(first / 60))
    clear = ("stay far from both" if seconds * 4 <= first else "stay clear of both" if seconds < first
             else "do not")
    limits_text = (f"The requests in flight grow by {rate} a second on top of the {servers:,} in service, so the cap "
                   f"of {w['max_in_flight']:,} is reached after ({w['max_in_flight']:,} − {servers:,}) ÷ {rate} "
                   f"{_equals(cap)} {cap:,.0f} s; from then on every request over the cap is dropped. A request due "
                   f"*t* seconds in waits {growth:g} · *t*, so the {w['timeout_s']:g} s timeout catches the requests "
                   f"due after {w['timeout_s']:g} ÷ {growth:g} {_equals(timeout)} {timeout:,.0f} s. The lab's "
                   f"{seconds:g}-second steps {clear} (at most {servers:,} + {rate} × {seconds:g} "
                   f"{_equals(w['most_in_flight'])} {w['most_in_flight']:,.0f} in flight). A run of "
                   + ("a minute" if minutes == 1 else f"{minutes} minutes")
                   + f" at {w['fraction']:.0%} would report "
                   + ("dropped requests as failures" if cap <= timeout else "timed-out requests as failures")
                   + ", and its latency table would describe only the requests that were "
                   + ("sent." if cap <= timeout else "answered in time."))
    return _anchored({"excess": excess_text, "mean": mean_text, "limits": limits_text})


# The worked example of Erlang's C formula on the open-loop page: the lab's road at this
# utilisation, with one lane and with all of its lanes.
ERLANG_C_UTILISATION = 0.7


def erlang_c_example(results: dict) -> list[dict]:
    """Per number of lanes (one, and the run's own), at ERLANG_C_UTILISATION of their capacity with
    the run's service time: the rate, the load in erlangs, Erlang's C (the chance to wait) and the
    mean waits in the queue of M/M/c and M/D/c (the driver's own functions), in ms."""
    fixed = fixed_model(results)
    service_s = fixed["work_ms"] / 1000
    rows = []
    for lanes in sorted({1, fixed["lanes"]}):
        rate = ERLANG_C_UTILISATION * lanes / service_s
        rows.append({"lanes": lanes, "rate": rate, "load": rate * service_s,
                     "waits": erlang_c(lanes, rate * service_s),
                     "mmc_ms": 1000 * wait_mmc(rate, service_s, lanes),
                     "mdc_ms": 1000 * wait_mdc(rate, service_s, lanes)})
    return rows


def erlang_c_text(results: dict) -> str:
    """The worked example as a table, with the service time and the utilisation it assumes, and how
    much shorter the many-lane road's mean wait is than the one lane's."""
    rows = erlang_c_example(results)
    work_ms = fixed_model(results)["work_ms"]
    lines = [f"Utilisation *U* = {ERLANG_C_UTILISATION:.0%}, service time *S* = {work_ms:g} ms "
             "(the committed run's `--work-ms`):", "",
             "| lanes *m* | rate *λ* | load *a* = *λS* | *C*(*m*, *a*) | *W*<sub>q</sub>(M/M/*m*) | *W*<sub>q</sub>(M/D/*m*) |",
             "|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        how = "exact" if row["lanes"] == 1 else "approximate"
        lines.append(f"| {row['lanes']} | {row['rate']:,.0f}/s | {row['load']:.2f} | {row['waits']:.3f} "
                     f"| {row['mmc_ms']:.2f} ms | {row['mdc_ms']:.2f} ms ({how}) |")
    if len(rows) > 1:
        lines += ["", f"At the same utilisation, the mean wait with {rows[-1]['lanes']} lanes is "
                      f"about 1/{rows[0]['mmc_ms'] / rows[-1]['mmc_ms']:.0f} of one lane's."]
    return "\n".join(lines) + "\n"


def cpu_by_load(steps: list[dict]) -> tuple[float, list[tuple[dict, float]]] | None:
    """The echo's CPU per request during its steps, the JIT compiler's part left out
    (pul.model.serving_cpu_ms): with one request in flight, and at each busier step as (step,
    cost); None without c = 1 and two busier steps to set it against."""
    told = [(v, cost) for v in steps if (cost := model.serving_cpu_ms(v))]
    alone = next((cost for v, cost in told if v["concurrency"] == 1), None)
    busier = [(v, cost) for v, cost in told if v["concurrency"] > 1]
    return None if alone is None or len(busier) < 2 else (alone, busier)


def cpu_trend(steps: list[dict]) -> str:
    """What the echo's CPU per request during the steps did across the ladder, the JIT compiler's
    part left out as the calibration leaves it out (pul.model.serving_cpu_ms), in numbers: whether one
    request in flight cost more than the busier steps, or sat within their spread."""
    costs = cpu_by_load(steps)
    if costs is None:
        return ""
    alone, busier = costs
    low = min(busier, key=lambda pair: pair[1])
    high = max(busier, key=lambda pair: pair[1])
    median = statistics.median(cost for _, cost in busier)
    text = (f"Measured during the steps, with the JIT compiler's CPU left out as the calibration leaves it out "
            f"(its share of the run, in cores, × 1000 ÷ req/s), the server's CPU per request was "
            f"{alone:.3f} ms with one request in flight, and {low[1]:.3f} ms (c = {low[0]['concurrency']:,}) to "
            f"{high[1]:.3f} ms (c = {high[0]['concurrency']:,}) at the busier steps, median {median:.3f} ms: ")
    if alone > high[1]:
        text += f"one request alone cost {alone / median:.2f}x the busier steps' median."
    elif alone < low[1]:
        text += f"one request alone cost less than at any busier step ({alone / median:.2f}x their median)."
    else:
        text += ("one request alone cost within the busier steps' range, which spans "
                 f"{low[1] / median - 1:+.0%} to {high[1] / median - 1:+.0%} of their median.")
    return text


def _data_block(name: str, rows: list[tuple]) -> str:
    body = "\n".join(" ".join(f"{x:.6g}" for x in row) for row in rows) or "1 1"
    return f"${name} << EOD\n{body}\nEOD\n"


def _model_rows(top: int, capacity: float, r1_ms: float, kind: str) -> list[tuple]:
    """Points of the bound lines, dense enough to draw the corner on log axes."""
    points = sorted({1.0, capacity * r1_ms / 1000, float(top)} | {2 ** (i / 4) for i in range(4 * int(math.log2(top)) + 1)})
    rows = []
    for c in points:
        if kind == "throughput":
            rows.append((c, min(c / (r1_ms / 1000), capacity)))
        else:
            rows.append((c, max(r1_ms, c / capacity * 1000)))
    return rows


def _figure(results: dict, kind: str) -> str:
    echo, fixed = sweep(results, ""), sweep(results, "fixed-")
    top = max([v["concurrency"] for v in echo + fixed] or [1])
    model = echo_model(results)
    fm = fixed_model(results)
    blocks = ""
    plots = []
    if kind == "throughput":
        blocks += _data_block("echo", [(v["concurrency"], v["requests_per_sec"]) for v in echo])
        blocks += _data_block("fixed", [(v["concurrency"], v["requests_per_sec"]) for v in fixed])
        ylabel, title = "requests per second (log)", "Throughput vs concurrency: the toll rate stops rising at the knee"
        plots.append("$echo using 1:2 with linespoints pt 7 lc rgb '#1f77b4' lw 2 title 'echo, measured'")
        plots.append("$fixed using 1:2 with linespoints pt 5 lc rgb '#d62728' lw 2 "
                     f"title 'fixed {fm['work_ms']} ms x {fm['lanes']} lanes, measured'")
    else:
        blocks += _data_block("echo", [(v["concurrency"], v["mean_ms"], v["p99_ms"]) for v in echo])
        blocks += _data_block("fixed", [(v["concurrency"], v["mean_ms"], v["p99_ms"]) for v in fixed])
        ylabel, title = "latency, ms (log)", "Latency vs concurrency: past the knee, every extra car only waits"
        plots.append("$echo using 1:2 with linespoints pt 7 lc rgb '#1f77b4' lw 2 title 'echo, mean'")
        plots.append("$echo using 1:3 with points pt 6 lc rgb '#1f77b4' title 'echo, p99'")
        plots.append("$fixed using 1:2 with linespoints pt 5 lc rgb '#d62728' lw 2 title 'fixed, mean'")
        plots.append("$fixed using 1:3 with points pt 4 lc rgb '#d62728' title 'fixed, p99'")
    if model:
        blocks += _data_block("echomodel", _model_rows(top, model["capacity"], model["r1_ms"], kind))
        plots.append("$echomodel using 1:2 with lines dt 2 lc rgb '#1f77b4' lw 1.5 title "
                     + ("'echo bounds: min(c / W1, plateau)'" if kind == "throughput"
                        else "'echo bounds: max(W1, c / plateau)'"))
    if fixed:
        blocks += _data_block("fixedmodel", _model_rows(max(v["concurrency"] for v in fixed), fm["capacity"],
                                                        fm["work_ms"], kind))
        plots.append("$fixedmodel using 1:2 with lines dt 2 lc rgb '#d62728' lw 1.5 title "
                     + ("'fixed model: min(c, lanes) / service time'" if kind == "throughput"
                        else "'fixed model: max(service time, c / capacity)'"))
    # The knees: where each model's two lines meet.
    knees = ""
    for knee, colour, label, height in ((model["knee"] if model else None, "#1f77b4", "echo knee", 0.96),
                                        (fm["knee"] if fixed else None, "#d62728", "fixed knee", 0.90)):
        if knee:
            knees += (f"set arrow from {knee:.4g}, graph 0 to {knee:.4g}, graph 1 nohead dt 3 lc rgb '{colour}'\n"
                      f"set label '{label} c*={knee:.3g}' at {knee:.4g}, graph {height} offset 0.5,0 "
                      f"tc rgb '{colour}' font ',11'\n")
    script = report.svg_header(760, 540) + f"""
set title "{title}"
set logscale xy 2
set format y "%g"
set xlabel "concurrency c (requests in flight, log)"
set ylabel "{ylabel}"
set grid xtics ytics mxtics mytics lc rgb '#dddddd'
set key outside below center horizontal maxcols 2 width -4
set xrange [0.8:{top * 1.25}]
{knees}{blocks}
plot {', '.join(plots)}
"""
    return report.gnuplot_svg(script)


def timeline_figure(results: dict) -> str:
    """The echo at 64 in flight (the core busy, the dispatcher never short of threads), and the
    fixed road below and past its lanes (the lanes held busy, the requests queued behind them)."""
    return report.timeline_svg(
        results, ["c=64", "fixed-c=4", "fixed-c=64"],
        [("default", "busy", "default dispatcher: busy"), ("default", "queued", "default dispatcher: queued tasks"),
         ("lanes", "busy", "lanes: busy"), ("lanes", "threads", "lanes: threads"),
         ("lanes", "queued", "lanes: queued tasks")],
        "Lab 05: the pools and the core while each step ran (sampled 20 times a second)")


def throughput_figure(results: dict) -> str:
    return _figure(results, "throughput")


def latency_figure(results: dict) -> str:
    return _figure(results, "latency")


# -- "At a glance" (book/src/at-a-glance.md): this lab's rules, each worked on its run ------------

def glance_utilisation_law(lab05: glance.Run) -> str:
    """k ÷ D at the echo's plateau, the core's busy share beside the measured rate."""
    echo = echo_model(lab05.data) if lab05.data else None
    v = lab05.variant(f"c={echo['best_c']}") if echo else None
    calibration = (v or {}).get("calibration") or {}
    bound = ((v or {}).get("bounds") or {}).get(model.SERVER_CPU)
    if v is None or not calibration.get("server_cpu_ms") or not bound:
        return glance.missing(lab05, "c=1", "c=64")
    cores, cpu_ms = calibration["server_cores"], glance.shown(calibration["server_cpu_ms"], 3)
    share = glance.shown(model.compiler_share(calibration), 2)
    top = f"({cores:g} − {share:.2f}, the JIT compiler's share)" if share else f"{cores:g}"
    # The bound worked from the inputs as shown (the driver's, from unrounded ones, may differ in
    # its last digit).
    bound = glance.shown((cores - share) * 1000 / cpu_ms, 0)
    rate = glance.shown(v["requests_per_sec"], 0)
    busy = v.get("server_cpu_utilization")
    return (f"{glance.run_line(lab05)}, the JSON echo at *c* = {v['concurrency']}, its best step: *D* = "
            f"{glance.ms(cpu_ms, 3)} of server CPU per request, calibrated just before the step, on *k* = {cores:g} "
            f"core{'' if cores == 1 else 's'}: *λ* ≤ *k* ÷ *D* = {top} ÷ {glance.ms(cpu_ms, 3)} = {glance.rate(bound)}. "
            f"It served {glance.rate(rate)} ({rate / bound:.2f} of the bound)"
            + (f", with the core *U* = {busy:.0%} busy" if busy is not None else "") + ".\n")


def glance_knee(lab05: glance.Run) -> str:
    """c* = m on the fixed road, and c* = λ_max × W₁ for the echo."""
    if not lab05.data or not (lab05.data.get("pools") or {}).get("pools", {}).get("lanes"):
        return glance.missing(lab05, "fixed-c=1")
    road = fixed_model(lab05.data)
    m, service = road["lanes"], glance.shown(road["work_ms"] / 1000, 3)
    capacity = glance.shown(m / service, 0)
    text = (f"{glance.run_line(lab05)}, the fixed road: *m* = {m} lanes of *S* = {glance.ms(road['work_ms'], 0)}, so "
            f"*λ*<sub>max</sub> = *m* ÷ *S* = {m} ÷ {service:.3f} s = {glance.rate(capacity)} and *c*\\* = *m* = {m}.")
    steps = sorted((v for v in lab05.data["variants"] if v["name"].startswith("fixed-c=")),
                   key=lambda v: v["concurrency"])
    at_knee = next((v for v in steps if v["concurrency"] == m), None)
    if at_knee:
        text += (f" At *c* = {m} it served {glance.rate(at_knee['requests_per_sec'])} with *W* = "
                 f"{glance.ms(at_knee['mean_ms'])}.")
    if steps and steps[-1]["concurrency"] > m:
        top = steps[-1]
        text += (f" At *c* = {top['concurrency']}: {glance.rate(top['requests_per_sec'])} with *W* = "
                 f"{glance.ms(top['mean_ms'])}, where *c* ÷ *λ*<sub>max</sub> = {top['concurrency']} ÷ "
                 f"{capacity:,.0f}/s = {glance.ms(top['concurrency'] * 1000 / capacity, 0)}.")
    echo = echo_model(lab05.data)
    if echo:
        r1_ms, best, knee_c = knee_arithmetic(echo)
        text += (f" The echo: *W*₁ = {glance.ms(r1_ms, 3)} alone, *λ*<sub>max</sub> = "
                 f"{glance.rate(best)} (its best, at *c* = {echo['best_c']:,}), so *c*\\* = "
                 f"*λ*<sub>max</sub> × *W*₁ = {best:,.0f}/s × {r1_ms / 1000:.6f} s ≈ {knee_c:.1f}.")
    return text + "\n"


# The page's rules this lab's run works (pul.glance: book/src/generated/at-a-glance-NAME.md).
GLANCE = {
    "utilisation-law": glance_utilisation_law,
    "knee": glance_knee,
}
