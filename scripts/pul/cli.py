"""Command line of the lab driver: `scripts/lab list | run | report`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import exercises, report
from .errors import EXIT_CODES, LabError, UsageError
from .lab import all_labs, resolve
from .procs import Interrupted, signals_raise
from .run import RunOptions, run

USAGE = """scripts/lab COMMAND [...]

Commands:
  list                     the labs, with what each one shows
  run LAB [options]        build LAB, measure every variant, print the table
                           (LAB: 01, 1, 01-non-blocking; `scripts/lab run LAB --help` for its options)
  report [LAB...] [--check]
                           redraw the book's tables and figures from the committed
                           results (--check: fail if a committed one is stale)
  check LAB [EXERCISE...] [--list] [--solution]
                           check your solution of the lab's exercises: build, measure,
                           pass/fail with the measured numbers and a hint
  reset LAB [--force]      put the lab's code back to its starting state (saves your
                           changes to a backup first; refuses without --force)

Exit codes:
""" + "\n".join(f"  {code:3}  {meaning}" for code, meaning in EXIT_CODES.items())


def cmd_list() -> int:
    for number, lab_dir, lab in all_labs():
        if lab is None:
            print(f"{lab_dir.name:28} (no driver support yet)")
            continue
        print(f"{lab_dir.name:28} {lab.title}")
        print(f"{'':28} {lab.summary}")
        print(f"{'':28} variants: {', '.join(lab.variants())}")
    return 0


def run_parser(lab) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"scripts/lab run {lab.number}",
        description=f"Lab {lab.name}: {lab.title}. {lab.summary}")
    parser.add_argument("lab")
    lab.add_arguments(parser)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME",
                        help=f"run only this variant (repeatable): {', '.join(lab.variants())}")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
                        help="pass a configuration setting to the server as -DKEY=VALUE (repeatable), "
                             "e.g. --set akka.actor.default-dispatcher.fork-join-executor.parallelism-max=64")
    parser.add_argument("--port", type=int, help="server port (default: a free one)")
    parser.add_argument("--rebuild", action="store_true", help="run `sbt stage` even if nothing changed")
    parser.add_argument("--no-pin", action="store_true",
                        help="do not pin the server and ab to different cores")
    parser.add_argument("--server-cpus", help="CPU list for the server (taskset -c; default 0)")
    parser.add_argument("--load-cpus", help="CPU list for ab (default 1)")
    parser.add_argument("--warmup", type=int, metavar="N",
                        help="warm-up requests before each variant (default: a fifth of --requests, at least 200)")
    parser.add_argument("--time-limit", type=int, default=120, metavar="S",
                        help="seconds at most per ab run (default 120)")
    parser.add_argument("--results-dir", type=Path,
                        help="write results here instead of the lab's results/ (the book is then left alone)")
    parser.add_argument("--no-report", action="store_true", help="do not update the book's tables and figures")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def cmd_run(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1].startswith("-"):
        raise UsageError("which lab? usage: scripts/lab run LAB [options]  (see `scripts/lab list`)")
    lab = resolve(argv[1])
    options = run_parser(lab).parse_args(argv[1:])
    if options.port is not None and not 1 <= options.port <= 65535:
        raise UsageError(f"--port must be between 1 and 65535 (got {options.port})")
    if options.time_limit < 1:
        raise UsageError("--time-limit must be at least 1 second")
    params = lab.params(options)
    settings = {}
    for setting in options.settings:
        key, sep, value = setting.partition("=")
        if not sep or not key or any(c.isspace() for c in key):
            raise UsageError(f"--set takes KEY=VALUE (got {setting!r})")
        settings[key] = value
    run(lab, params, RunOptions(
        port=options.port, variants=tuple(options.variant), rebuild=options.rebuild,
        pin=not options.no_pin, server_cpus=options.server_cpus, load_cpus=options.load_cpus,
        warmup=options.warmup, time_limit=options.time_limit, results_dir=options.results_dir,
        write_report=not options.no_report, quiet=options.quiet, settings=settings), argv)
    return 0


def cmd_report(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/lab report")
    parser.add_argument("labs", nargs="*")
    parser.add_argument("--check", action="store_true")
    options = parser.parse_args(argv[1:])
    labs = [resolve(name) for name in options.labs] or [lab for _, _, lab in all_labs() if lab]
    if options.check:
        stale = [path for lab in labs for path in report.stale(lab)]
        for path in stale:
            print(f"stale: {path} differs from what its results/latest.json gives "
                  "(run `scripts/lab report`)", file=sys.stderr)
        return 1 if stale else 0
    for lab in labs:
        for path, content in report.render(lab).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            print(f"wrote {path}")
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    commands = {"list": lambda: cmd_list(), "run": lambda: cmd_run(argv),
                "report": lambda: cmd_report(argv),
                "check": lambda: exercises.cmd_check(argv), "reset": lambda: exercises.cmd_reset(argv)}
    if argv[0] not in commands:
        print(f"scripts/lab: unknown command {argv[0]!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    try:
        with signals_raise():
            return commands[argv[0]]()
    except Interrupted as stop:
        print(f"\nscripts/lab: {stop} received; everything this run started has been stopped.", file=sys.stderr)
        return stop.exit_code
    except LabError as error:
        print(f"\nscripts/lab: error: {error}", file=sys.stderr)
        return error.exit_code
