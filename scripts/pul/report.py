"""Book artifacts (tables, figures, generated sentences) made from committed results.

`scripts/lab report` rewrites them; `scripts/lab report --check` fails when a
committed artifact differs from what its results file gives, so the book can
never show a number that no run produced.
"""

from __future__ import annotations

import html
import re
import subprocess
import traceback
from pathlib import Path

from . import model, play3, profile
from .claims import key as claim_key
from .errors import BadResults, LabError
from .lab import Lab
from .results import load, machine_line, predicted_cell, ratio_cell, write_text_atomic

REPO = Path(__file__).resolve().parents[2]


def render(lab: Lab) -> dict[Path, str]:
    latest = lab.dir / "results" / "latest.json"
    if not latest.exists():
        return {}
    data = load(latest)
    try:
        artifacts = lab.report(data)
    except (KeyError, IndexError, TypeError) as error:
        # The schema checks what every lab reads; a lab's own report reads more (its `extra`).
        frame = traceback.extract_tb(error.__traceback__)[-1]
        what = (f"has no {error.args[0]!r}" if isinstance(error, KeyError) and error.args
                else f"has a value it cannot use ({error})")
        raise BadResults(f"{latest} {what}, which the lab's report reads ({frame.filename}:{frame.lineno}): "
                         "an incomplete or hand-edited results file? Restore it with `git checkout -- FILE` "
                         "or measure again") from error
    # Every lab's Play 3 pages (pul.play3): made the same way for each, so not the lab's report's.
    artifacts.update(play3.artifacts(lab))
    return {REPO / rel: content for rel, content in artifacts.items()}


def committed_run(lab, *folder: str) -> dict | None:
    """A second committed run a lab's report compares with or reads (lab 04's --thorough run, lab
    05's run past c = 1,024): `results/FOLDER/latest.json` in the lab's folder, if there is one."""
    path = lab.dir.joinpath("results", *folder, "latest.json") if lab is not None else None
    if path is None or not path.exists():
        return None
    return load(path)


def write_file(path: Path, content: str) -> None:
    """One book file, written atomically (see results.write_text_atomic)."""
    write_text_atomic(path, content)


def write_all(artifacts: dict[Path, str]) -> list[Path]:
    """Book files, {path (relative to the repository, or absolute): content}, each written atomically."""
    written = []
    for rel, content in artifacts.items():
        path = REPO / rel
        write_file(path, content)
        written.append(path)
    return written


def write_changed(artifacts: dict[Path, str]) -> list[Path]:
    """Only the book files whose content differs from what they should hold."""
    stale = set(stale_files(artifacts))
    return write_all({path: content for path, content in artifacts.items() if path in stale})


def write_lab(lab: Lab, data: dict) -> list[Path]:
    return write_all(lab.report(data))


def write_play3(lab: Lab) -> list[Path]:
    """The lab's Play 3 pages only (pul.play3), after a Play 3 run."""
    return write_all(play3.artifacts(lab))


def stale_files(artifacts: dict[Path, str]) -> list[Path]:
    """The files whose committed content differs from what they should hold."""
    return [path for path, content in artifacts.items() if not path.exists() or path.read_text() != content]


def stale(lab: Lab) -> list[Path]:
    """Artifacts whose committed content differs from what latest.json gives."""
    return stale_files(render(lab))


def figure_title(script: str) -> str | None:
    """The title a gnuplot script gives its figure: its multiplot's, else its first plot's."""
    quoted = r"""(?:"([^"]*)"|'((?:[^']|'')*)')"""
    found = (re.search(r"^set multiplot\b.*?\btitle " + quoted, script, re.M)
             or re.search(r"^set title " + quoted, script, re.M))
    if not found:
        return None
    # A single-quoted gnuplot string doubles its quotes (pul.merge writes students' text so).
    return found.group(1) if found.group(1) is not None else found.group(2).replace("''", "'")


def gnuplot_svg(script: str) -> str:
    """Run a gnuplot script that writes SVG to stdout; return the SVG text, its <title> the
    figure's own (gnuplot writes "Gnuplot"), which a screen reader announces."""
    try:
        result = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise LabError("gnuplot is needed to draw the figures: apt-get install gnuplot-nox")
    if result.returncode != 0:
        raise LabError(f"gnuplot failed:\n{result.stderr}")
    title = figure_title(script)
    if title is None:
        raise LabError("a figure needs a title: its gnuplot script sets none (set title \"...\")")
    return result.stdout.replace("<title>Gnuplot</title>", f"<title>{html.escape(title)}</title>", 1)


SVG_TERMINAL = ('set terminal svg size {w},{h} dynamic enhanced font "Helvetica,13" background "white"\n'
                "set output\n")


def svg_header(width: int = 760, height: int = 420) -> str:
    return SVG_TERMINAL.format(w=width, h=height)


# Clustered bars: one group per data row, one bar per column after the first.
CLUSTERED_BARS = """set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
"""


def measured_vs_predicted_svg(results: dict, title: str, width: int = 760) -> str:
    """Measured and predicted requests per second, one pair of bars per variant."""
    data = "\n".join(f'"{v["name"]}" {v["requests_per_sec"]:.1f} {v["predicted_requests_per_sec"] or 0:.1f}'
                     for v in results["variants"])
    script = svg_header(width=width) + f"""
set title "{title}"
{CLUSTERED_BARS}set ylabel "requests per second"
set yrange [0:*]
set grid ytics
set key top left
set xtics nomirror
$data << EOD
{data}
EOD
plot $data using 2:xtic(1) title "measured" linecolor rgb "#1f77b4", \\
     '' using 3 title "predicted (the smallest bound)" linecolor rgb "#bbbbbb"
"""
    return gnuplot_svg(script)


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def bound_sentence(v: dict) -> str | None:
    """'java-offloaded: bound by server CPU (1 core / 0.73 ms ... = 1,370 req/s; with queueing ...:
    1,300 req/s); measured 1,290 (0.99), with the server's core 97% busy.' None for a variant
    without a model."""
    if not v.get("bound_by") or not v.get("predicted_requests_per_sec"):
        return None
    bounds = v.get("bounds") or {}
    why = (v.get("bounds_arithmetic") or {}).get(v["bound_by"], v.get("prediction", ""))
    busy = model.server_busy(v)
    outside = band_note(v)
    queueing = queueing_below_bound(v)
    convoy = convoy_clause(v)
    return (f"{v['name']}: bound by {model.shown_bound(v)} ({why} = "
            f"{_number(bounds.get(v['bound_by'], v['predicted_requests_per_sec']))} req/s"
            + (f"; {model.queueing_arithmetic(queueing)}" if queueing else "")
            + (f"; {convoy}" if convoy else "")
            + f"); measured {_number(v['requests_per_sec'])} ({v['measured_over_predicted']:.2f}"
            + (f" of {kind.floor}, {v['requests_per_sec'] / v['predicted_upper_requests_per_sec']:.2f} of {kind.upper}"
               if (kind := model.range_kind(v)) else "") + ")"
            + ((f", with the server's CPU limit {busy:.0%} used" if model.limit_binds(v.get("calibration"))
                else f", with the server's core{'s' if (v.get('calibration') or {}).get('server_cores', 1) != 1 else ''} "
                f"{busy:.0%} busy") if busy is not None else "") + "."
            + (f" Outside the model's band ({BAND[0]:.2f}-{BAND[1]:.2f}){band_reasons(v)}." if outside else ""))


def queueing_below_bound(v: dict) -> dict | None:
    """The mean-value analysis a variant's prediction is, where queueing set it below its bound."""
    queueing = (v.get("extra") or {}).get(model.QUEUEING)
    bound = (v.get("bounds") or {}).get(v.get("bound_by"))
    if not queueing or bound is None or queueing["requests_per_sec"] >= bound:
        return None
    return queueing


# The band within which a measurement confirms the bound it is predicted by.
BAND = (0.85, 1.10)


def _busy(v: dict) -> float | None:
    """How busy the resource of a variant's bound was during its measured run."""
    return {model.SERVER_CPU: model.server_busy(v),
            model.DATABASE_CPU: (v.get("extra") or {}).get("postgres_cpu_utilization"),
            model.LOAD_GENERATOR: v.get("load_cores_busy")}.get(v.get("bound_by"))


def model_band(v: dict, band: tuple[float, float] = BAND) -> tuple[float, float]:
    """The band of measured/predicted that confirms a variant's model: `band` around its bound, or,
    for a range (pul.model.CONVOY, pul.model.ROUND_TRIP), from band's low end of the range's lower end to band's high end
    of its upper."""
    upper, predicted = v.get("predicted_upper_requests_per_sec"), v.get("predicted_requests_per_sec")
    return (band[0], band[1] * upper / predicted) if upper and predicted else band


def band_note(v: dict) -> str | None:
    """For a variant outside the model's band: how far, and what the run measured about why."""
    ratio = v.get("measured_over_predicted")
    low, high = model_band(v)
    if ratio is None or low <= ratio <= high:
        return None
    return (f"{v['name']}: {ratio:.2f} of its {'range' if v.get('predicted_upper_requests_per_sec') else 'bound'} "
            f"({v['bound_by']}), outside the model's band {low:.2f}-{high:.2f}" + band_reasons(v) + ".")


def convoy_clause(v: dict) -> str | None:
    """How a variant predicted as a range (pul.model.RANGES) came by it, from its floor up to its
    upper end, or None."""
    kind = model.range_kind(v)
    return kind.clause(v["extra"][kind.key], v["predicted_upper_requests_per_sec"]) if kind else None


def _unsettled(v: dict) -> str:
    """A warm-up that did not settle, and what calibrating again found (pul.run.calibration)."""
    if (v.get("warmup") or {}).get("settled") is not False:
        return ""
    again = (v.get("calibration") or {}).get("recalibrated")
    if again is None:
        return "; its warm-up had not settled, so the calibration before it was not the server's steady state"
    if again["settled"]:
        return (f"; its warm-up had not settled, and {again['rounds']} calibration rounds after it agreed on the "
                "server's CPU per request")
    return (f"; its warm-up had not settled, and the server's CPU per request was still moving in the "
            f"{again['rounds']} calibration rounds after it")


def band_reasons(v: dict) -> str:
    """What the run measured that bears on a miss, each part starting "; ": how busy the bound's
    resource was, the compiler's part of it, an unsettled warm-up, a calibration round unlike the
    runs, and a run that served dearer or cheaper than its calibration."""
    busy = _busy(v)
    compiler = v.get("jit_share") if v.get("bound_by") == model.SERVER_CPU else None
    return ((f"; the {v['bound_by']} was {busy:.0%} busy" if busy is not None else "")
            + (f", {compiler:.0%} of it the JIT compiler's"
               if compiler and compiler >= model.SHOWN_COMPILER_SHARE else "")
            + _unsettled(v)
            + _calibration_outlier(v) + _serving_drift(v) + _shared_core_drift(v) + _remeasured(v))


def _remeasured(v: dict) -> str:
    """Where the driver measured the step again (pul.run: a run's CPU per request was far from its
    calibration's), what the earlier measurements were."""
    earlier = (v.get("extra") or {}).get("remeasured")
    if not earlier:
        return ""
    earlier = [earlier] if isinstance(earlier, dict) else earlier  # older results keep one, as a dict
    if len(earlier) == 1:
        (first,) = earlier
        return (f"; measured a second time: its first run served at {first['serving_drift']:+.0%} of the CPU "
                f"per request calibrated before it ({_number(first['requests_per_sec'])} req/s, "
                f"{first['measured_over_predicted']:.2f} of its bound then)")
    each = [f"{r['serving_drift']:+.0%} ({_number(r['requests_per_sec'])} req/s, "
            f"{r['measured_over_predicted']:.2f} of its bound)" for r in earlier]
    return (f"; measured {len(earlier) + 1} times: its earlier runs served at {', '.join(each[:-1])} and "
            f"{each[-1]} of the CPU per request calibrated before each")


# How far a run's CPU per request may move from its calibration before the note names it.
DRIFT_NAMED = 0.05


def _shared_core_drift(v: dict) -> str:
    """Where a database-CPU-bound run spent more or less of the database's core per request than
    the round before it (all its users: the database, the load generator, the driver)."""
    calibration = v.get("calibration") or {}
    calibrated, busy, rate = calibration.get("load_cores_cpu_ms"), v.get("load_cores_busy"), v.get("requests_per_sec")
    cores = calibration.get("load_cores") or 1
    if v.get("bound_by") != model.DATABASE_CPU or not calibrated or busy is None or not rate:
        return ""
    during = busy * cores * 1000 / rate
    if abs(during / calibrated - 1) <= DRIFT_NAMED:
        return ""
    return (f"; its core spent {during:.3g} ms per request during the run against {calibrated:.3g} ms in the "
            f"round before it ({during / calibrated - 1:+.0%})")


def _serving_drift(v: dict) -> str:
    """Where a server-CPU-bound run served each request with more or less CPU than its calibration
    found (the compiler's CPU left out of both), or its compiler took more or less of the core:
    the measurements that moved it off the bound."""
    drift = model.serving_drift(v)
    if drift is None:
        return ""
    calibration = v["calibration"]
    calibrated = calibration["server_cpu_ms"]
    compiler_run = v.get("jit_share") or 0.0
    text = ""
    if abs(drift) > DRIFT_NAMED:
        text += (f"; serving a request took {calibrated * (1 + drift):.3g} ms of CPU during the run against "
                 f"{calibrated:.3g} ms calibrated before it ({drift:+.0%})")
    compiler_before = calibration.get("jit_share")
    if compiler_before is not None and abs(compiler_run - compiler_before) >= DRIFT_NAMED:
        text += (f"; the JIT compiler took {compiler_run:.0%} of the core during the run against "
                 f"{compiler_before:.0%} in the calibration")
    return text


def _calibration_outlier(v: dict) -> str:
    """Where a repeated step's calibration round served a rate outside the range of all its measured
    runs: that one round's noise, not the model, set the prediction."""
    calibration, runs = v.get("calibration") or {}, (v.get("extra") or {}).get("runs") or []
    rate = calibration.get("requests_per_sec")
    rates = [r["requests_per_sec"] for r in runs if r.get("tool", "ab") == "ab"]
    if rate is None or len(rates) < 2 or min(rates) <= rate <= max(rates):
        return ""
    side = "slower" if rate < min(rates) else "faster"
    return (f"; its calibration round ({_number(rate)} req/s) was {side} than every one of its "
            f"{len(rates)} measured runs ({_number(min(rates))}–{_number(max(rates))} req/s): that one "
            "round's noise set the prediction")


def bounds_markdown(results: dict, names: list[str] | None = None) -> str:
    """The model of a run, for the book: each variant's bounds in requests/s (the one that binds
    in bold), the prediction (below that bound where queueing is modelled), measured/predicted,
    then the arithmetic of every binding bound, its queueing and its calibration."""
    variants = [v for v in results["variants"] if v.get("bounds") and (names is None or v["name"] in names)]
    if not variants:
        return "This run has no model of bounds (it was made before the driver had one).\n"
    resources = [r for r in model.NAMES if any(r in v["bounds"] for v in variants)]
    lines = ["| variant | " + " | ".join(resources) + " | bound by | predicted req/s | measured req/s | measured/predicted |",
             "|:---|" + "---:|" * len(resources) + ":---|---:|---:|---:|"]
    for v in variants:
        cells = []
        for resource in resources:
            value = _number(v["bounds"].get(resource)) if resource in v["bounds"] else "–"
            cells.append(f"**{value}**" if resource == v.get("bound_by") else value)
        lines.append(f"| {v['name']} | " + " | ".join(cells) + f" | {model.shown_bound(v) or '–'} | "
                     f"{predicted_cell(v)} | {_number(v['requests_per_sec'])} | {ratio_cell(v)} |")
    lines.append("")
    for v in variants:
        why = (v.get("bounds_arithmetic") or {}).get(v.get("bound_by"), v.get("prediction", ""))
        bound = v["bounds"].get(v.get("bound_by"), v["predicted_requests_per_sec"])
        line = f"- **{v['name']}**: {why} = {_number(bound)} req/s"
        queueing = queueing_below_bound(v)
        if queueing:
            line += f"; {model.queueing_arithmetic(queueing)}"
        convoy = convoy_clause(v)
        if convoy:
            line += f"; {convoy}"
        calibration = v.get("calibration")
        if calibration and calibration.get("server_cpu_ms") is not None:
            low, high = calibration["server_cpu_ms_spread"]
            line += (f"; server CPU per request {calibration['server_cpu_ms']:.3g} ms before the run "
                     f"(last {calibration['rounds']} rounds: {low:.3g}–{high:.3g} ms), "
                     f"{v['server_cpu_ms_per_request']:.3g} ms during it" if v.get("server_cpu_ms_per_request") else "")
        lines.append(line + ".")
    return "\n".join(lines) + "\n"


# A pool measure's line in a timeline figure: solid for busy threads, dashed for the threads the
# pool has (busy meets it where the pool binds), dotted for tasks or requests waiting.
TIMELINE_STYLES = {"busy": "dt 1", "active": "dt 1", "threads": "dt 2", "queued": "dt 3", "awaiting": "dt 3"}
TIMELINE_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]
# In a timeline figure's series, the pool each variant ran its work on (its `pool`); "jvm" with
# "threads" is the JVM's platform threads.
OWN_POOL = "@pool"


def timeline_svg(results: dict, names: list[str], series: list[tuple[str, str, str]], title: str,
                 width: int = 760, panel_height: int = 230) -> str:
    """One panel per variant in `names` (those with a timeline), over the seconds of its measured
    run: each (pool, measure, label) of `series` the variant's timeline has (OWN_POOL: the
    variant's own pool, named in the label where it says OWN_POOL), on the left axis,
    and the server's CPU in cores busy on the right one (its cores, as the JVM saw them, at the
    top). A bound resource shows as a line held at its limit."""
    by_name = {v["name"]: v for v in results["variants"]}
    variants = [by_name[n] for n in names if n in by_name and by_name[n].get("timeline")]
    if not variants:
        raise LabError(f"none of {', '.join(names)} has a timeline in this run: measure again with a "
                       "timeline (scripts/lab run without --timeline-hz 0)")
    cores = results.get("pools", {}).get("available_processors") or 1
    blocks, panels = [], []
    pools_colour = {pool: TIMELINE_COLOURS[i % len(TIMELINE_COLOURS)]
                    for i, pool in enumerate(dict.fromkeys(p for p, _, _ in series))}
    for index, v in enumerate(variants):
        t = v["timeline"]
        measured = {**{(pool, m): values for pool, found in t["pools"].items() for m, values in found.items()},
                    ("jvm", "threads"): t["jvm_threads"]}
        # OWN_POOL stands for the variant's own pool (lab 03's database-N).
        present = [(pool, measure, label.replace(OWN_POOL, v.get("pool") or "?"))
                   for pool, measure, label in series
                   if ((v.get("pool") if pool == OWN_POOL else pool), measure) in measured]
        columns = ([t["t_s"]] + [measured[((v.get("pool") if pool == OWN_POOL else pool), measure)]
                                 for pool, measure, _ in present] + [t["cpu_cores"]])
        rows = "\n".join(" ".join("?" if x is None else f"{x:g}" for x in row) for row in zip(*columns))
        blocks.append(f"$v{index} << EOD\n{rows}\nEOD")
        plots = [f"$v{index} using 1:{column + 2} with lines lw 2 {TIMELINE_STYLES.get(measure, 'dt 1')} "
                 f'lc rgb "{pools_colour[pool]}" title "{label}"'
                 for column, (pool, measure, label) in enumerate(present)]
        plots.append(f'$v{index} using 1:{len(present) + 2} axes x1y2 with lines lw 1 lc rgb "#aaaaaa" '
                     f'title "server CPU (cores, right)"')
        bound = model.shown_bound(v) or "nothing named"
        # Threads set the scale: a dispatcher's queue counts tasks, not requests (Akka HTTP's own
        # work queues there too, in bursts of hundreds), and would flatten the threads' lines.
        kept = [x for (_, measure, _), values in zip(present, columns[1:-1]) if measure != "queued"
                for x in values if x is not None]
        top = max(1.0, 1.25 * max(kept, default=1.0))
        queued = [x for (_, measure, _), values in zip(present, columns[1:-1]) if measure == "queued"
                  for x in values if x is not None]
        cut = ", queued tasks cut off at the top" if queued and max(queued) > top else ""
        panels.append(f'set title "{v["name"]}: {v["requests_per_sec"]:,.0f} req/s, bound by {bound}{cut}" font ",12"\n'
                      + f"set yrange [0:{top:g}]\n"
                      + ("set xlabel \"seconds into the measured run\"\n" if index == len(variants) - 1 else "unset xlabel\n")
                      + "plot " + ", \\\n     ".join(plots))
    script = svg_header(width=width, height=panel_height * len(variants) + 40) + f"""
set datafile missing "?"
set grid ytics
set key outside right top vertical Left reverse font ",10" samplen 2 spacing 0.9 maxcols 1
set ylabel "threads or tasks"
set y2range [0:{cores * 1.05:g}]
set y2tics 0, {cores / 2:g}, {cores:g} nomirror
set ytics nomirror
set lmargin 9
{chr(10).join(blocks)}
set multiplot layout {len(variants)},1 title "{title}"
{chr(10).join(panels)}
unset multiplot
"""
    return gnuplot_svg(script)


def timeline_samples(v: dict, pool: str, measure: str) -> list:
    """A pool's measure over a variant's timeline, the samples that have it (a gauge that could
    not be read has none): [] without a timeline, that pool or that measure."""
    found = (((v.get("timeline") or {}).get("pools") or {}).get(pool) or {}).get(measure, [])
    return [x for x in found if x is not None]


def timeline_sentence(v: dict, pool: str, size: int | None = None) -> str | None:
    """How one pool fared in a variant's timeline: the share of samples with every thread busy,
    and the median queue, e.g. for the book's reading of a timeline figure."""
    found = (v.get("timeline") or {}).get("pools", {}).get(pool)
    if not found or "busy" not in found:
        return None
    size = size or _pool_size(v, pool)
    busy = timeline_samples(v, pool, "busy")
    queued = sorted(timeline_samples(v, pool, "queued"))
    if not busy or not size:
        return None
    full = sum(x >= size for x in busy) / len(busy)
    sentence = (f"{v['name']}: all {size} threads of `{pool}` busy in {full:.0%} of {len(busy)} timeline "
                f"samples (median {sorted(busy)[len(busy) // 2]:g} busy)")
    if queued:
        sentence += f", with a median of {queued[len(queued) // 2]:g} tasks queued"
    return sentence + "."


def timeline_notes(results: dict) -> list[str]:
    """A timeline_sentence for each variant, on the pool it ran its work on (its size as the
    variant's server reported it; a set-up on a server of its own may resize it)."""
    sizes = {name: pool.get("threads") for name, pool in results["pools"]["pools"].items()}
    return [sentence for v in results["variants"] if v.get("pool")
            and (sentence := timeline_sentence(v, v["pool"], v.get("pool_threads") or sizes.get(v["pool"])))
            is not None]


def _pool_size(v: dict, pool: str) -> int | None:
    threads = timeline_samples(v, pool, "threads")
    return int(max(threads)) if threads else None


# -- flame graphs from a committed --profile run --------------------------------------

# The profiled run a lab's report draws its flame graphs from (`scripts/lab run NN --profile
# ... --results-dir labs/NN-*/results/profile --no-report`): a run of its own, so that the
# recorder's cost never touches the numbers of the lab's main run.
PROFILE_DIR = "profile"


def profiled_run(lab) -> dict | None:
    return committed_run(lab, PROFILE_DIR)


def profiled_variant(run: dict, name: str) -> dict:
    """A variant of the profiled run, which must have been profiled."""
    for v in run["variants"]:
        if v["name"] == name:
            if not v.get("profile"):
                raise BadResults(f"the profiled run's {name} has no profile: was it run with --profile?")
            return v
    raise BadResults(f"the profiled run has no variant {name!r} (it has {', '.join(v['name'] for v in run['variants'])})")


def profile_stacks(lab, v: dict):
    """The folded stacks of a variant of the lab's profiled run, read and checked."""
    return profile.read(profile.folded_file(lab.dir / "results" / PROFILE_DIR, v["profile"]))


def profile_column_facts(lab, names: list[str], column_facts: list[str], columns: list[tuple]) -> dict:
    """Per set-up in `names` of the lab's committed --profile run: its record, and the share of its
    samples under each of `columns` ((title, match) as pul.profile.share_under takes it), named
    profile_FACT_SETUP (FACT from `column_facts`, in the columns' order; SETUP the set-up's name
    as a claim writes it): {name: (record, {fact: share})}, {} without a profiled run."""
    run = profiled_run(lab)
    if run is None:
        return {}
    found = {}
    for name in names:
        v = profiled_variant(run, name)
        stacks = profile_stacks(lab, v)
        found[name] = (v, {f"profile_{fact}_{claim_key(name)}": round(profile.share_under(stacks, match), 4)
                           for fact, (_, match) in zip(column_facts, columns)})
    return found


def flame_figures(lab, run: dict, figures: dict[str, str], width: int = 1000, min_width: float = 0.5
                  ) -> dict[str, str]:
    """{book file: the flame graph of a variant of the lab's profiled run} for {book file:
    variant name} (pul.profile.flame_svg), leaving out frames under `min_width` percent (5 px at
    1,000 px: too narrow to read, and they weigh on the page). Where they cannot be drawn (no inferno, and no cargo
    to install it: a lab VM), none: the committed figures stay as they are, drawn from the
    committed profiled run that a lab's own runs never replace."""
    if not profile.can_draw():
        return {}
    drawn = {}
    for path, name in figures.items():
        v = profiled_variant(run, name)
        drawn[path] = profile.flame_svg(profile_stacks(lab, v), profile.title(lab.name, v),
                                        profile.subtitle(v["profile"]), width=width, min_width=min_width)
    return drawn


def profile_markdown(lab, run: dict, names: list[str], columns: list[tuple[str, object]],
                     main: dict | None = None) -> str:
    """A table of the profiled variants: throughput (and the lab's main, unprofiled run's, when
    given: what the recorder cost, give or take two runs' spread), samples, and each column's
    share of the samples (a column: (heading, predicate on a frame), a sample counting when any
    frame of its stack matches), then the run's machine line and command."""
    unprofiled = {v["name"]: v["requests_per_sec"] for v in (main or {}).get("variants", [])}
    # The sampler skips the JIT compiler's threads: their share of the core is CPU no sample shows.
    head = ["set-up", "req/s", *(["req/s in the main run (no profile)"] if main else []), "server CPU ms/req",
            "JIT's share of the core", "samples", *[c[0] for c in columns]]
    lines = ["| " + " | ".join(head) + " |", "|:---|" + "---:|" * (len(head) - 1)]
    for name in names:
        v = profiled_variant(run, name)
        stacks = profile_stacks(lab, v)
        shares = [f"{profile.share_under(stacks, match):.0%}" for _, match in columns]
        jit = "–" if v.get("jit_share") is None else f"{v['jit_share']:.0%}"
        plain = ([f"{unprofiled[name]:,.0f}" if name in unprofiled else "–"] if main else [])
        lines.append(f"| {name} | {v['requests_per_sec']:,.0f} | " + "".join(f"{x} | " for x in plain)
                     + f"{v['server_cpu_ms_per_request']:.3f} | {jit} | "
                     f"{v['profile']['samples']:,} | " + " | ".join(shares) + " |")
    return ("\n".join(lines) + "\n\n" + machine_line(run) + f" Command: `{run['command']}`.\n")

