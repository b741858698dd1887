"""The book's Play 3 pages, made from the lab sources and the committed runs of both lines.

- Each lab's names table (`labNN-play3-names.md`): every line of its sources and .conf files that
  the Play 3 build translates, beside its translation (pul.playline: the renames the build uses).
- Each lab's comparison (`labNN-play3.md`): its committed Play 2.9 run (results/latest.json)
  beside its committed Play 3 run (results/play-3/latest.json), variant by variant.
- The appendix's table (`play3-renames.md`): every Akka name the book itself uses, and its Pekko name.
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
RESULTS_DIR = "play-3"
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
    pairs = playline.renames(lab.dir / playline.RENAMES_FILE)
    rows = translated_lines(lab.dir, pairs)
    head = (f"Every line of lab {lab.number}'s code and settings that differs on Play 3, as its build "
            f"translates it (`project/{playline.RENAMES_FILE.name}`; comments left out):\n\n")
    if not rows:
        return head + "None: this lab's code names nothing that Pekko renamed.\n"
    table = ["| file | Play 2.9 (Akka) | Play 3 (Pekko) |", "|---|---|---|"]
    seen = set()
    for file, old, new in rows:
        if (file, old) not in seen:
            seen.add((file, old))
            table.append(f"| `{file}` | {_code(old)} | {_code(new)} |")
    return head + "\n".join(table) + "\n"


def committed_play3(lab: Lab) -> dict | None:
    path = lab.dir / "results" / RESULTS_DIR / "latest.json"
    return load(path) if path.exists() else None


def agrees(old: dict, new: dict) -> bool:
    rate_old, rate_new = old.get("requests_per_sec"), new.get("requests_per_sec")
    return (old.get("bound_by") == new.get("bound_by") and bool(rate_old) and rate_new is not None
            and abs(rate_new / rate_old - 1) <= AGREE_WITHIN)


def _rate(value) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _ratio(value) -> str:
    return "–" if value is None else f"{value:.2f}"


def _cpu_us(v: dict) -> str:
    ms = v.get("server_cpu_ms_per_request")
    return "–" if ms is None else f"{ms * 1000:,.0f}"


def comparison_markdown(lab: Lab, old_run: dict, new_run: dict) -> str:
    old_by = {v["name"]: v for v in old_run["variants"]}
    new_by = {v["name"]: v for v in new_run["variants"]}
    names = [name for name in old_by if name in new_by]
    table = ["| variant | bound by | req/s Play 2.9 | req/s Play 3 | Play 3 / 2.9 | measured/predicted 2.9 → 3 "
             "| server CPU µs/req 2.9 → 3 | agree |",
             "|---|---|--:|--:|--:|--:|--:|---|"]
    apart = []
    for name in names:
        old, new = old_by[name], new_by[name]
        bound = old.get("bound_by") or "–"
        if new.get("bound_by") != old.get("bound_by"):
            bound = f"{bound} → {new.get('bound_by') or '–'}"
        ratio = (new["requests_per_sec"] / old["requests_per_sec"]
                 if old.get("requests_per_sec") and new.get("requests_per_sec") is not None else None)
        same = agrees(old, new)
        if not same:
            apart.append(name)
        table.append(f"| {name} | {bound} | {_rate(old.get('requests_per_sec'))} | "
                     f"{_rate(new.get('requests_per_sec'))} | {_ratio(ratio)} | "
                     f"{_ratio(old.get('measured_over_predicted'))} → {_ratio(new.get('measured_over_predicted'))} | "
                     f"{_cpu_us(old)} → {_cpu_us(new)} | {'yes' if same else '**no**'} |")
    verdict = (f"All {len(names)} variants agree" if not apart else
               f"{len(names) - len(apart)} of {len(names)} variants agree")
    lines = [
        "\n".join(table), "",
        f"{verdict}: the same bound named, and throughputs within {AGREE_WITHIN:.0%} of each other "
        f"(the model's band around a bound is that wide)."
        + (f" Apart: {', '.join(apart)}." if apart else ""),
        "",
        f"Play 2.9: {machine_line(old_run)}",
        "",
        f"Play 3: {machine_line(new_run)}",
        "",
    ]
    return "\n".join(lines)


def artifacts(lab: Lab) -> dict[Path, str]:
    """The lab's Play 3 pages, {path relative to the repository: content}: its names table always,
    its comparison when both lines have a committed run."""
    found = {names_path(lab): names_markdown(lab)}
    old_path = lab.dir / "results" / "latest.json"
    new_run = committed_play3(lab)
    if new_run is not None and old_path.exists():
        found[comparison_path(lab)] = comparison_markdown(lab, load(old_path), new_run)
    return found


# Akka's names as prose and listings spell them: configuration keys and import lines.
AKKA_NAME = re.compile(r"(?:play\.)?akka\.[a-z][\w.-]*[\w]|import akka\.[\w.]+")


def book_names(book: Path = BOOK) -> dict[str, list[str]]:
    """Each Akka name the book's pages use (their prose and the lab listings they include), and
    the pages that use it."""
    found: dict[str, list[str]] = {}
    for page in sorted(book.glob("*.md")):
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


def appendix_markdown(book: Path = BOOK) -> str:
    pairs = playline.renames()
    rows = ["| Play 2.9 (Akka) | Play 3 (Pekko) | used in |", "|---|---|---|"]
    for name, pages in sorted(book_names(book).items()):
        new = playline.translate(name, pairs)
        if new == name:
            continue
        links = ", ".join(f"[{page[:-3]}]({page})" for page in pages)
        rows.append(f"| {_code(name)} | {_code(new)} | {links} |")
    return "\n".join(rows) + "\n"


def book_artifacts() -> dict[Path, str]:
    return {REPO / APPENDIX_PATH: appendix_markdown()}
