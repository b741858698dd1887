"""The book's Play 3 pages, made from the lab sources and the committed runs of both lines.

- Each lab's names table (`labNN-play3-names.md`): every line of its sources and .conf files that
  the Play 3 build translates, beside its translation (pul.playline: the renames the build uses).
- Each lab's comparison (`labNN-play3.md`): its committed Play 2.9 run (results/latest.json)
  beside its committed Play 3 run (results/play-3/latest.json), variant by variant.
- The appendix's table (`play3-renames.md`): every Akka name the book itself uses, and its Pekko name,
  or why it has none (scripts/tests/test_play3_names.py checks each against Pekko's and Play's sources).
"""

from __future__ import annotations

import re
from pathlib import Path

from . import playline
from .lab import Lab
from .results import load, machine_line

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "book" / "src"
GENERATED = Path("book") / "src" / "generated"
# Second runs of each line, made beside each other (same day, same machine, same code): how far one
# line moves between its own runs, the yardstick for the difference between the lines.
AGAIN_DIRS = {"2.9": "play-2.9-again", "3": "play-3-again"}
# Two runs of a variant agree when they name the same bound and their throughputs differ by no more
# than this share: the model's own band around a bound (0.85-1.10, pul.report.BAND) is that wide.
AGREE_WITHIN = 0.10
# Files a lab's build translates (PlayLine.scala): its sources and its .conf files.
SOURCE_DIRS = ("app", "conf", "test")
SOURCE_SUFFIXES = (".java", ".scala", ".conf")
COMMENT = re.compile(r"^\s*(//|#|\*|/\*)")


def names_path(lab: Lab) -> Path:
    return GENERATED / f"lab{lab.number}-play3-names.md"


def comparison_path(lab: Lab) -> Path:
    return GENERATED / f"lab{lab.number}-play3.md"


APPENDIX_PATH = GENERATED / "play3-renames.md"
APPENDIX_PAGE = "play3.md"  # the page that includes it


def _code(text: str) -> str:
    """Inline code in a table cell: backticks that survive a backtick or a pipe inside."""
    text = text.strip().replace("|", "\\|")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def translated_lines(lab_dir: Path, pairs: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(file, Play 2.9 line, Play 3 line) for each code or setting line the translation changes."""
    found = []
    for folder in SOURCE_DIRS:
        for path in sorted((lab_dir / folder).rglob("*")):
            if not path.is_file() or path.suffix not in SOURCE_SUFFIXES:
                continue
            for line in path.read_text(errors="replace").splitlines():
                new = playline.translate(line, pairs)
                if new != line and not COMMENT.match(line):
                    found.append((str(path.relative_to(lab_dir)), line.strip(), new.strip()))
    return found


def names_markdown(lab: Lab) -> str:
    pairs = playline.renames()
    rows = translated_lines(lab.dir, pairs)
    head = (f"Every line of lab {lab.number}'s code and settings that differs on Play 3, as its build "
            f"translates it (`labs/sbt/{playline.RENAMES.name}`; comments left out):\n\n")
    if not rows:
        return head + "None: this lab's code names nothing that Pekko renamed.\n"
    table = ["| file | Play 2.9 (Akka) | Play 3 (Pekko) |", "|---|---|---|"]
    seen = set()
    for file, old, new in rows:
        if (file, old) not in seen:
            seen.add((file, old))
            table.append(f"| `{file}` | {_code(old)} | {_code(new)} |")
    return head + "\n".join(table) + "\n"



def run_range(v: dict) -> tuple[float, float] | None:
    """The slowest and fastest of a variant's repeated runs with one tool, where the lab repeats
    them (lab 04's interleaved runs): the noise the lab itself reports as min–max."""
    runs = (v.get("extra") or {}).get("runs") or []
    tool = runs[0].get("tool") if runs else None
    rates = [r["requests_per_sec"] for r in runs if r.get("tool") == tool and r.get("requests_per_sec") is not None]
    return (min(rates), max(rates)) if len(rates) >= 2 else None


def _same(old: dict, new: dict) -> bool:
    """Two runs of a variant agree: the same bound named, and throughputs within AGREE_WITHIN, or
    each within the other's run-to-run range where the lab repeats its runs."""
    rate_old, rate_new = old.get("requests_per_sec"), new.get("requests_per_sec")
    if old.get("bound_by") != new.get("bound_by") or not rate_old or rate_new is None:
        return False
    if abs(rate_new / rate_old - 1) <= AGREE_WITHIN:
        return True
    # Each run's median within the other's range: one slow first run must not make any pair agree.
    ranges = run_range(old), run_range(new)
    return (None not in ranges and ranges[0][0] <= rate_new <= ranges[0][1]
            and ranges[1][0] <= rate_old <= ranges[1][1])


def agrees(olds: list[dict], news: list[dict]) -> bool:
    """A variant's Play 3 runs (news) agree with its Play 2.9 runs (olds) when one pair of them
    agrees, or when a Play 3 run names a bound a Play 2.9 run named with a throughput between
    theirs: two runs of one line differ by that much too."""
    if any(_same(old, new) for old in olds for new in news):
        return True
    rates = [old.get("requests_per_sec") for old in olds]
    if None in rates or len(rates) < 2:
        return False
    bounds = {old.get("bound_by") for old in olds}
    return any(new.get("bound_by") in bounds and new.get("requests_per_sec") is not None
               and min(rates) <= new["requests_per_sec"] <= max(rates) for new in news)


def _rate(value) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _ratio(value) -> str:
    return "–" if value is None else f"{value:.2f}"


def _range_text(v: dict) -> str:
    found = run_range(v)
    return "" if found is None else f" ({found[0]:,.0f}–{found[1]:,.0f})"


def _cpu_us(v: dict) -> str:
    ms = v.get("server_cpu_ms_per_request")
    return "–" if ms is None else f"{ms * 1000:,.0f}"


def _moved_bounds(old: dict, new: dict) -> list[str]:
    """The bounds of a variant that the two runs put more than AGREE_WITHIN apart."""
    moved = []
    for name, before in (old.get("bounds") or {}).items():
        after = (new.get("bounds") or {}).get(name)
        if before and after and abs(after / before - 1) > AGREE_WITHIN:
            moved.append(f"its {name} bound was {before:,.0f} req/s on Play 2.9 and {after:,.0f} on Play 3 "
                         f"({after / before - 1:+.0%})")
    return moved


def apart_sentence(name: str, old: dict, new: dict) -> str:
    """Why a variant's two runs differ, as far as their own numbers tell."""
    moved = _moved_bounds(old, new)
    fits = (f"each run landed at {_ratio(old.get('measured_over_predicted'))} and "
            f"{_ratio(new.get('measured_over_predicted'))} of its own prediction")
    if moved:
        return f"{name}: {'; '.join(moved)}, and {fits}."
    return f"{name}: no bound moved by more than {AGREE_WITHIN:.0%}, and {fits}."


def _rates_cell(runs: list[dict]) -> str:
    return " · ".join(f"{_rate(v.get('requests_per_sec'))}{_range_text(v)}" for v in runs)


def _within_line(runs: list[dict]) -> bool:
    """Whether a line's own runs of a variant agree with each other (every pair)."""
    return all(_same(a, b) for i, a in enumerate(runs) for b in runs[i + 1:])


def comparison_markdown(lab: Lab, old_runs: list[dict], new_runs: list[dict]) -> str:
    """Play 2.9's committed runs (the chapter's first) beside Play 3's, variant by variant."""
    olds = [{v["name"]: v for v in run["variants"]} for run in old_runs]
    news = [{v["name"]: v for v in run["variants"]} for run in new_runs]
    names = [name for name in olds[0] if name in news[0]]
    table = ["| variant | bound by | req/s Play 2.9 | req/s Play 3 | Play 3 / 2.9 | predicted req/s 2.9 → 3 "
             "| measured/predicted 2.9 → 3 | server CPU µs/req 2.9 → 3 | agree |",
             "|---|---|--:|--:|--:|--:|--:|--:|---|"]
    apart, moving = [], []
    for name in names:
        old_vs = [runs[name] for runs in olds if name in runs]
        new_vs = [runs[name] for runs in news if name in runs]
        old, new = old_vs[0], new_vs[0]
        bound = old.get("bound_by") or "–"
        if new.get("bound_by") != old.get("bound_by"):
            bound = f"{bound} → {new.get('bound_by') or '–'}"
        ratio = (new["requests_per_sec"] / old["requests_per_sec"]
                 if old.get("requests_per_sec") and new.get("requests_per_sec") is not None else None)
        same = agrees(old_vs, new_vs)
        if not same:
            apart.append(name)
        if not (_within_line(old_vs) and _within_line(new_vs)):
            moving.append(name)
        table.append(f"| {name} | {bound} | {_rates_cell(old_vs)} | {_rates_cell(new_vs)} | {_ratio(ratio)} | "
                     f"{_rate(old.get('predicted_requests_per_sec'))} → {_rate(new.get('predicted_requests_per_sec'))} | "
                     f"{_ratio(old.get('measured_over_predicted'))} → {_ratio(new.get('measured_over_predicted'))} | "
                     f"{_cpu_us(old)} → {_cpu_us(new)} | {'yes' if same else '**no**'} |")
    repeats = any(run_range(v) for v in olds[0].values())
    rule = (f"the same bound named, and throughputs within {AGREE_WITHIN:.0%} of each other (the model's band "
            "around a bound is that wide)"
            + (" or each within the other's run-to-run range (the min–max of the lab's repeated runs, in "
               "brackets)" if repeats else ""))
    verdict = (f"All {len(names)} variants agree" if not apart else
               f"{len(names) - len(apart)} of {len(names)} variants agree")
    several = len(old_runs) > 1 or len(new_runs) > 1
    lines = ["\n".join(table), ""]
    if several:
        lines += [
            f"{verdict} between the lines. Two runs agree with {rule}. Where a line was measured twice (its "
            "runs separated by ·, the chapter's first), the lines agree when one run of each agrees, or when "
            "Play 3 names a bound Play 2.9 named with a throughput between its runs."
            + (f" Apart: {', '.join(apart)}." if apart else ""),
            "",
            "How far one line moves between its own runs: "
            + (f"{len(names) - len(moving)} of {len(names)} variants agree within each line "
               f"(apart within a line: {', '.join(moving)})." if moving else
               f"every variant agrees within each line."),
            "",
        ]
    else:
        lines += [f"{verdict}: {rule}." + (f" Apart: {', '.join(apart)}." if apart else ""), ""]
    lines += [f"- {apart_sentence(name, olds[0][name], news[0][name])}" for name in apart]
    lines += [""] if apart else []
    for label, runs in (("Play 2.9", old_runs), ("Play 3", new_runs)):
        for number, run in enumerate(runs, 1):
            suffix = f", run {number}" if len(runs) > 1 else ""
            lines += [f"{label}{suffix}: {machine_line(run)}", ""]
    return "\n".join(lines)


def committed_runs(lab: Lab, line: str) -> list[dict]:
    """A line's committed runs: the one in its results folder first, then its second run."""
    paths = [playline.results_dir(lab.dir, line), lab.dir / "results" / AGAIN_DIRS[line]]
    return [load(path / "latest.json") for path in paths if (path / "latest.json").exists()]


def artifacts(lab: Lab) -> dict[Path, str]:
    """The lab's Play 3 pages, {path relative to the repository: content}: its names table always,
    its comparison when both lines have a committed run."""
    found = {names_path(lab): names_markdown(lab)}
    old_runs, new_runs = committed_runs(lab, "2.9"), committed_runs(lab, "3")
    if old_runs and new_runs and (playline.results_dir(lab.dir, "2.9") / "latest.json").exists():
        found[comparison_path(lab)] = comparison_markdown(lab, old_runs, new_runs)
    return found


# Akka's names as prose and listings spell them: configuration keys (Play's own below play.akka and
# play.server.akka), classes named in full, thread names (Play's actor system is called
# "application") and import lines.
AKKA_NAME = re.compile(r"(?:application-|play\.(?:server\.)?)?akka\.[A-Za-z][\w.-]*\w|import akka\.[\w.]+")
# A thread of a dispatcher: <actor system>-<dispatcher id>-<n> (Pekko's and Akka's
# MonitorableThreadFactory, named by each executor configurator), written with any n or N.
THREAD_NAME = re.compile(r"^application-(?P<dispatcher>.+)-(?:N|\d+)$")
# Akka names the book uses that name nothing Play 3 reads: the renames would make a name up. Each with
# what the table says instead. Neither Play 2.9.11's core/play reference.conf has them under play.akka,
# nor Play 3.0.9's under play.pekko; Play 2.4 left only Play's own settings under play.akka (its
# Migration24.md), and Play 2.9 removed play.akka.config (its Migration29.md).
NO_PLAY3_NAME = {
    "play.akka.config": "a Play 2.4 to 2.8 setting, which Play 2.9 removed",
    "play.akka.actor": "the section of Play's internal actor system before Play 2.4; configures nothing since",
    "play.akka.actor.default-dispatcher": "configures nothing since Play 2.4; the default dispatcher is "
                                          "`pekko.actor.default-dispatcher`",
}
# Keys the book makes up to show where a setting of your own goes: no library has them.
EXAMPLES = {
    "akka.my-context": "an example: a dispatcher of your own, if you declare it inside `pekko { }`",
}


def name_kind(name: str) -> str:
    """What a name is, by its form: an import line, a class named in full (its last part starts with
    a capital), a dispatcher's thread, or a configuration key."""
    if name.startswith("import "):
        return "import"
    if THREAD_NAME.match(name):
        return "thread name"
    return "class" if name.rsplit(".", 1)[-1][:1].isupper() else "setting"


def thread_dispatcher(name: str) -> str:
    """The dispatcher a thread name names (its configuration key)."""
    return THREAD_NAME.match(name).group("dispatcher")


def book_names(book: Path = BOOK) -> dict[str, list[str]]:
    """Each Akka name the book's pages use (their prose and the lab listings they include), and
    the pages that use it."""
    found: dict[str, list[str]] = {}
    for page in sorted(book.glob("*.md")):
        if page.name in (APPENDIX_PAGE, "SUMMARY.md"):
            continue  # the appendix quotes the renames themselves
        text = page.read_text()
        for match in re.finditer(r"\{\{#include ([^}:]+)", text):
            included = (page.parent / match.group(1)).resolve()
            if included.is_file() and "generated" not in included.parts:
                text += "\n" + included.read_text(errors="replace")
        for name in AKKA_NAME.findall(text):
            pages = found.setdefault(name, [])
            if page.name not in pages:
                pages.append(page.name)
    return found


def _title(page: Path) -> str:
    """A page's title: its first heading."""
    first = next((line for line in page.read_text().splitlines() if line.startswith("# ")), None)
    return first[2:].strip() if first else page.stem


def appendix_rows(book: Path = BOOK) -> list[tuple[str, str | None, str, list[str]]]:
    """(Akka name, its Play 3 name or None, what it is, the pages that use it) for each Akka name the
    book uses that reads differently on Play 3: a thread's number is written N."""
    pairs = playline.renames()
    merged: dict[str, list[str]] = {}
    for name, pages in book_names(book).items():
        if name_kind(name) == "thread name":
            name = re.sub(r"-\d+$", "-N", name)
        merged.setdefault(name, [])
        merged[name] += [page for page in pages if page not in merged[name]]
    rows = []
    for name, pages in sorted(merged.items()):
        new = playline.translate(name, pairs)
        if new == name:
            continue
        if name in NO_PLAY3_NAME:
            rows.append((name, None, NO_PLAY3_NAME[name], pages))
        else:
            rows.append((name, new, EXAMPLES.get(name) or name_kind(name), pages))
    return rows


def appendix_markdown(book: Path = BOOK) -> str:
    rows = ["| Play 2.9 (Akka) | Play 3 (Pekko) | what it is | used in |", "|---|---|---|---|"]
    for name, new, kind, pages in appendix_rows(book):
        links = ", ".join(f"[{_title(book / page)}]({page})" for page in pages)
        rows.append(f"| {_code(name)} | {_code(new) if new else 'none'} | {kind} | {links} |")
    return "\n".join(rows) + "\n"


def book_artifacts() -> dict[Path, str]:
    return {REPO / APPENDIX_PATH: appendix_markdown()}
