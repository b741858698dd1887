"""Checks of `scripts/lab run` and `serve`'s options that must pass before anything is built or started.

A bad option should cost the reader a second and a sentence naming it, not a build (a minute the
first time) followed by a traceback or a server started with what the driver meant to prevent.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import ab, playline, tools
from .errors import UsageError

# -D properties the driver (or the staged start script) sets itself: a --set of one would override
# it, since the reader's settings come last (remote.server_properties, Server.command). Play reads
# each alias below as the same setting (play-server 2.9's reference.conf: play.server.http.port =
# ${?http.port}, address = ${?http.address}, https.port and https.address likewise,
# play.server.dir = ${?user.dir}, pidfile.path = ${?pidfile.path}). Each maps to what to use instead.
_ADDRESS = ("the server's address is the driver's: `scripts/lab serve` takes --listen ADDR (0.0.0.0 only "
            "with --listen-anywhere); `scripts/lab run` always serves on 127.0.0.1")
_PORT = "use --port N"
_HTTPS = ("the labs serve plain HTTP on --listen and --port; an HTTPS port would listen on every "
          "address of the machine (Play's default for https.address is 0.0.0.0)")
_DIR = "the staged start script sets it to the lab's build, where Play finds its files"
_PIDFILE = "the driver's: its servers write no pid file (pidfile.path=/dev/null); it stops them itself"
RESERVED_SETTINGS = {
    "http.address": _ADDRESS,
    "play.server.http.address": _ADDRESS,
    "http.port": _PORT,
    "play.server.http.port": _PORT,
    "https.port": _HTTPS,
    "https.address": _HTTPS,
    "play.server.https.port": _HTTPS,
    "play.server.https.address": _HTTPS,
    "play.http.secret.key": "the driver generates a fresh secret for every server start",
    "pidfile.path": _PIDFILE,
    "play.server.pidfile.path": _PIDFILE,
    "user.dir": _DIR,
    "play.server.dir": _DIR,
    "pul.lab": "the driver sets it to the lab's name, which `scripts/lab run --target` checks",
}


def check_setting(key: str) -> None:
    """UsageError for a --set of a property the driver sets itself, saying what to use instead."""
    if key in RESERVED_SETTINGS:
        raise UsageError(f"--set {key}=... is not allowed: {RESERVED_SETTINGS[key]}.")


def check_run(lab, params: dict, options: argparse.Namespace) -> None:
    """`scripts/lab run`'s options that would otherwise fail after the build: where the results
    go, the CPU lists, and a concurrency ab refuses."""
    if options.results_dir is not None:
        check_writable_folder(options.results_dir, f"--results-dir {options.results_dir}")
    else:
        folder = playline.results_dir(lab.dir)
        check_writable_folder(folder, f"the lab's results folder, {folder},",
                              " (give --results-dir DIR to write them elsewhere)")
    for option in ("server_cpus", "load_cpus"):
        if getattr(options, option, None) is not None:
            check_cpus(getattr(options, option), "--" + option.replace("_", "-"))
    check_concurrency(lab, params)


def check_serve(lab, params: dict, options: argparse.Namespace) -> None:
    """`scripts/lab serve`'s options that would otherwise fail after the build."""
    if options.server_cpus is not None:
        check_cpus(options.server_cpus, "--server-cpus")


def check_writable_folder(path: Path, name: str, hint: str = "") -> None:
    """UsageError unless `path` is a folder this process can write in, or can be created (its
    nearest existing parent is a writable folder). Tries a file there: permissions, read-only file
    systems and root's privileges all count as they will when the results are written."""
    existing = path
    while not existing.exists():
        if existing.is_symlink():
            raise UsageError(f"{name} cannot be created: {existing} is a symbolic link to nowhere{hint}")
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{name} cannot be created: {existing} is a file, not a folder{hint}")
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".pul-write-check-"):
            pass
    except OSError as error:
        where = "it" if existing == path else f"{existing}, where it would be created"
        raise UsageError(f"{name} is not writable: no file can be created in {where} "
                         f"({error.strerror or error}){hint}")


def parse_cpu_list(text: str, option: str = "a CPU list") -> set[int]:
    """A CPU list as taskset -c takes it, without strides: `0`, `0,2`, `0-3`, `0,2-3`."""
    cpus: set[int] = set()
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match or int(match.group(2) or match.group(1)) < int(match.group(1)):
            raise UsageError(f"{option} takes a list of CPU numbers such as 0, 0,2 or 0-3 (got {text!r})")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        cpus.update(range(low, min(high, 1 << 16) + 1))
    return cpus


def describe_cpus(cpus: set[int]) -> str:
    """{0, 1, 2, 5} -> `0-2,5`."""
    ranges: list[list[int]] = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def check_cpus(text: str, option: str) -> None:
    """UsageError unless every CPU of the list is one this process may run on."""
    available = os.sched_getaffinity(0)
    missing = sorted(parse_cpu_list(text, option) - available)
    if missing:
        shown = describe_cpus(set(missing))
        raise UsageError(f"{option} {text}: CPU {shown} {'is' if len(missing) == 1 else 'are'} not available "
                         f"to this process. The CPUs it may use: {describe_cpus(available)}")


# Every ab since httpd 2.0 accepts this many; above it, ask the installed one.
_AB_ALWAYS_ACCEPTS = 20_000


def ab_max_concurrency(ab_command: str | None = None) -> int:
    """The highest -c the installed ab accepts: it checks -c before anything else and names its
    limit ("Invalid Concurrency [Range 0..N]"). ab.MAX_CONCURRENCY when there is no ab to ask."""
    found = ab_command or shutil.which("ab")
    if found is None:
        return ab.MAX_CONCURRENCY
    too_many = str(10 ** 9)
    try:
        done = subprocess.run([found, "-c", too_many, "-n", too_many, "http://127.0.0.1:1/"], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ab.MAX_CONCURRENCY
    match = re.search(r"Invalid Concurrency \[Range 0\.\.(\d+)\]", done.stderr + done.stdout)
    return int(match.group(1)) if match else ab.MAX_CONCURRENCY


def check_concurrency(lab, params: dict) -> None:
    """UsageError when --concurrency is more than ab accepts, for a lab that loads with ab."""
    concurrency = params.get("concurrency")
    if not isinstance(concurrency, int) or concurrency <= _AB_ALWAYS_ACCEPTS or tools.AB not in lab.tools_needed:
        return
    limit = ab_max_concurrency()
    if concurrency > limit:
        raise UsageError(f"--concurrency {concurrency} is more than ab accepts ({limit}, its MAX_CONCURRENCY): "
                         f"ab would refuse to start. Use --concurrency {limit} or less.")
