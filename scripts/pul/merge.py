"""`scripts/merge-results`: the room's results in one table and one figure per lab.

In a workshop every student runs the same lab on a different laptop. Collect each
student's `labs/NN-name/results/*.json` (a shared folder, a USB stick, a chat upload),
then merge them: one markdown table per lab and parameter set, with each machine's
facts and its numbers side by side, the spread (slowest, median, fastest) per variant,
and an SVG figure with one group of bars per machine. That is where the room sees that
the same code, under the same load, gives different numbers on different machines,
and that the *ratio* to the Little's-law prediction moves much less than the numbers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path

from . import report, schema
from .errors import LabError, UsageError

# The files come from students' machines (a USB stick, a chat upload): untrusted. Each is read
# only up to this size, checked against the results schema, and its names must be plain text.
MAX_FILE_BYTES = 20 * 1024 * 1024
SCHEMA_PATH = Path(__file__).resolve().parents[1] / "results.schema.json"
# ASCII characters a name may have where it reaches the markdown table or the gnuplot script: none
# with a meaning in markdown (| ` * [ < \ ...), in gnuplot (" ' ` @ ...) or in a shell.
NAME_PUNCTUATION = " ._=+:,()/@-"
NAME_RULE = f"letters, digits, space and {' '.join(NAME_PUNCTUATION.strip())}"
MAX_NAME = 200


def _is_results(data: object) -> bool:
    return isinstance(data, dict) and {"lab", "variants", "machine", "params"} <= set(data) \
        and isinstance(data["variants"], list)


def _shown(path: Path) -> str:
    """A path as a message shows it: a name with control characters (a terminal escape) quoted."""
    text = str(path)
    return text if text.isprintable() else ascii(text)


def _inside(path: Path, folder: Path) -> bool:
    """Whether `path`, its symbolic links followed, is in `folder` (also followed)."""
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except (ValueError, OSError, RuntimeError):
        return False


def find_files(paths: list[Path], warn=print) -> list[Path]:
    """The .json files under the folders (and the files) given. A symbolic link that leads out of
    the folder it was found in is skipped: a student's folder could point at any file here."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.json") if p.is_file())
        elif path.is_file():
            found = [path]
        elif path.exists() or path.is_symlink():
            warn(f"skipped {_shown(path)}: not a regular file")
            continue
        else:
            raise UsageError(f"no such file or directory: {path}")
        folder = path if path.is_dir() else path.parent
        for file in found:
            if _inside(file, folder):
                files.append(file)
            else:
                warn(f"skipped {_shown(file)}: a symbolic link to {_shown(file.resolve())}, "
                     f"outside {_shown(folder)}")
    return files


def source_name(path: Path) -> str:
    """Who sent it: the first directory above labs/ or results/, else the file's folder."""
    parts = path.resolve().parts
    for marker in ("labs", "results"):
        if marker in parts:
            index = parts.index(marker)
            if index > 0:
                return parts[index - 1]
    return path.parent.name or path.stem


def _not_json(constant: str):
    raise ValueError(f"{constant} is not JSON")


def read_json(path: Path) -> object:
    """A file's JSON, read up to MAX_FILE_BYTES; ValueError (or OSError) says why not."""
    with path.open("rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB, far more than a results file")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_not_json)
    except RecursionError:
        raise ValueError("nested too deeply")


def unsafe_name(text: object) -> str | None:
    """Why `text` cannot be shown in the table or the figure (None: it can)."""
    if not isinstance(text, str):
        return f"is not text ({json.dumps(text)[:40]})"
    if not text.strip():
        return "is empty"
    if len(text) > MAX_NAME:
        return f"is longer than {MAX_NAME} characters"
    for char in text:
        if char.isascii():
            if not (char.isalnum() or char in NAME_PUNCTUATION):
                return f"has the character {char!r} (allowed: {NAME_RULE})"
        elif unicodedata.category(char)[0] not in "LMNS":
            # Letters, marks, numbers and symbols of any script; not control or format characters
            # (a right-to-left override), nor line separators.
            return f"has the character {ascii(char)} (allowed: {NAME_RULE})"
    return None


def unsafe_fields(data: dict, source: str) -> list[str]:
    """The names this file would put in the markdown table or the gnuplot script that are not plain
    text, each as `field 'value' has ...`."""
    machine = data["machine"]
    named = [("folder name", source), ("lab", data["lab"]),
             ("machine.cpu_model", machine.get("cpu_model", "?"))]
    if machine.get("jdk") is not None:
        named.append(("machine.jdk", machine["jdk"]))
    named += [(f"variants[{i}].name", v["name"]) for i, v in enumerate(data["variants"])]
    for key, value in data["params"].items():
        named.append((f"params key {key!r}"[:60], key))
        if value is not None and not isinstance(value, (bool, int, float)):
            named.append((f"params.{key}", value))
    problems = []
    for field, value in named:
        why = unsafe_name(value)
        if why:
            shown = ascii(value) if isinstance(value, str) and len(value) <= 80 else "(value not shown)"
            problems.append(f"{field} {shown} {why}")
    return problems


def load_runs(files: list[Path], warn=print) -> list[dict]:
    """Results files, each once (latest.json repeats a stamped file), with where they came from.
    A file that is not JSON, does not match the results schema or has names that are not plain
    text is skipped, and `warn` says why, naming the file."""
    results_schema = schema.load(SCHEMA_PATH)
    runs, seen = [], set()
    for path in files:
        try:
            data = read_json(path)
        except (OSError, UnicodeDecodeError, ValueError) as error:
            warn(f"skipped {_shown(path)}: not readable JSON ({error})")
            continue
        if not _is_results(data):
            warn(f"skipped {_shown(path)}: not a lab results file")
            continue
        problems = schema.errors(data, results_schema)
        if problems:
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            warn(f"skipped {_shown(path)}: does not match scripts/results.schema.json: "
                 f"{'; '.join(problems[:3])}{more}")
            continue
        problems = unsafe_fields(data, source_name(path))
        if problems:
            warn(f"skipped {_shown(path)}: {'; '.join(problems)}")
            continue
        key = (data.get("run_id"), data["lab"], data.get("started_at"),
               json.dumps(data["machine"], sort_keys=True))
        if key in seen:
            continue
        seen.add(key)
        runs.append({**data, "_source": source_name(path), "_path": str(path)})
    return runs


def groups(runs: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """Runs comparable with each other: same lab, same parameters; one row per student.

    A student who ran the same lab with the same parameters more than once is
    shown with their newest run, so each machine counts once in the spread.
    """
    newest: dict[tuple[str, str, str], dict] = {}
    for run in runs:
        key = (run["lab"], json.dumps(run["params"], sort_keys=True), run["_source"])
        if key not in newest or (run.get("started_at") or "") > (newest[key].get("started_at") or ""):
            newest[key] = run
    grouped: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for (lab, params, _), run in newest.items():
        grouped[(lab, params)].append(run)
    for members in grouped.values():
        members.sort(key=lambda r: r["_source"])
    return dict(sorted(grouped.items()))


def variant_names(runs: list[dict]) -> list[str]:
    names: list[str] = []
    for run in runs:
        for v in run["variants"]:
            if v["name"] not in names:
                names.append(v["name"])
    return names


def _cell(v: dict | None) -> str:
    if v is None:
        return "–"
    text = f"{v['requests_per_sec']:,.0f}"
    if v.get("measured_over_predicted") is not None:
        text += f" ({v['measured_over_predicted']:.2f})"
    if v.get("failed") or v.get("non_2xx"):
        text += f" ⚠ {v.get('failed', 0) + v.get('non_2xx', 0)} errors"
    return text


def _machine(run: dict) -> str:
    m = run["machine"]
    pin = (m.get("pinning") or {})
    pinned = "pinned" if pin.get("server_cpus") is not None else "not pinned"
    return f"{m.get('cpu_model', '?')}, {m.get('cores', '?')} cores, {m.get('memory_gib', '?')} GiB, " \
           f"{m.get('jdk', '?')}, {pinned}"


def markdown(grouped: dict[tuple[str, str], list[dict]], figures: dict[tuple[str, str], str]) -> str:
    lines = ["# The room's results", "",
             f"{sum(len(r) for r in grouped.values())} runs from "
             f"{len({r['_source'] for rs in grouped.values() for r in rs})} machines, merged by "
             "`scripts/merge-results`. Each cell: requests/s (measured ÷ predicted).", ""]
    for (lab, params_json), runs in grouped.items():
        params = json.loads(params_json)
        names = variant_names(runs)
        lines += [f"## {lab}", "",
                  "Parameters: " + (", ".join(f"`{k}={v}`" for k, v in params.items()) or "defaults"), ""]
        lines.append("| # | who | machine | " + " | ".join(names) + " |")
        lines.append("|---:|:---|:---|" + "---:|" * len(names))
        for number, run in enumerate(runs, 1):
            by_name = {v["name"]: v for v in run["variants"]}
            lines.append(f"| {number} | {run['_source']} | {_machine(run)} | "
                         + " | ".join(_cell(by_name.get(n)) for n in names) + " |")
        lines += ["", "| variant | slowest | median | fastest | fastest ÷ slowest | ratio to prediction (range) |",
                  "|:---|---:|---:|---:|---:|:---|"]
        for name in names:
            values = [v for r in runs for v in r["variants"] if v["name"] == name]
            rates = [v["requests_per_sec"] for v in values]
            ratios = [v["measured_over_predicted"] for v in values if v.get("measured_over_predicted") is not None]
            spread = f"{max(rates) / min(rates):.2f}×" if min(rates) > 0 else "–"
            ratio_text = f"{min(ratios):.2f} – {max(ratios):.2f}" if ratios else "no prediction"
            lines.append(f"| {name} | {min(rates):,.0f} | {statistics.median(rates):,.0f} | {max(rates):,.0f} "
                         f"| {spread} | {ratio_text} |")
        if (lab, params_json) in figures:
            lines += ["", f"![{lab}: requests/s per machine]({figures[(lab, params_json)]})"]
        lines.append("")
    return "\n".join(lines)


def _gnuplot_string(text: str) -> str:
    """A gnuplot string constant that shows `text` as it is. Single-quoted: gnuplot substitutes
    backquotes (a shell command) everywhere but in single-quoted strings, and expands backslash
    escapes only in double-quoted ones (gnuplot 5.4 `help substitution backquotes`, `help quotes`);
    '' is the one escape. A line break would end the command, so none survives."""
    return "'" + " ".join(text.splitlines()).replace("'", "''") + "'"


def _data_label(text: str) -> str:
    """A label in an inline data block: double-quoted, so without the quote and line breaks that
    would end it (lines of a data block are data, never commands: no backquote substitution)."""
    return '"' + " ".join(text.splitlines()).replace('"', "'") + '"'


def figure(lab: str, runs: list[dict]) -> str:
    """One group of bars per machine, one bar per variant: requests/s."""
    names = variant_names(runs)
    rows = []
    for number, run in enumerate(runs, 1):
        by_name = {v["name"]: v for v in run["variants"]}
        cells = " ".join(f"{by_name[n]['requests_per_sec']:.1f}" if n in by_name else "NaN" for n in names)
        label = _data_label(f"#{number} {run['_source']}")
        rows.append(f"{label} {cells}")
    plots = ", ".join(
        f"$data using {i + 2}{':xtic(1)' if i == 0 else ''} title {_gnuplot_string(n)} noenhanced"
        for i, n in enumerate(names))
    width = max(760, 120 + 70 * len(runs) * max(1, len(names)) // 2)
    script = report.svg_header(width=min(width, 1600), height=440) + f"""
set title {_gnuplot_string(lab + ": the same lab on every machine in the room")} noenhanced
{report.CLUSTERED_BARS}set ylabel "requests per second"
set yrange [0:*]
set grid ytics
set key outside right top
set xtics nomirror rotate by -30 noenhanced
$data << EOD
{chr(10).join(rows)}
EOD
plot {plots}
"""
    return report.gnuplot_svg(script)


def slug(lab: str, index: int, count: int) -> str:
    return f"room-{lab}" + (f"-{index}" if count > 1 else "") + ".svg"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/merge-results",
        description="Merge many machines' lab results (results/*.json) into one markdown table and one "
                    "SVG figure per lab: how the room's machines differ.")
    parser.add_argument("paths", nargs="+", type=Path,
                        help="results files, or folders searched for them (e.g. one folder per student)")
    parser.add_argument("--out", type=Path, default=Path("room-results"),
                        help="where to write room-results.md and the figures (default ./room-results)")
    parser.add_argument("--lab", action="append", default=[], metavar="NAME",
                        help="only this lab (repeatable; e.g. 01-non-blocking)")
    parser.add_argument("--no-figures", action="store_true", help="tables only (no gnuplot needed)")
    options = parser.parse_args(argv)
    try:
        warn = lambda m: print(m, file=sys.stderr)  # noqa: E731
        runs = load_runs(find_files(options.paths, warn), warn=warn)
        if options.lab:
            runs = [r for r in runs if any(r["lab"] == w or r["lab"].startswith(w.zfill(2) + "-")
                                           for w in options.lab)]
        if not runs:
            raise UsageError("no lab results found in " + ", ".join(map(str, options.paths)))
        grouped = groups(runs)
        options.out.mkdir(parents=True, exist_ok=True)
        figures: dict[tuple[str, str], str] = {}
        if not options.no_figures:
            per_lab: dict[str, int] = defaultdict(int)
            totals: dict[str, int] = defaultdict(int)
            for lab, _ in grouped:
                totals[lab] += 1
            for key, members in grouped.items():
                per_lab[key[0]] += 1
                name = slug(key[0], per_lab[key[0]], totals[key[0]])
                (options.out / name).write_text(figure(key[0], members))
                figures[key] = name
        table = markdown(grouped, figures)
        (options.out / "room-results.md").write_text(table)
    except LabError as error:
        print(f"scripts/merge-results: error: {error}", file=sys.stderr)
        return error.exit_code
    print(table)
    print(f"Wrote {options.out / 'room-results.md'}"
          + (f" and {len(figures)} figure(s) in {options.out}/" if figures else ""))
    return 0
