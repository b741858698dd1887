"""The flake census: `scripts/test --repeat N PART...` runs test parts N times, each time from a
fresh clone, and records every measured band's value, edges and margin (pul.testing.band_miss
writes them to PUL_CENSUS_FILE) with each part's outcome and time.

    scripts/test --repeat 10 PART...        ten fresh clones, each running `scripts/test PART...`
    scripts/test --census-summary DIR...     merge census folders into one summary (--out FILE)

A census folder (test-output/census/STAMP/ unless --census-dir) holds census.json (every
repetition: parts, times, failed tests, bands) and summary.md; each repetition's part logs are
kept in rep-K/, so a repeat never overwrites a failing part's log. A band's margin is how far
inside its interval the value was, as a share of the nearer edge (negative: it failed).

Bands sized from a census, not from the runs one happened to see: an assertion that fails in it,
or keeps only a few percent of margin, needs its model or its assertion fixed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import machine
from .pipes import tolerate_closed_output
from .procs import processes_with_env, wait_until
from .progress import clock
from .testing import CENSUS_VARIABLE

REPO = Path(__file__).resolve().parents[2]
# Marks every process of one repetition (scripts/test and all it starts), also those in sessions
# of their own, so that a stopped census waits for them before it removes their clone.
REPETITION_VARIABLE = "PUL_CENSUS_REPETITION"
PART_LINE = re.compile(r"^=== (?P<part>\S+): (?P<outcome>PASSED|FAILED) in (?P<seconds>\d+|\?)s"
                       r"(?:, CPU (?P<cpu>\d+)s)?")
FAILED_TEST = re.compile(r"^FAILED (?P<test>\S+)")
# A band that keeps less than this margin in any run is worth a look (the summary marks it).
THIN_MARGIN = 0.03


class CensusError(Exception):
    """Bad arguments or a repository the census cannot clone: said before any long work."""


def known_parts(repo: Path) -> list[str]:
    listed = subprocess.run([str(repo / "scripts" / "test"), "--list"], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, check=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.strip()]


def check_arguments(repo: Path, repeat: int, parts: list[str]) -> None:
    if not 1 <= repeat <= 100:
        raise CensusError(f"--repeat takes 1 to 100 repetitions, not {repeat}")
    if not parts:
        raise CensusError("name the parts to repeat (scripts/test --list shows them), e.g. "
                          "scripts/test --repeat 10 labNN")
    known = known_parts(repo)
    unknown = [p for p in parts if p not in known]
    if unknown:
        raise CensusError(f"unknown part(s) {', '.join(unknown)} (known: {', '.join(known)})")
    if subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        raise CensusError(f"{repo} is not a git checkout with a commit: the census clones it")


def uncommitted(repo: Path) -> bool:
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True).stdout
    return bool(status.strip())


def parse_log(text: str) -> tuple[dict, list[str]]:
    """{part: {"passed": bool, "seconds": int | None, "cpu": int | None}} and the failed tests, from
    scripts/test's output ("cpu": the part's CPU seconds, where the line gives them)."""
    parts, failed = {}, []
    for line in text.splitlines():
        found = PART_LINE.match(line)
        if found:
            seconds = found["seconds"]
            parts[found["part"]] = {"passed": found["outcome"] == "PASSED",
                                    "seconds": int(seconds) if seconds.isdigit() else None,
                                    "cpu": int(found["cpu"]) if found["cpu"] else None}
        test = FAILED_TEST.match(line)
        if test:
            failed.append(test["test"])
    return parts, failed


def read_bands(path: Path) -> list[dict]:
    if not path.exists():
        return []
    bands = []
    for line in path.read_text().splitlines():
        try:
            bands.append(json.loads(line))
        except ValueError:
            continue  # a line cut short by a killed test
    return bands


class Repetition:
    """One fresh clone running `scripts/test PARTS`, in a session of its own: Ctrl-C, SIGTERM or
    SIGHUP of the census stops all of it and removes the clone."""

    def __init__(self, repo: Path, parts: list[str], folder: Path, commit: str | None = None):
        # `commit`: the census's own, so that a commit made while it runs does not change what the
        # later repetitions test (None: the clone's HEAD).
        self.repo, self.parts, self.folder, self.commit = repo, parts, folder, commit
        self.popen: subprocess.Popen | None = None
        self.token = f"{os.getpid()}-{time.monotonic_ns()}"

    def run(self) -> dict:
        self.folder.mkdir(parents=True, exist_ok=True)
        bands_file = self.folder / "bands.jsonl"
        log_path = self.folder / "test.log"
        started = time.monotonic()
        with self.scratch() as scratch:
            clone = Path(scratch) / "clone"
            subprocess.run(["git", "clone", "-q", str(self.repo), str(clone)], check=True,
                           stdin=subprocess.DEVNULL, capture_output=True)
            if self.commit:
                subprocess.run(["git", "-C", str(clone), "checkout", "-q", "--detach", self.commit], check=True,
                               stdin=subprocess.DEVNULL, capture_output=True)
            commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
            env = dict(os.environ, **{CENSUS_VARIABLE: str(bands_file), REPETITION_VARIABLE: self.token})
            with log_path.open("w") as log:
                self.popen = subprocess.Popen([str(clone / "scripts" / "test"), *self.parts], cwd=clone, env=env,
                                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True)
                try:
                    code = self.popen.wait()
                except BaseException:
                    self.stop()  # before the clone is removed: nothing of it may still run
                    raise
            # Each part's log, where the next repetition cannot overwrite it.
            for part_log in (clone / "test-output").glob("*.log"):
                shutil.copy2(part_log, self.folder / part_log.name)
        parts, failed = parse_log(log_path.read_text(errors="replace"))
        return {"commit": commit, "exit_code": code, "seconds": round(time.monotonic() - started), "parts": parts,
                "failed_tests": failed, "bands": read_bands(bands_file)}

    @contextlib.contextmanager
    def scratch(self):
        """A folder for the clone, removed after the repetition, and after whatever of it still
        runs (left_behind); a folder that cannot be removed is named, not raised over."""
        folder = Path(tempfile.mkdtemp(prefix="pul-census-"))
        try:
            yield folder
        finally:
            self.wait_for_the_rest()
            shutil.rmtree(folder, ignore_errors=True)
            if folder.exists():
                print(f"scripts/test --repeat: note: could not remove {folder} entirely; remove it by hand",
                      file=sys.stderr)

    def left_behind(self) -> list[int]:
        """The repetition's processes still running (REPETITION_VARIABLE)."""
        return processes_with_env(REPETITION_VARIABLE, self.token)

    def wait_for_the_rest(self, grace: float = 60) -> None:
        """Processes of the repetition that outlive scripts/test (a driver still cleaning up after
        SIGTERM, a process in a session of its own): given `grace` seconds, then killed."""
        if wait_until(lambda: not self.left_behind(), grace):
            return
        for pid in self.left_behind():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not self.left_behind(), 10)

    def stop(self) -> None:
        """Stop scripts/test and everything it started (its session), and wait for them."""
        if self.popen and self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(240)  # scripts/test stops its background part first
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        # Those outside its session get the same signal, and their grace.
        for pid in self.left_behind():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)


def summarise(census: list[dict]) -> dict:
    """Per part: runs, passes, times; per band (test and label): runs, failures, margins, values."""
    parts: dict[str, dict] = {}
    bands: dict[tuple[str, str], dict] = {}
    failed_tests: dict[str, int] = {}
    for rep in census:
        for name, outcome in rep["parts"].items():
            entry = parts.setdefault(name, {"runs": 0, "passed": 0, "seconds": []})
            entry["runs"] += 1
            entry["passed"] += outcome["passed"]
            if outcome["seconds"] is not None:
                entry["seconds"].append(outcome["seconds"])
        for test in rep["failed_tests"]:
            failed_tests[test] = failed_tests.get(test, 0) + 1
        # One record per band and repetition: a band checked twice in one run (a parametrised
        # check) keeps its smallest margin.
        seen: dict[tuple[str, str], dict] = {}
        for band in rep["bands"]:
            key = (band["test"], band["band"])
            if key not in seen or band["margin"] < seen[key]["margin"]:
                seen[key] = band
        for key, band in seen.items():
            entry = bands.setdefault(key, {"margins": [], "values": [], "low": band["low"], "high": band["high"]})
            entry["margins"].append(band["margin"])
            entry["values"].append(band["value"])
    rows = []
    for (test, label), entry in sorted(bands.items()):
        margins = entry["margins"]
        rows.append({"test": test, "band": label, "runs": len(margins), "failed": sum(m < 0 for m in margins),
                     "margin_min": min(margins), "margin_median": statistics.median(margins),
                     "margin_max": max(margins), "value_min": min(entry["values"]),
                     "value_max": max(entry["values"]), "low": entry["low"], "high": entry["high"]})
    return {"repetitions": len(census),
            "parts": {name: {"runs": e["runs"], "passed": e["passed"],
                             "seconds_min": min(e["seconds"], default=None),
                             "seconds_median": statistics.median(e["seconds"]) if e["seconds"] else None,
                             "seconds_max": max(e["seconds"], default=None)} for name, e in sorted(parts.items())},
            "failed_tests": dict(sorted(failed_tests.items())),
            "bands": rows}


def _n(value, digits: int = 3) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}g}" if isinstance(value, float) else f"{value:,}"


def _source_line(name: str, data: dict) -> str:
    m = data.get("machine") or {}
    commits = sorted({r.get("commit", "")[:7] for r in data["repetitions"]} - {""}) or [data.get("commit", "")[:7]]
    return (f"- `{name}`: {len(data['repetitions'])} repetitions of `scripts/test {' '.join(data.get('parts', []))}`, "
            f"started {data.get('started_at', '?')} on {m.get('cpu_model', '?')} ({m.get('cores', '?')} cores, "
            f"{m.get('memory_gib', '?')} GiB, {m.get('os', '?')}), load average {m.get('load_average_at_start', '?')} "
            f"at start; commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}"
            # A run made otherwise than by --repeat (a fresh machine's README commands) says how.
            + (f"; {data['how']}" if data.get("how") else ""))


def _parts_by_census(sources: list[tuple[str, dict]]) -> list[str]:
    """Passes per part in each census folder, in the order given: before and after a fix side by
    side (a folder's commits are in its line above)."""
    per_source = [(name, summarise(data["repetitions"])["parts"]) for name, data in sources]
    names = list(dict.fromkeys(part for _, parts in per_source for part in parts))
    lines = ["", "### Parts by census", "",
             "| part | " + " | ".join(f"`{Path(name).name}`" for name, _ in per_source) + " |",
             "|:---|" + "---:|" * len(per_source)]
    for part in names:
        cells = [f"{parts[part]['passed']}/{parts[part]['runs']}" if part in parts else "–" for _, parts in per_source]
        lines.append(f"| {part} | " + " | ".join(cells) + " |")
    return lines


def passes_in_a_row(sources: list[tuple[str, dict]]) -> dict[str, dict]:
    """Per part, the passes in a row up to its newest run, the repetitions taken in the order they
    started: how many, from which census and commit the run of passes starts, and the last failure
    before it (None if it never failed). The census's "10/10 after the fixes" is this count."""
    reps = sorted(((data.get("started_at", ""), k, name, rep) for name, data in sources
                   for k, rep in enumerate(data["repetitions"])), key=lambda r: r[:2])
    rows: dict[str, dict] = {}
    for _, k, name, rep in reps:
        where = {"census": Path(name).name, "repetition": k + 1, "commit": rep.get("commit", "")[:7]}
        for part, outcome in rep["parts"].items():
            row = rows.setdefault(part, {"passes": 0, "since": None, "last_failure": None})
            if outcome["passed"]:
                row["since"] = row["since"] or where
                row["passes"] += 1
            else:
                rows[part] = {"passes": 0, "since": None, "last_failure": where}
    return dict(sorted(rows.items()))


def _where(place: dict | None) -> str:
    return "–" if place is None else f"`{place['census']}` rep {place['repetition']} ({place['commit']})"


def _passes_in_a_row_lines(sources: list[tuple[str, dict]]) -> list[str]:
    lines = ["", "### Passes in a row", "",
             "Each part's passes up to its newest run, every census's repetitions in the order they started "
             "(a part's fixes come after its last failure).", "",
             "| part | passes in a row | since | last failure |", "|:---|---:|:---|:---|"]
    for part, row in passes_in_a_row(sources).items():
        lines.append(f"| {part} | {row['passes']} | {_where(row['since'])} | {_where(row['last_failure'])} |")
    return lines


def summary_markdown(summary: dict, sources: list[tuple[str, dict]]) -> str:
    lines = [f"# Test census: {summary['repetitions']} repetitions", "",
             "Made by `scripts/test --repeat N PART...` (each repetition a fresh clone of the commit named) "
             "and merged by `scripts/test --census-summary DIR... --out FILE`:", "",
             *(_source_line(name, data) for name, data in sources), "",
             "## Parts", "", "| part | runs | passed | seconds min / median / max |", "|:---|---:|---:|---:|"]
    for name, e in summary["parts"].items():
        lines.append(f"| {name} | {e['runs']} | {e['passed']}/{e['runs']} | {_n(e['seconds_min'])} / "
                     f"{_n(e['seconds_median'])} / {_n(e['seconds_max'])} |")
    if len(sources) > 1:
        lines += _parts_by_census(sources)
        lines += _passes_in_a_row_lines(sources)
    if summary["failed_tests"]:
        lines += ["", "## Failed tests", "", "| test | failures |", "|:---|---:|"]
        lines += [f"| `{test}` | {count} |" for test, count in summary["failed_tests"].items()]
    lines += ["", "## Bands", "",
              f"Margin: how far inside its interval the value was, as a share of the nearer edge; "
              f"negative, it failed. ⚠ marks a band that failed or kept less than {THIN_MARGIN:.0%} in some run; "
              "*on its edge*, one whose value sat exactly on its edge (a whole number at its limit, such as a full "
              "pool's busy threads), as expected.",
              "", "| test | band | runs | failed | margin min / median / max | value min .. max | interval |",
              "|:---|:---|---:|---:|---:|---:|---:|"]
    for row in summary["bands"]:
        # Exactly on an edge: an integer at its limit (a full pool), that band's expected state.
        flag = (" ⚠" if row["failed"] or 0 < row["margin_min"] < THIN_MARGIN else
                " (on its edge)" if row["margin_min"] == 0 else "")
        interval = f"{_n(row['low'])} .. {_n(row['high'])}"
        lines.append(f"| `{row['test']}` | {row['band']}{flag} | {row['runs']} | {row['failed']} | "
                     f"{row['margin_min']:+.1%} / {row['margin_median']:+.1%} / {row['margin_max']:+.1%} | "
                     f"{_n(row['value_min'])} .. {_n(row['value_max'])} | {interval} |")
    return "\n".join(lines) + "\n"


def load_census(folder: Path) -> dict:
    path = folder / "census.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise CensusError(f"{path}: not a census ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("repetitions"), list):
        raise CensusError(f"{path}: not a census (no repetitions list)")
    return data


def display(folder: Path) -> str:
    """A census folder's name in a summary: relative to the repository where it is inside it."""
    try:
        return folder.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(folder)


def write_census(folder: Path, data: dict) -> None:
    (folder / "census.json").write_text(json.dumps(data, indent=1) + "\n")
    (folder / "summary.md").write_text(summary_markdown(summarise(data["repetitions"]), [(display(folder), data)]))


def merged_summary(folders: list[Path]) -> str:
    """The summary of every repetition of these census folders, in the order given."""
    sources = [(display(folder), load_census(folder)) for folder in folders]
    return summary_markdown(summarise([r for _, data in sources for r in data["repetitions"]]), sources)


def repeat(repo: Path, repeat_count: int, parts: list[str], folder: Path) -> int:
    check_arguments(repo, repeat_count, parts)
    if uncommitted(repo):
        print("scripts/test --repeat: note: each repetition is a fresh clone of HEAD as it is now; uncommitted "
              "changes are not in it", file=sys.stderr)
    folder.mkdir(parents=True, exist_ok=True)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    data = {"commit": head, "parts": parts, "machine": {"cpu_model": machine.cpu_model(), "cores": os.cpu_count(), "memory_gib": machine.memory_gib(),
                        "os": machine.os_name(), "load_average_at_start": machine.load_average()},
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "repetitions": []}

    def stop(signum, _frame):
        # The repetition stops its clone's processes as this unwinds through it.
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    durations = []
    failures = 0
    try:
        for k in range(1, repeat_count + 1):
            left = (f", about {clock(statistics.mean(durations) * (repeat_count - k + 1))} left"
                    if durations else "")
            print(f"==> census {k}/{repeat_count}: scripts/test {' '.join(parts)} in a fresh clone{left}",
                  file=sys.stderr, flush=True)
            record = Repetition(repo, parts, folder / f"rep-{k:02d}", head).run()
            durations.append(record["seconds"])
            data["repetitions"].append(record)
            write_census(folder, data)  # after each repetition: an interrupted census keeps what it had
            outcome = ", ".join(f"{p} {'passed' if o['passed'] else 'FAILED'} in {o['seconds']}s"
                                for p, o in record["parts"].items()) or f"exit {record['exit_code']}"
            failures += record["exit_code"] != 0
            print(f"    {outcome}; {len(record['bands'])} bands recorded", file=sys.stderr, flush=True)
    except KeyboardInterrupt as stopped:
        print(f"scripts/test --repeat: stopped ({stopped}); the {len(data['repetitions'])} finished "
              f"repetitions are in {folder}", file=sys.stderr)
        return 130
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    print(f"census: {repeat_count - failures} of {repeat_count} repetitions passed; {folder}/summary.md")
    return 0 if failures == 0 else 1


def merge(folders: list[Path], out: Path | None) -> int:
    text = merged_summary(sorted(folders, key=display))
    if out:
        out.write_text(text)
        print(f"wrote {out}")
    else:
        sys.stdout.write(text)
    return 0


def main(argv: list[str]) -> int:
    tolerate_closed_output()
    parser = argparse.ArgumentParser(prog="scripts/test", description="The flake census (see pul/census.py).")
    parser.add_argument("--repeat", type=int, metavar="N", help="repetitions, each from a fresh clone")
    parser.add_argument("--census-dir", type=Path, help="where the census goes (default test-output/census/STAMP)")
    parser.add_argument("--census-summary", nargs="+", type=Path, metavar="DIR", help="merge census folders")
    parser.add_argument("--out", type=Path, help="with --census-summary: write the summary here")
    parser.add_argument("parts", nargs="*")
    options = parser.parse_args(argv)
    try:
        if options.census_summary:
            return merge(options.census_summary, options.out)
        if options.repeat is None:
            parser.error("--repeat N or --census-summary DIR...")
        folder = options.census_dir or REPO / "test-output" / "census" / time.strftime("%Y-%m-%dT%H-%M-%SZ",
                                                                                      time.gmtime())
        return repeat(REPO, options.repeat, options.parts, folder)
    except CensusError as error:
        print(f"scripts/test: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
