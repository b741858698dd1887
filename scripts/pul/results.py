"""Results files (the contract other tools read) and the tables made from them."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from . import model, schema
from .errors import BadResults, WriteFailed

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "scripts" / "results.schema.json"
SCHEMA_VERSION = 1


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def stamp(moment: datetime) -> str:
    """A timestamp usable in file names on every OS (no colons)."""
    return moment.strftime("%Y-%m-%dT%H-%M-%SZ")


# What stamp() gives: the one name a run's own files have (`<stamp>.json`, `<stamp>/`).
STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z")


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader, a crash or a full disk leaves either the old
    file or the new one, never half of one (see _replace_atomically)."""
    _replace_atomically(Path(path), lambda tmp: tmp.write_text(text, encoding="utf-8"))


def copy_atomic(source: Path, path: Path) -> None:
    """Copy `source` to `path`, atomically like write_text_atomic."""
    _replace_atomically(Path(path), lambda tmp: shutil.copyfile(source, tmp))


def _replace_atomically(path: Path, fill) -> None:
    """`fill(tmp)` writes a temporary file in `path`'s folder; it is flushed to disk, then
    renamed over `path`. A failure removes the temporary file, leaves `path` as it was and
    raises WriteFailed naming `path`."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = _mode_for(path)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
        fill(tmp)
        _fsync(tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        tmp = None
        with contextlib.suppress(OSError):  # some file systems cannot flush a folder; the file is written
            _fsync(path.parent)
    except OSError as error:
        raise WriteFailed(f"could not write {path}: {error.strerror or error}"
                          + (" (the earlier file is unchanged)" if path.is_file() else "")) from error
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()


def _mode_for(path: Path) -> int:
    """The mode the file has, or the one a plain open() would give a new file (mkstemp's is 0600)."""
    with contextlib.suppress(OSError):
        return path.stat().st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _fsync(path: Path) -> None:
    """Flush a file's data, or a folder's entries (the rename), to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def keeps_one_run(lab_dir: Path, results_dir: Path) -> bool:
    """Whether a run written to `results_dir` replaces the run there: in the lab's own results/
    folder or any folder inside it (the committed runs the book reads), not elsewhere."""
    own, chosen = (lab_dir / "results").resolve(), results_dir.resolve()
    return chosen == own or own in chosen.parents


def write(results: dict, results_dir: Path, run_stamp: str, replace: bool = False) -> Path:
    """`<stamp>.json` and the same text as `latest.json`, each written atomically; with
    `replace`, the earlier runs' files are then removed: only after both are written, so a
    failed write leaves the earlier run in place."""
    path = results_dir / f"{run_stamp}.json"
    text = json.dumps(results, indent=2) + "\n"
    write_text_atomic(path, text)
    copy_atomic(path, results_dir / "latest.json")
    if replace:
        remove_earlier_runs(results_dir, run_stamp)
    return path


def earlier_runs(results_dir: Path, run_stamp: str) -> list[Path]:
    """The other runs' `<stamp>.json` files and `<stamp>/` folders, and nothing else."""
    return sorted(entry for entry in results_dir.iterdir() if _run_stamp(entry) not in (None, run_stamp))


def _run_stamp(entry: Path) -> str | None:
    """The stamp a run's own file or folder is named by; None for anything a reader may have
    put there (notes, a symbolic link) and for latest.json."""
    if entry.is_symlink():
        return None
    if entry.is_dir():
        name = entry.name
    elif entry.is_file() and entry.suffix == ".json":
        name = entry.stem
    else:
        return None
    return name if STAMP.fullmatch(name) else None


def remove_earlier_runs(results_dir: Path, run_stamp: str) -> list[Path]:
    removed = earlier_runs(results_dir, run_stamp)
    for entry in removed:
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    return removed


def raw_text(results_dir: Path, relative: str) -> str | None:
    """A run's raw output (ab's report, say) that its record names relative to `results_dir`: the
    file in the working tree, or, where a later run has replaced the run (a student's `scripts/lab
    run` deletes the committed run's files), as git's HEAD holds it, so that the committed run a
    test checks reads its own files. None if neither has it, or if the name leaves the folder (a
    record is untrusted input)."""
    name = Path(relative)
    if name.is_absolute() or ".." in name.parts:
        return None
    path = results_dir / name
    if path.is_file():
        return path.read_text(errors="replace")
    return committed_text(results_dir, name.as_posix())


def committed_text(folder: Path, relative: str) -> str | None:
    """A file as git's HEAD holds it, named relative to `folder` (a folder of the checkout); None
    outside a git checkout or where HEAD has no such file."""
    shown = subprocess.run(["git", "-C", str(folder), "show", f"HEAD:./{relative}"],
                           capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL)
    return shown.stdout if shown.returncode == 0 else None


def load(path: Path) -> dict:
    """A results file, checked against scripts/results.schema.json (by pul/schema.py) before the
    tables and the book read it; BadResults names the file and what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise BadResults(f"cannot read {path}: {error.strerror or error}") from error
    except ValueError as error:
        raise BadResults(f"{path} is not valid JSON ({error}); a run that was cut off? "
                         "Restore it with `git checkout -- FILE` or measure again") from error
    problems = schema.errors(data, schema.load(SCHEMA))
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise BadResults(f"{path} is not a complete results file ({SCHEMA.name}): {shown}")
    return data


# -- tables ----------------------------------------------------------------

def _fmt(value, digits: int = 0) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def predicted_cell(v: dict) -> str:
    """The prediction, or its range ('204–352': from the lower end, which measured/predicted divides
    by, to the upper; pul.model.CONVOY)."""
    upper = v.get("predicted_upper_requests_per_sec")
    low = _fmt(v["predicted_requests_per_sec"], 0)
    return f"{low}–{_fmt(float(upper), 0)}" if upper else low


def ratio_cell(v: dict) -> str:
    """Measured over predicted; for a range, over each end ('1.51 / 0.95': over its floor, a convoy
    or a round trip in series, then over its upper end), so that a run inside its range reads as
    such: the first at least 1, the second at most 1."""
    ratio, upper = v.get("measured_over_predicted"), v.get("predicted_upper_requests_per_sec")
    if ratio is None or not upper:
        return _fmt(ratio, 2)
    return f"{ratio:.2f} / {v['requests_per_sec'] / upper:.2f}"


STANDARD_COLUMNS = [
    # (heading, function of a variant, right-aligned)
    ("variant", lambda v: v["name"], False),
    ("req/s", lambda v: _fmt(v["requests_per_sec"], 0), True),
    ("mean ms", lambda v: _fmt(v["mean_ms"], 1), True),
    ("p50 ms", lambda v: _fmt(v["p50_ms"], 1), True),
    ("p99 ms", lambda v: _fmt(v["p99_ms"], 1), True),
    ("failed", lambda v: _fmt(v["failed"]), True),
    ("non-2xx", lambda v: _fmt(v["non_2xx"]), True),
    ("server CPU", lambda v: f"{v['server_cpu_utilization']:.0%}" if v.get("server_cpu_utilization") is not None else "–", True),
    ("predicted req/s", predicted_cell, True),
    ("bound by", lambda v: _fmt(model.shown_bound(v)), False),
    ("measured/predicted", ratio_cell, True),
]
# The model's columns, for a lab's own table_columns() to end with.
MODEL_COLUMNS = STANDARD_COLUMNS[-3:]


def rows(results: dict, columns=None) -> tuple[list[str], list[list[str]], list[bool]]:
    columns = columns or STANDARD_COLUMNS
    headings = [c[0] for c in columns]
    body = [[c[1](v) for c in columns] for v in results["variants"]]
    return headings, body, [c[2] for c in columns]


def text_table(results: dict, columns=None) -> str:
    headings, body, right = rows(results, columns)
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(headings)]

    def line(cells):
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    return "\n".join([line(headings), line(["-" * w for w in widths]), *(line(r) for r in body)])


def markdown_table(results: dict, columns=None) -> str:
    headings, body, right = rows(results, columns)
    out = ["| " + " | ".join(headings) + " |",
           "|" + "|".join("---:" if r else ":---" for r in right) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(out) + "\n"


def machine_line(results: dict) -> str:
    """One sentence saying where and when a result was measured."""
    m = results["machine"]
    pin = m.get("pinning") or {}
    pinning = (f"server on CPU {pin['server_cpus']}, load generator on CPU {pin['load_cpus']}"
               if pin.get("server_cpus") is not None else "not pinned")
    if results.get("target"):
        # The machine facts are the load generator's; the server ran elsewhere.
        pinning = (f"load generator only, against the server at {results['target']} on another machine "
                   f"({results['pools'].get('available_processors', '?')} processors available to its JVM)")
    jvm = m.get("server_jvm") or {}
    gc = (f"; server JVM: {jvm['gc']} GC, {m.get('server_available_processors', '?')} processor(s) available"
          if jvm.get("gc") else "")
    mode = f"; {results['mode']} mode" if results.get("mode") else ""
    # Servers on runtimes newer than the JDK that built them (pul.runtimes).
    runtimes = "; ".join(f"{name}: {r['jdk']}" for name, r in (m.get("runtimes") or {}).items())
    jdk = f"{m['jdk']} (build), servers on {runtimes}" if runtimes else m["jdk"]
    return (f"Measured {results['started_at'][:10]} on {m['cpu_model']} ({m['cores']} cores, "
            f"{m['memory_gib']} GiB), {m['os']}, {jdk}, Play {m['play']}"
            f"{' on ' + m['actors'] if m.get('actors') else ''}, ab {m['ab']}; {pinning}{gc}; "
            f"load average {m['load_average_at_start']} at start{steadiness_clause(m)}{mode}.")


def steadiness_clause(m: dict) -> str:
    """How steady the server's core was around the run (machine.steadiness), for the machine line:
    the slowest sample of the probes that ran, and the lower of their medians, each as a share of
    its own probe's fastest sample; the same of the load generator's core, where it was probed."""
    found = {when: probe for when, probe in (m.get("steadiness") or {}).items() if probe}
    if not found:
        return ""
    sample_s = next(iter(found.values()))["sample_s"]
    pinned = (m.get("pinning") or {}).get("server_cpus") is not None
    where = "on the server's core" if pinned else "on any core"
    load = _worst_samples(m.get("load_steadiness"))
    load_clause = (f" (on the load generator's: {load[0]:.0%} at worst, {load[1]:.0%} at the slower median)"
                   if load else "")
    least, median = _worst_samples(found)
    return (f"; a fixed loop {where}, timed in {sample_s:g}-s samples {' and '.join(found)} the run, "
            f"ran at {least:.0%} of its fastest at worst, {median:.0%} at the slower median{load_clause}")


def _worst_samples(steadiness: dict | None) -> tuple[float, float] | None:
    """A core's probes' slowest sample and lower median, each against its own probe's fastest
    (None: no probe ran)."""
    probes = [probe for probe in (steadiness or {}).values() if probe]
    if not probes:
        return None
    return min(p["least_share"] for p in probes), min(p["median_share"] for p in probes)
