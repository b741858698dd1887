"""Finding the tools a lab needs, and saying exactly how to get the missing ones.

Which program comes from which Debian package is written once, in scripts/tools.json
(also read by scripts/doctor, scripts/test, the Vagrantfile and provisioning/update-packages).
`python3 -m pul.tools packages GROUP|COMMAND...` prints the Debian packages of a group of that
table or of the named commands, for shell scripts (PYTHONPATH=scripts).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import LabError, MissingTool
from .progress import Progress

TABLE_FILE = Path(__file__).resolve().parents[1] / "tools.json"


@dataclass(frozen=True)
class Tool:
    # None for a package wanted for itself rather than for one program (ca-certificates).
    command: str | None
    debian_package: str
    why: str
    # Where Debian keeps it when it is not on PATH (PostgreSQL's server binaries).
    search_globs: tuple[str, ...] = ()
    # Which machines and test parts install it, and who checks it (the table's "groups").
    groups: tuple[str, ...] = ()
    # The Homebrew formula scripts/doctor suggests on macOS (None: none to suggest).
    brew: str | None = None
    # scripts/doctor checks it on Linux only.
    linux_only: bool = False


_FIELDS = {"command": str, "package": str, "why": str, "groups": list, "search_globs": list,
           "brew": str, "linux_only": bool, "note": str}


def load_table(path: Path = TABLE_FILE) -> tuple[dict[str, str], tuple[Tool, ...]]:
    """The table's groups ({name: what it means}) and its rows, checked."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise LabError(f"{path}: {error}")
    groups = data.get("groups", {})
    rows = []
    for index, entry in enumerate(data.get("tools", [])):
        where = f"{path}: tools[{index}] ({entry.get('command') or entry.get('package')})"
        for key, value in entry.items():
            if key not in _FIELDS:
                raise LabError(f"{where}: unknown field {key!r} (known: {', '.join(_FIELDS)})")
            if not isinstance(value, _FIELDS[key]):
                raise LabError(f"{where}: {key!r} must be a {_FIELDS[key].__name__}")
        for key in ("package", "why", "groups"):
            if key not in entry:
                raise LabError(f"{where}: missing {key!r}")
        unknown = [g for g in entry["groups"] if g not in groups]
        if unknown:
            raise LabError(f"{where}: unknown group(s) {', '.join(unknown)} (the table's \"groups\" lists them)")
        rows.append(Tool(entry.get("command"), entry["package"], entry["why"],
                         tuple(entry.get("search_globs", ())), tuple(entry["groups"]),
                         entry.get("brew"), entry.get("linux_only", False)))
    commands = [t.command for t in rows if t.command]
    twice = sorted({c for c in commands if commands.count(c) > 1})
    if twice:
        raise LabError(f"{path}: more than one row for {', '.join(twice)}")
    return groups, tuple(rows)


GROUPS, TABLE = load_table()
BY_COMMAND = {tool.command: tool for tool in TABLE if tool.command}

AB = BY_COMMAND["ab"]
TASKSET = BY_COMMAND["taskset"]
JAVA = BY_COMMAND["java"]
CURL = BY_COMMAND["curl"]
GNUPLOT = BY_COMMAND["gnuplot"]
WRK = BY_COMMAND["wrk"]
INITDB = BY_COMMAND["initdb"]
POSTGRES = BY_COMMAND["postgres"]

BASE_TOOLS = (JAVA, CURL, AB, TASKSET)


def in_group(group: str) -> tuple[Tool, ...]:
    """The table's rows in a group ("role:base", "test:scripts", ...)."""
    if group not in GROUPS:
        raise LabError(f"unknown group {group!r}; known: {', '.join(GROUPS)}")
    return tuple(t for t in TABLE if group in t.groups)


def package_names(rows) -> list[str]:
    """The Debian packages of these rows, each once, in the table's order."""
    return list(dict.fromkeys(t.debian_package for t in rows))


def named(commands) -> tuple[Tool, ...]:
    """The tools with these commands (a lab.toml's `tools`)."""
    unknown = [c for c in commands if c not in BY_COMMAND]
    if unknown:
        raise LabError(f"unknown tool(s) {', '.join(map(repr, unknown))}; known: {', '.join(BY_COMMAND)}")
    return tuple(BY_COMMAND[c] for c in commands)


def locate(tool: Tool) -> str | None:
    if tool.command is None:
        return None
    found = shutil.which(tool.command)
    if found:
        return found
    for pattern in tool.search_globs:
        matches = sorted(Path("/").glob(pattern.lstrip("/")))
        if matches:
            return str(matches[-1])
    return None


def _can_install() -> bool:
    return (os.geteuid() == 0 and shutil.which("apt-get") is not None
            and os.environ.get("PUL_NO_INSTALL") != "1")


def ensure(tools: tuple[Tool, ...] | list[Tool], progress: Progress) -> dict[str, str]:
    """Return {command: path}; install missing Debian packages as root, else explain."""
    missing = [t for t in tools if locate(t) is None]
    apt_failure = ""
    if missing and _can_install():
        packages = sorted({t.debian_package for t in missing})
        progress.step(f"installing {' '.join(packages)} (missing: {', '.join(t.command for t in missing)})")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        install = ["apt-get", "install", "-y", "-q", *packages]
        result = subprocess.run(install, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if result.returncode != 0:
            # A fresh machine may have no package lists yet.
            subprocess.run(["apt-get", "update", "-q"], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True)
            result = subprocess.run(install, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if result.returncode != 0:
            # Why apt-get failed (a held dpkg lock, no network, an unknown package) is the useful part.
            said = [line for line in (result.stderr or result.stdout or "").splitlines() if line.strip()][-5:]
            apt_failure = (f"\n`{' '.join(install)}` failed (exit {result.returncode})"
                           + (":\n" + "\n".join(f"  {line}" for line in said) if said else "") + "\n")
        missing = [t for t in missing if locate(t) is None]
    if missing:
        lines = [f"  {t.command:10} {t.why}  ->  apt-get install {t.debian_package}" for t in missing]
        packages = " ".join(sorted({t.debian_package for t in missing}))
        raise MissingTool(
            "these tools are missing:\n" + "\n".join(lines) + apt_failure +
            f"\nOn Debian/Ubuntu: sudo apt-get install {packages}\n"
            "(On other systems install the same programs with your package manager, or use the VM: see README.md.)")
    return {t.command: locate(t) for t in tools}  # type: ignore[misc]


def main(argv: list[str]) -> int:
    """`python3 -m pul.tools packages [--missing] GROUP|COMMAND...`: the Debian packages, one line,
    space-separated. --missing: only those of commands not found here (as `ensure` would install)."""
    if not argv or argv[0] != "packages":
        print(main.__doc__, file=sys.stderr)
        return 2
    missing_only = "--missing" in argv[1:]
    names = [a for a in argv[1:] if a != "--missing"]
    unknown = [name for name in names if name not in GROUPS and name not in BY_COMMAND]
    if unknown:
        print(f"pul.tools: {', '.join(unknown)}: neither a group nor a command of {TABLE_FILE}",
              file=sys.stderr)
        return 2
    rows = [row for name in names for row in (in_group(name) if name in GROUPS else named([name]))]
    if missing_only:
        rows = [row for row in rows if row.command is None or locate(row) is None]
    print(" ".join(package_names(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
