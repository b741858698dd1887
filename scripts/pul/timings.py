"""`scripts/instructor-timings`: the instructor guide's timings and schedules, from real runs.

  scripts/instructor-timings measure [LAB...]   time real runs on this machine (the first build
                                                of each lab, its exercise checks) and store them
                                                in book/src/instructor/timings.json
  scripts/instructor-timings [--check]          write the guide's tables from those timings, the
                                                committed results (duration_s of each lab's run)
                                                and the chapters' length; --check: fail if stale

The schedules add up measured times and a few stated allowances (the ALLOWANCES below:
time to think, to read a table, breaks); nothing measured is typed in.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from . import exercises, machine
from .lab import REPO, all_labs

TIMINGS = REPO / "book" / "src" / "instructor" / "timings.json"
GENERATED = REPO / "book" / "src" / "generated"
OUTPUTS = {"measured": GENERATED / "instructor-timings.md",
           "half": GENERATED / "instructor-schedule-half-day.md",
           "full": GENERATED / "instructor-schedule-full-day.md"}

# Stated allowances, not measurements (the guide prints them next to the schedules).
WORDS_PER_MINUTE = 180          # presenting a chapter takes about as long as reading it
TABLE_MINUTES = 5               # reading the measured table together, comparing with the prediction
THINK_MINUTES_PER_EXERCISE = 10  # reading the task, changing the code
CHECKS_PER_EXERCISE = 2         # a first try that fails, a second that passes
OPENING_CHAPTERS = ("introduction.md", "measuring.md")
HALF_DAY_MINUTES = 210          # 3.5 hours including the break
BREAK_MINUTES = 15
LUNCH_MINUTES = 60
DAY_START = 9 * 60
ROOM_RESULTS_MINUTES = 15       # merging and discussing the room's results
# (not before this clock time, name, minutes)
BREAKS_HALF_DAY = [(10 * 60 + 15, "Break", BREAK_MINUTES)]
BREAKS_FULL_DAY = [(10 * 60 + 30, "Break", BREAK_MINUTES), (12 * 60, "Lunch", LUNCH_MINUTES),
                   (15 * 60, "Break", BREAK_MINUTES)]


def words(path: Path) -> int:
    """Words of prose, to the nearest hundred (a typo fix does not change the schedule)."""
    text = path.read_text()
    text = re.sub(r"```.*?```", " ", text, flags=re.S)   # code is shown, not read aloud
    text = re.sub(r"\{\{#include[^}]*\}\}", " ", text)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)   # comments (pul.claims) are not shown
    return max(100, round(len(re.findall(r"[A-Za-z0-9][\w'’-]*", text)), -2))


def chapter_pages(number: str, main: str | None = None) -> list[Path]:
    """A lesson's pages: its chapter (`main`, the lab's [book] chapter, when given) first, then the
    sub-pages it was split into (every other chNN-*.md): all of them are presented."""
    found = sorted((REPO / "book" / "src").glob(f"ch{number}-*.md"))
    return sorted(found, key=lambda p: (p.name != main, p.name))


def _book_chapter(lab_dir: Path) -> str | None:
    """The file name of the chapter a lab's lab.toml names in [book] (None: it names none)."""
    toml = lab_dir / "lab.toml"
    chapter = tomllib.loads(toml.read_text()).get("book", {}).get("chapter") if toml.exists() else None
    return Path(chapter).name if chapter else None


def lessons(timings: dict) -> list[dict]:
    rows = []
    for number, lab_dir, driver in all_labs():
        main = _book_chapter(lab_dir)
        pages = chapter_pages(number, main)
        chapter = pages[0] if pages else None
        latest = lab_dir / "results" / "latest.json"
        run_s = json.loads(latest.read_text()).get("duration_s") if latest.exists() else None
        measured = timings.get("labs", {}).get(lab_dir.name, {})
        title = driver.title if driver else lab_dir.name
        rows.append({
            "number": number, "lab": lab_dir.name, "title": title,
            "chapter": chapter.name if chapter else None,
            "words": sum(words(page) for page in pages) if pages else None,
            "run_s": run_s,
            "build_s": measured.get("first_build_s"),
            "exercises": len(exercises.load(driver)) if driver else 0,
            "check_s": measured.get("check_s"),
        })
    return rows


def _minutes(seconds: float | None) -> float:
    return (seconds or 0) / 60


def lesson_blocks(row: dict) -> list[tuple[str, float]]:
    talk = (row["words"] or 0) / WORDS_PER_MINUTE
    lab = _minutes(row["build_s"]) + _minutes(row["run_s"]) + TABLE_MINUTES
    exercises = row["exercises"] * (THINK_MINUTES_PER_EXERCISE + CHECKS_PER_EXERCISE * _minutes(row["check_s"]))
    blocks = [(f"Lesson {int(row['number'])}: {row['title']}: the problem, the prediction (chapter {row['chapter']})",
               talk),
              (f"Lab {row['number']}: build and `scripts/lab run {row['number']}`, read the table", lab)]
    if row["exercises"]:
        blocks.append((f"Lab {row['number']} exercises ({row['exercises']}, checked with "
                       f"`scripts/lab check {row['number']}`)", exercises))
    return blocks


def _round5(minutes: float) -> int:
    return max(5, int(math.ceil(minutes / 5.0)) * 5)


def _clock(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def opening_minutes() -> float:
    total = 0
    for name in OPENING_CHAPTERS:
        path = REPO / "book" / "src" / name
        if path.exists():
            total += words(path) / WORDS_PER_MINUTE
    return total


def schedule(rows: list[dict], budget: int | None) -> tuple[str, list[str]]:
    """A markdown schedule; with a budget, lessons that do not fit become homework."""
    items: list[tuple[str, int]] = [("Welcome, the set-up check (`scripts/doctor labs`), Introduction and "
                                     "Measuring with ApacheBench", _round5(opening_minutes()))]
    left_out = []
    used = items[0][1]
    breaks_due = [BREAK_MINUTES] if budget else [BREAK_MINUTES, LUNCH_MINUTES, BREAK_MINUTES]
    used += ROOM_RESULTS_MINUTES
    per_lesson = [(row, [(text, _round5(m)) for text, m in lesson_blocks(row)])
                  for row in rows if row["chapter"]]
    for row, blocks in per_lesson:
        cost = sum(m for _, m in blocks)
        reserve = sum(breaks_due) if budget else 0
        if budget is not None and used + cost + reserve > budget and len(items) > 1:
            left_out.append(f"Lesson {int(row['number'])}: {row['title']}")
            continue
        items.extend(blocks)
        used += cost
    items.append(("The room's results: everyone's numbers in one table (`scripts/merge-results`), "
                  "what differs between machines and why", ROOM_RESULTS_MINUTES))
    # A break once the clock passes each slot's time, as long as work remains after it.
    slots = BREAKS_HALF_DAY if budget else BREAKS_FULL_DAY
    lines = ["| start | minutes | what |", "|---:|---:|:---|"]
    clock, next_slot = DAY_START, 0
    for index, (text, minutes) in enumerate(items):
        lines.append(f"| {_clock(clock)} | {minutes} | {text} |")
        clock += minutes
        if next_slot < len(slots) and clock >= slots[next_slot][0] and index < len(items) - 1:
            name, length = slots[next_slot][1], slots[next_slot][2]
            lines.append(f"| {_clock(clock)} | {length} | *{name}* |")
            clock += length
            next_slot += 1
    lines.append(f"| {_clock(clock)} | | End ({(clock - DAY_START) // 60} h {(clock - DAY_START) % 60:02d} min) |")
    return "\n".join(lines) + "\n", left_out


def render(timings: dict) -> dict[Path, str]:
    rows = lessons(timings)
    machine_text = timings.get("machine_line", "no timing run yet")
    table = ["| lesson | chapter words (≈) | presenting (min) | first build (s) | `scripts/lab run` (s) "
             "| exercises | one `scripts/lab check` (s) |",
             "|:---|---:|---:|---:|---:|---:|---:|"]

    def cell(value, fmt="{:,.0f}"):
        return "–" if value is None else fmt.format(value)

    for row in rows:
        table.append(f"| {row['number']} {row['title']} | {cell(row['words'])} "
                     f"| {cell(row['words'] and row['words'] / WORDS_PER_MINUTE)} | {cell(row['build_s'])} "
                     f"| {cell(row['run_s'])} | {row['exercises'] or '–'} | {cell(row['check_s'])} |")
    measured = "\n".join(table) + (
        f"\n\nFirst build and check times: `scripts/instructor-timings measure`, {machine_text}. "
        "`scripts/lab run` times: the `duration_s` of each lab's committed results file. "
        "A dash: not measured yet (the lab or its chapter is not there yet).\n\n"
        f"The schedules below add these up with stated allowances (not measurements): presenting a "
        f"chapter at {WORDS_PER_MINUTE} words a minute (code listings left out), {TABLE_MINUTES} minutes to "
        f"read a lab's table together, {THINK_MINUTES_PER_EXERCISE} minutes of thinking per exercise plus "
        f"{CHECKS_PER_EXERCISE} checks, {ROOM_RESULTS_MINUTES} minutes for the room's results; every block "
        "rounded up to 5 minutes.\n")
    half, homework = schedule(rows, HALF_DAY_MINUTES)
    if homework:
        half += "\nLeft for homework (does not fit): " + "; ".join(homework) + ".\n"
    full, _ = schedule(rows, None)
    return {OUTPUTS["measured"]: measured, OUTPUTS["half"]: half, OUTPUTS["full"]: full}


def artifacts() -> dict[Path, str]:
    """The guide's timing pages as the committed timings and every lab's results give them: a run
    that replaces a lab's results rewrites them (its duration is the lab's `scripts/lab run`
    time), and `scripts/lab report --check` finds them stale otherwise."""
    return render(load_timings())


def load_timings() -> dict:
    return json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}


def measure(numbers: list[str]) -> None:
    """Time the first build of each lab (empty target/, warm dependency caches) and its checks."""
    from .lab import resolve

    data = load_timings()
    data.setdefault("labs", {})
    labs = [resolve(n) for n in numbers] if numbers else [d for _, _, d in all_labs() if d]
    for driver in labs:
        with exercises.scratch_copy(driver) as copy_dir:
            # project/project/build.sbt stays: it compiles labs/sbt's plugin choice (PlayPlugin).
            for sub in ("target", "project/target", "project/project/target", "project/project/project"):
                subprocess.run(["rm", "-rf", str(copy_dir / sub)], check=True)
            print(f"timing the first build of {driver.name} ...", flush=True)
            started = time.monotonic()
            build = subprocess.run([str(REPO / "scripts" / "sbt"), "stage"], cwd=copy_dir,
                                   stdin=subprocess.DEVNULL, capture_output=True, text=True)
            if build.returncode != 0:
                sys.exit(f"sbt stage failed for {driver.name}:\n{build.stdout[-2000:]}")
            entry = {"first_build_s": round(time.monotonic() - started)}
            declared = exercises.load(driver)
            if declared:
                print(f"timing `scripts/lab check {driver.number}` ...", flush=True)
                started = time.monotonic()
                subprocess.run([sys.executable, str(REPO / "scripts" / "lab"), "check", driver.number,
                                "--lab-dir", str(copy_dir), "--quiet"], stdin=subprocess.DEVNULL,
                               capture_output=True, text=True)
                entry["exercises"] = len(declared)
                # One check of one exercise (what a reader waits for), build included.
                entry["check_s"] = round((time.monotonic() - started) / len(declared))
            data["labs"][driver.name] = entry
            print(f"{driver.name}: {entry}", flush=True)
    facts = machine.facts(REPO / "labs" / labs[0].name, {"server_cpus": "0", "load_cpus": "1"}, None)
    data["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    data["machine"] = facts
    data["machine_line"] = (f"measured {data['measured_at'][:10]} on {facts['cpu_model']} "
                            f"({facts['cores']} cores, {facts['memory_gib']} GiB), {facts['jdk']}")
    TIMINGS.parent.mkdir(parents=True, exist_ok=True)
    TIMINGS.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/instructor-timings", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", choices=("report", "measure"), default="report")
    parser.add_argument("labs", nargs="*", help="measure: only these labs")
    parser.add_argument("--check", action="store_true", help="report: fail if a generated file is stale")
    options = parser.parse_args(argv)
    if options.command == "measure":
        if os.environ.get("PUL_BENCH_LOCK_HELD") != "1":
            from .run import lock_path

            print("note: run this under the machine's benchmark lock so other work does not slow the "
                  f"builds down (flock {lock_path()} env PUL_BENCH_LOCK_HELD=1 ...)", file=sys.stderr)
        measure(options.labs)
    outputs = artifacts()
    if options.check:
        stale = [path for path, content in outputs.items() if not path.exists() or path.read_text() != content]
        for path in stale:
            print(f"stale: {path.relative_to(REPO)} (run scripts/instructor-timings)", file=sys.stderr)
        return 1 if stale else 0
    for path, content in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        print(f"wrote {path.relative_to(REPO)}")
    return 0
