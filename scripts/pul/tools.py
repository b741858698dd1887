"""Finding the tools a lab needs, and saying exactly how to get the missing ones."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import LabError, MissingTool
from .progress import Progress


@dataclass(frozen=True)
class Tool:
    command: str
    debian_package: str
    why: str
    # Where Debian keeps it when it is not on PATH (PostgreSQL's server binaries).
    search_globs: tuple[str, ...] = ()


AB = Tool("ab", "apache2-utils", "ApacheBench, the load generator")
TASKSET = Tool("taskset", "util-linux", "pins the server and the load generator to their own cores")
JAVA = Tool("java", "openjdk-17-jdk-headless", "runs sbt and the Play server")
CURL = Tool("curl", "curl", "fetches the sbt launcher once")
GNUPLOT = Tool("gnuplot", "gnuplot-nox", "draws the figures for the book")
WRK = Tool("wrk", "wrk", "a second load generator, for when ab is the bottleneck")
INITDB = Tool("initdb", "postgresql", "creates the throwaway PostgreSQL cluster",
              ("/usr/lib/postgresql/*/bin/initdb",))
POSTGRES = Tool("postgres", "postgresql", "the PostgreSQL server",
                ("/usr/lib/postgresql/*/bin/postgres",))

BASE_TOOLS = (JAVA, CURL, AB, TASKSET)
BY_COMMAND = {tool.command: tool for tool in (AB, TASKSET, JAVA, CURL, GNUPLOT, WRK, INITDB, POSTGRES)}


def named(commands) -> tuple[Tool, ...]:
    """The tools with these commands (a lab.toml's `tools`)."""
    unknown = [c for c in commands if c not in BY_COMMAND]
    if unknown:
        raise LabError(f"unknown tool(s) {', '.join(map(repr, unknown))}; known: {', '.join(BY_COMMAND)}")
    return tuple(BY_COMMAND[c] for c in commands)


def locate(tool: Tool) -> str | None:
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
    if missing and _can_install():
        packages = sorted({t.debian_package for t in missing})
        progress.step(f"installing {' '.join(packages)} (missing: {', '.join(t.command for t in missing)})")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        result = subprocess.run(["apt-get", "install", "-y", "-q", *packages], env=env,
                                stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if result.returncode != 0:
            # A fresh machine may have no package lists yet.
            subprocess.run(["apt-get", "update", "-q"], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True)
            subprocess.run(["apt-get", "install", "-y", "-q", *packages], env=env,
                           stdin=subprocess.DEVNULL, capture_output=True)
        missing = [t for t in missing if locate(t) is None]
    if missing:
        lines = [f"  {t.command:10} {t.why}  ->  apt-get install {t.debian_package}" for t in missing]
        packages = " ".join(sorted({t.debian_package for t in missing}))
        raise MissingTool(
            "these tools are missing:\n" + "\n".join(lines) +
            f"\nOn Debian/Ubuntu: sudo apt-get install {packages}\n"
            "(On other systems install the same programs with your package manager, or use the VM: see README.md.)")
    return {t.command: locate(t) for t in tools}  # type: ignore[misc]
