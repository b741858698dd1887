"""The Play line a lab builds on: Play 2.9 on Akka (the default) or Play 3 on Apache Pekko.

Every lab's build reads PUL_PLAY (labs/sbt: plugin/PlayPlugin.scala and build/PlayLine.scala,
which every lab's meta-build compiles): unset or "2.9" builds on Play 2.9, "3" builds the same
sources on Play 3, translated with labs/sbt/pekko-renames.txt. The driver's --play option sets
that variable for every sbt it starts, and finds the Play 3 build in its own target folder. The
book's Play 3 listings and its appendix of renamed keys come from the same renames file, through
`translate` here, the same literal replacements PlayLine.scala makes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import BadResults, UsageError

VARIABLE = "PUL_PLAY"
DEFAULT = "2.9"
LINES = {"2.9": "Play 2.9 on Akka", "3": "Play 3 on Apache Pekko"}
# Each line's Maven group id (Play 3 moved from com.typesafe.play to org.playframework).
GROUPS = {"2.9": "com.typesafe.play", "3": "org.playframework"}
REPO = Path(__file__).resolve().parents[2]
# The build code every lab shares (labs/sbt): the renames, and the sbt plugin of each line.
SHARED_BUILD = REPO / "labs" / "sbt"
RENAMES = SHARED_BUILD / "pekko-renames.txt"
PLUGINS = SHARED_BUILD / "plugin" / "PlayPlugin.scala"


def _checked(line: str, given: str) -> str:
    if line not in LINES:
        raise UsageError(f"{given} (got {line!r}): use {' or '.join(LINES)} ("
                         + "; ".join(f"{key}: {name}" for key, name in LINES.items()) + ")")
    return line


def check(line: str) -> str:
    return _checked(line, "--play takes a Play line")


def current() -> str:
    """The line the labs build on now: PUL_PLAY, or the default."""
    return _checked(os.environ.get(VARIABLE) or DEFAULT, f"{VARIABLE} names a Play line")


def choose(line: str | None) -> str:
    """Make `line` (--play; None: keep PUL_PLAY or the default) the one every sbt started from here builds."""
    chosen = check(line) if line is not None else current()
    os.environ[VARIABLE] = chosen
    return chosen


def _apart(line: str | None) -> str:
    """The folder a line's build and results keep below the lab's target/ and results/: none for
    Play 2.9, play-3 for Play 3 (PlayLine.scala's target)."""
    return "play-3" if (line or current()) == "3" else ""


def target_dir(lab_dir: Path, line: str | None = None) -> Path:
    """Where the build of a line writes (PlayLine.scala): Play 3 apart, so the lines never share classes."""
    return lab_dir / "target" / _apart(line)


def results_dir(lab_dir: Path, line: str | None = None) -> Path:
    """Where a lab's committed run of the line lives: results/ (the run the book teaches from) for
    Play 2.9, results/play-3/ beside it for Play 3, so a Play 3 run never replaces the other."""
    return lab_dir / "results" / _apart(line)


def renames(path: Path = RENAMES) -> list[tuple[str, str]]:
    """The (old, new) pairs of a renames file, in order, as PlayLine.renames reads them."""
    pairs = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(" -> ")
        if len(parts) != 2 or not parts[0]:
            raise BadResults(f"{path}:{number}: not `old -> new`: {line}")
        pairs.append((parts[0], parts[1]))
    return pairs


def translate(text: str, pairs: list[tuple[str, str]]) -> str:
    for old, new in pairs:
        text = text.replace(old, new)
    return text


def setting(key: str, line: str | None = None) -> str:
    """A --set key as the server of the line reads it: on Play 3, its Akka name translated."""
    return translate(key, renames()) if (line or current()) == "3" else key


def plugin_versions(path: Path = PLUGINS) -> dict[str, str]:
    """Each line's Play version, as labs/sbt/plugin/PlayPlugin.scala pins it for every lab."""
    text = path.read_text(errors="replace")
    found = {}
    for line, group in GROUPS.items():
        match = re.search(rf'"{re.escape(group)}"\s*%\s*"sbt-plugin"\s*%\s*"([^"]+)"', text)
        if match:
            found[line] = match.group(1)
    return found
