"""The strict book build: mdBook, plus the checks mdBook does not make.

Plain mdBook logs a failed `{{#include}}` and still exits 0, and never checks links. So:
build with the given mdBook, fail on any ERROR or WARN line in its log, then check the built
HTML for leftover directives, broken local links and broken #anchors (pul.linkcheck).

    python3 -m pul.bookcheck --mdbook PATH [--dest DIR] BOOK_DIR
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python < 3.11 (Ubuntu 22.04): read the two keys we need by hand
    tomllib = None

from .linkcheck import Checker

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
BAD_LOG_LINE = re.compile(r"^\s*(ERROR|WARN)\b")
# {{#include path:anchor}} (not escaped with a backslash); a numeric "anchor" is a line range.
ANCHORED_INCLUDE = re.compile(r"(?<!\\)\{\{#(?:include|rustdoc_include)\s+([^\s}:]+):([A-Za-z_][\w-]*)\s*\}\}")


def missing_include_anchors(src_dir: Path) -> list[str]:
    """mdBook silently includes nothing when an anchor does not exist in the file; catch that."""
    problems = []
    for chapter in sorted(src_dir.rglob("*.md")):
        text = chapter.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for match in ANCHORED_INCLUDE.finditer(line):
                path, anchor = match.groups()
                target = chapter.parent / path
                where = f"{chapter.relative_to(src_dir)}:{number}"
                if not target.is_file():
                    continue  # mdBook reports a missing file itself (an ERROR line)
                source = target.read_text(encoding="utf-8", errors="replace")
                for marker in ("ANCHOR", "ANCHOR_END"):
                    if not re.search(rf"\b{marker}:\s*{re.escape(anchor)}(?![\w-])", source):
                        problems.append(f"{where}: {match.group(0)}: no '{marker}: {anchor}' line in {path}")
    return problems


def mdbook_env() -> dict[str, str]:
    """mdBook reads MDBOOK_* variables as config overrides; a stray one must not loosen the
    check. Force info logging (so WARN lines show) and strictness about missing chapters."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MDBOOK_")}
    env["MDBOOK_LOG"] = "info"
    env["MDBOOK_BUILD__CREATE_MISSING"] = "false"
    env["NO_COLOR"] = "1"
    return env


def _config(book_dir: Path) -> dict:
    text = (book_dir / "book.toml").read_text(encoding="utf-8")
    if tomllib is not None:
        return tomllib.loads(text)
    config: dict = {}
    table: dict = config
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            table = config
            for part in line.strip("[]").split("."):
                table = table.setdefault(part.strip(), {})
        elif match := re.match(r'^([\w-]+)\s*=\s*"([^"]*)"', line):
            table[match.group(1)] = match.group(2)
    return config


def site_url(book_dir: Path) -> str | None:
    return _config(book_dir).get("output", {}).get("html", {}).get("site-url")


def source_dir(book_dir: Path) -> str:
    return _config(book_dir).get("book", {}).get("src", "src")


def strict_build(mdbook: str, book_dir: Path, dest: Path) -> list[str]:
    """Build `book_dir` into `dest`; return every problem found (empty = clean)."""
    if not (book_dir / "book.toml").is_file():
        return [f"{book_dir}: no book.toml here"]
    result = subprocess.run([mdbook, "build", "--dest-dir", str(dest), str(book_dir)],
                            env=mdbook_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True)
    log = ANSI.sub("", result.stdout + result.stderr)
    problems = [f"mdbook log: {line.strip()}" for line in log.splitlines() if BAD_LOG_LINE.match(line)]
    if result.returncode != 0:
        problems.append(f"mdbook build exited with status {result.returncode}")
        if not problems[:-1]:
            problems.extend(f"mdbook: {line}" for line in log.splitlines()[-20:])
        return problems
    problems += missing_include_anchors(book_dir / source_dir(book_dir))
    problems += Checker(dest, site_url(book_dir)).check()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bookcheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("book_dir", type=Path)
    parser.add_argument("--print-site-url", action="store_true",
                        help="print the path the book is published under (book.toml site-url) and exit")
    parser.add_argument("--mdbook", help="the mdBook binary to build with (required to check)")
    parser.add_argument("--dest", type=Path, default=None,
                        help="where to build (default: a temporary directory, removed afterwards)")
    options = parser.parse_args(argv)
    if options.print_site_url:
        print(site_url(options.book_dir) or "/")
        return 0
    if not options.mdbook:
        parser.error("--mdbook is required")
    with tempfile.TemporaryDirectory(prefix="pul-book-") as scratch:
        dest = (options.dest or Path(scratch) / "html").resolve()
        problems = strict_build(options.mdbook, options.book_dir.resolve(), dest)
        pages = len(list(dest.rglob("*.html"))) if dest.is_dir() else 0
    for problem in problems:
        print(problem)
    if problems:
        print(f"book check: FAILED, {len(problems)} problem(s) in {options.book_dir}", file=sys.stderr)
        return 1
    print(f"book check: {pages} pages built cleanly; every local link and #anchor resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
