"""Command line of the lab driver: `scripts/lab list | build | run | serve | report | check | reset`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import checks, claims, cpulimit, exercises, glance, play3, playline, profile, report, runtimes, timeline, timings, tools
from .errors import EXIT_CODES, LabError, MissingTool, UsageError
from .lab import all_labs, resolve
from .procs import Children, Interrupted, run_id, signals_raise
from .progress import Progress
from .remote import parse_target
from .run import RunOptions, bench_lock, run
from .serve import DEFAULT_PORT, LOOPBACK, ServeOptions, serve
from .server import build_together
from .watchdog import clean_leftovers

USAGE = """scripts/lab COMMAND [...]

Commands:
  list                     the labs, with what each one shows
  build [LAB...]           build the labs (default: all) ahead of time, e.g. before a workshop,
                           so that `run` and `check` start measuring at once (skips a lab
                           whose sources did not change since its last build; --rebuild)
  run LAB [options]        build LAB, measure every variant, print the table
                           (LAB: 01, 1, 01-non-blocking; `scripts/lab run LAB --help` for its options)
  run LAB --target URL [options]
                           measure a server `scripts/lab serve` runs on another machine
                           (only the variants it is set up for; it says how to serve the others)
  serve LAB [--listen ADDR] [--port N] [options]
                           build LAB and run its server in the foreground, set up as `run` would,
                           for a load generator on another machine; prints the command to type
                           there. Ctrl-C stops it
  report [LAB...] [--check]
                           redraw the book's tables and figures from the committed
                           results (--check: fail if a committed one is stale)
  check LAB [EXERCISE...] [--list] [--solution]
                           check your solution of the lab's exercises: build, measure,
                           pass/fail with the measured numbers and a hint
  reset LAB [--force]      put the lab's code back to its starting state (saves your
                           changes to a backup first; refuses without --force)
  runtimes [list | install [NAME...]]
                           the Java runtimes newer than your JDK that some labs run their
                           server on (lab 06: Java 21 and 25), and installs them from PyPI
                           (`run` installs what it needs by itself)

Exit codes:
""" + "\n".join(f"  {code:3}  {meaning}" for code, meaning in EXIT_CODES.items())


def cmd_list() -> int:
    for number, lab_dir, lab in all_labs():
        if lab is None:
            print(f"{lab_dir.name:28} (no lab.toml: not a lab yet; see CONTRIBUTING.md, \"Adding a lab\")")
            continue
        print(f"{lab_dir.name:28} {lab.title}")
        print(f"{'':28} {lab.summary}")
        print(f"{'':28} variants: {lab.variants_listed()}")
    return 0


def cmd_build(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/lab build",
        description="Build labs with `sbt stage` ahead of time (e.g. before a workshop, or while nothing is "
                    "measured), so that `scripts/lab run` and `check` start measuring at once. A lab whose "
                    "sources did not change since its last build is skipped.")
    parser.add_argument("labs", nargs="*", metavar="LAB", help="the labs to build (01, 1, 01-non-blocking; "
                        "default: every lab)")
    parser.add_argument("--rebuild", action="store_true", help="run `sbt stage` even if nothing changed")
    parser.add_argument("--test", action="store_true",
                        help="run each lab's Play tests too, in the same sbt (`sbt test stage`; lab 03's "
                             "in a throwaway PostgreSQL), and the instruments module's with the first lab's: "
                             "a lab whose tests fail is not staged")
    add_play_option(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    # The labs' solved copies that `check --solution --prepare DIR` left in DIR/labs (scripts/test).
    parser.add_argument("--in", type=Path, dest="copies", metavar="DIR", help=argparse.SUPPRESS)
    options = parser.parse_args(argv[1:])
    labs = [resolve(name) for name in options.labs] or [lab for _, _, lab in all_labs() if lab]
    dirs = [lab.dir for lab in labs]
    if options.copies is not None:
        dirs = [options.copies.resolve() / "labs" / lab.dir.name for lab in labs]
        missing = [str(d) for d in dirs if not (d / "build.sbt").is_file()]
        if missing:
            raise UsageError(f"no prepared copy of a lab at {', '.join(missing)} "
                             "(scripts/lab check NN --solution --prepare DIR makes one)")
    line = playline.choose(options.play)
    clean_leftovers()
    progress = Progress(quiet=options.quiet)
    tools.ensure((tools.JAVA,), progress)
    run_id()
    children = Children()
    try:
        # A build takes the machine's cores: not while someone measures.
        with bench_lock(progress):
            # In one sbt (the instruments module's tests with the first lab's only: they test the
            # module alone).
            build_together(dirs, children, progress, force=options.rebuild, test=options.test)
            progress.clear()
            for lab_dir in dirs:
                print(f"{lab_dir if options.copies else lab_dir.name}: built on {playline.LINES[line]}"
                      f"{', ' + tests_passed(lab_dir) if options.test else ''}, ready to run")
    finally:
        children.stop_all()
    return 0


def tests_passed(lab_dir: Path) -> str:
    """What sbt said of the Play tests in the lab's last build ("Passed: Total 8, Failed 0, ...")."""
    log = (playline.target_dir(lab_dir) / "pul-build.log").read_text(errors="replace")
    said = [line.split("] ", 1)[-1].strip() for line in log.splitlines() if "Passed: Total" in line]
    return "its Play tests passed" + (f" ({said[-1]})" if said else "")


def add_play_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--play", choices=tuple(playline.LINES), metavar="LINE",
                        help="the Play line to build the lab on: 2.9 (Play 2.9.11 on Akka, the default) or 3 "
                             "(Play 3 on Apache Pekko: the same sources, their Akka names translated; "
                             f"default: ${playline.VARIABLE}, else 2.9)")


def add_setup_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by run and serve that choose the server's set-up (besides the lab's own)."""
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
                        help="pass a configuration setting to the server as -DKEY=VALUE (repeatable), "
                             "e.g. --set akka.actor.default-dispatcher.fork-join-executor.parallelism-max=64")


def add_run_options(parser: argparse.ArgumentParser, lab=None) -> None:
    """The options of `scripts/lab run` that do not choose the server's set-up."""
    variants = f": {lab.variants_listed()}" if lab else ""
    parser.add_argument("--variant", action="append", default=[], metavar="NAME",
                        help=f"run only this variant (repeatable; in the order given){variants}")
    parser.add_argument("--target", metavar="URL",
                        help="load the server `scripts/lab serve` runs at URL (http://HOST:PORT), on another "
                             "machine, instead of building and starting one here. Runs only the variants that "
                             "server is set up for, and prints the serve command for the others")
    parser.add_argument("--port", type=int, help="server port (default: a free one)")
    parser.add_argument("--rebuild", action="store_true", help="run `sbt stage` even if nothing changed")
    add_play_option(parser)
    parser.add_argument("--no-pin", action="store_true",
                        help="do not pin the server and ab to different cores")
    parser.add_argument("--server-cpus", help="CPU list for the server (taskset -c; default 0)")
    parser.add_argument("--load-cpus", help="CPU list for ab (default 1)")
    parser.add_argument("--cpu-limit", type=float, metavar="CPUS",
                        help="run the server under a CPU limit, as a container's: CPUS of CPU time (0.5, 1, 2) "
                             "in every period, a control group's quota (root; cgroup v1, or v2 with systemd)")
    parser.add_argument("--cpu-period-ms", type=float, default=cpulimit.DEFAULT_PERIOD_US / 1000, metavar="MS",
                        help=f"the CPU limit's period (default {cpulimit.DEFAULT_PERIOD_US // 1000} ms, as "
                             "Kubernetes and Docker use)")
    parser.add_argument("--warmup", type=int, metavar="N",
                        help="warm-up requests before each variant (default: a fifth of --requests, at least 200)")
    parser.add_argument("--time-limit", type=int, default=120, metavar="S",
                        help="seconds at most per ab run (default 120)")
    parser.add_argument("--results-dir", type=Path,
                        help="write results here instead of the lab's results/ (the book is then left alone)")
    parser.add_argument("--no-report", action="store_true", help="do not update the book's tables and figures")
    parser.add_argument("--timeline-hz", type=int, default=timeline.DEFAULT_HZ, metavar="N",
                        help=f"sample the server's pools N times a second during each measured run, for the "
                             f"timeline figures (default {timeline.DEFAULT_HZ}; 0: no timeline)")
    parser.add_argument("--profile", type=int, nargs="?", const=profile.DEFAULT_PERIOD_MS, default=None, metavar="MS",
                        help=f"record the server with JDK Flight Recorder during each measured run (a stack every "
                             f"MS ms, default {profile.DEFAULT_PERIOD_MS}) and draw each variant's flame graph "
                             f"(needs Rust's cargo once, to install inferno)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def run_parser(lab) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"scripts/lab run {lab.number}",
        description=f"Lab {lab.name}: {lab.title}. {lab.summary}")
    parser.add_argument("lab")
    lab.add_arguments(parser)
    add_setup_options(parser)
    add_run_options(parser, lab)
    return parser


def setup_options(argv: list[str], add_driver_options) -> list[str]:
    """The options after `COMMAND LAB` that choose the server's set-up (the lab's own and --set),
    as typed: what run and serve must agree on. Everything else is left out."""
    driver = argparse.ArgumentParser(add_help=False)
    add_driver_options(driver)
    _, rest = driver.parse_known_args(argv[2:])
    return rest


def parse_settings(settings: list[str]) -> dict[str, str]:
    parsed = {}
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or not key or any(c.isspace() for c in key):
            raise UsageError(f"--set takes KEY=VALUE (got {setting!r})")
        checks.check_setting(key)
        # The book and the labs name settings as Play 2.9 does; a Play 3 server reads Pekko's names.
        parsed[playline.setting(key)] = value
    return parsed


def _check_port(port: int | None) -> None:
    if port is not None and not 1 <= port <= 65535:
        raise UsageError(f"--port must be between 1 and 65535 (got {port})")


def _lab_and_options(argv: list[str], parser_for) -> tuple:
    """`scripts/lab COMMAND LAB [options]`: the lab, and the options its command parser reads."""
    if len(argv) < 2 or argv[1].startswith("-"):
        raise UsageError(f"which lab? usage: scripts/lab {argv[0]} LAB [options]  (see `scripts/lab list`)")
    lab = resolve(argv[1])
    options = parser_for(lab).parse_args(argv[1:])
    _check_port(options.port)
    return lab, options


def cmd_run(argv: list[str]) -> int:
    lab, options = _lab_and_options(argv, run_parser)
    if options.time_limit < 1:
        raise UsageError("--time-limit must be at least 1 second")
    if not 0 <= options.timeline_hz <= timeline.MAX_HZ:
        raise UsageError(f"--timeline-hz must be 0 (no timeline) to {timeline.MAX_HZ} (got {options.timeline_hz})")
    if options.profile is not None and not profile.MIN_PERIOD_MS <= options.profile <= profile.MAX_PERIOD_MS:
        raise UsageError(f"--profile takes a period of {profile.MIN_PERIOD_MS} to {profile.MAX_PERIOD_MS} ms "
                         f"(got {options.profile})")
    if options.target is not None:
        parse_target(options.target)
        for name, given in (("--port", options.port is not None), ("--rebuild", options.rebuild),
                            ("--server-cpus", options.server_cpus is not None), ("--play", options.play is not None),
                            ("--cpu-limit", options.cpu_limit is not None)):
            if given:
                raise UsageError(f"{name} is about the server, which runs on the other machine with --target: "
                                 f"give it to `scripts/lab serve` there")
    cpu_limit = cpu_limit_option(options)
    playline.choose(options.play)
    params = lab.params(options)
    checks.check_run(lab, params, options)
    run(lab, params, RunOptions(
        port=options.port, variants=tuple(options.variant), rebuild=options.rebuild,
        pin=not options.no_pin, server_cpus=options.server_cpus, load_cpus=options.load_cpus,
        warmup=options.warmup, time_limit=options.time_limit, results_dir=options.results_dir,
        write_report=not options.no_report, quiet=options.quiet, settings=parse_settings(options.settings),
        target=options.target, setup_options=tuple(setup_options(argv, add_run_options)),
        timeline_hz=options.timeline_hz, profile_ms=options.profile or 0, cpu_limit=cpu_limit), argv)
    return 0


def cpu_limit_option(options) -> cpulimit.Limit | None:
    """--cpu-limit and --cpu-period-ms as a Limit (None: no limit), checked before any build."""
    if options.cpu_limit is None:
        if options.cpu_period_ms != cpulimit.DEFAULT_PERIOD_US / 1000:
            raise UsageError("--cpu-period-ms is the period of a --cpu-limit: give both")
        return None
    return cpulimit.Limit(options.cpu_limit, round(options.cpu_period_ms * 1000))


def add_serve_options(parser: argparse.ArgumentParser, lab=None) -> None:
    """The options of `scripts/lab serve` that do not choose the server's set-up."""
    variants = f": {lab.variants_listed()}" if lab else ""
    parser.add_argument("--variant", action="append", default=[], metavar="NAME",
                        help="serve the set-up this variant is measured on (repeatable, if they share one; "
                             f"default: the first variant's){variants}")
    parser.add_argument("--listen", default=LOOPBACK, metavar="ADDR",
                        help=f"the address to listen on (default {LOOPBACK}: this machine only). On the `lab` "
                             "VM, 192.168.56.10 lets the `load` VM in. Never 0.0.0.0 on a conference network: "
                             "it is refused unless --listen-anywhere is given too")
    parser.add_argument("--listen-anywhere", action="store_true",
                        help="allow --listen 0.0.0.0 or :: (every network this machine is on can reach the server)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"server port (default {DEFAULT_PORT})")
    parser.add_argument("--rebuild", action="store_true", help="run `sbt stage` even if nothing changed")
    add_play_option(parser)
    parser.add_argument("--no-pin", action="store_true",
                        help="do not pin the server to a core (default: CPU 0 on a machine with at least two)")
    parser.add_argument("--server-cpus", help="CPU list for the server (taskset -c; default 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def serve_parser(lab) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"scripts/lab serve {lab.number}",
        description=f"Lab {lab.name}: {lab.title}. Builds the lab and runs its server in the foreground, "
                    "with the properties `scripts/lab run` would give it, for a load generator on another "
                    "machine: it prints the `scripts/lab run ... --target URL` to type there. The lab's "
                    "options below choose the set-up and must be the same on both machines (the printed "
                    "command has them). Ctrl-C or SIGTERM stops the server and everything it started.")
    parser.add_argument("lab")
    lab.add_arguments(parser)
    add_setup_options(parser)
    add_serve_options(parser, lab)
    return parser


def cmd_serve(argv: list[str]) -> int:
    lab, options = _lab_and_options(argv, serve_parser)
    playline.choose(options.play)
    params = lab.params(options)
    checks.check_serve(lab, params, options)
    try:
        serve(lab, params, ServeOptions(
            listen=options.listen, listen_anywhere=options.listen_anywhere, port=options.port,
            variants=tuple(options.variant), rebuild=options.rebuild, pin=not options.no_pin,
            server_cpus=options.server_cpus, quiet=options.quiet, settings=parse_settings(options.settings)),
            setup_options(argv, add_serve_options))
    except Interrupted as stop:
        # The way a served server is meant to end: not a failure.
        print(f"\nscripts/lab serve: {stop} received; the server and everything it needed are stopped.",
              file=sys.stderr)
    return 0


def cmd_report(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/lab report")
    parser.add_argument("labs", nargs="*")
    parser.add_argument("--check", action="store_true")
    options = parser.parse_args(argv[1:])
    labs = [resolve(name) for name in options.labs] or [lab for _, _, lab in all_labs() if lab]
    profiled = [lab.name for lab in labs if report.profiled_run(lab) is not None]
    if profiled and not profile.can_draw():
        message = (f"the flame graphs of {', '.join(profiled)} are drawn by inferno {profile.INFERNO_VERSION}, "
                   "which needs Rust's cargo to install (https://rustup.rs)")
        if options.check:
            raise MissingTool(f"cannot check them: {message}")
        print(f"note: leaving them as they are: {message}", file=sys.stderr)
    # The book-wide pages (the appendix's table of names, the instructor guide's timings, the worked
    # numbers of "At a glance") with every lab, not with a few named ones.
    book_wide = ((lambda: {**play3.book_artifacts(), **timings.artifacts(), **glance.artifacts()})
                 if not options.labs else dict)
    # The prose's measured claims (pul.claims): every claim, or those naming the labs named.
    verdicts = claims.check(claims.committed_runs(labs), claims.find(),
                            only={lab.number for lab in labs} if options.labs else None)
    false = _false_claims(verdicts)
    if options.check:
        stale = [path for lab in labs for path in report.stale(lab)]
        stale += report.stale_files(book_wide())
        for path in stale:
            print(f"stale: {path} differs from what its results/latest.json gives "
                  "(run `scripts/lab report`)", file=sys.stderr)
        return 1 if stale or false else 0
    for lab in labs:
        for path in report.write_all(report.render(lab)):
            print(f"wrote {path}")
    for path in report.write_all(book_wide()):
        print(f"wrote {path}")
    return 1 if false else 0


def _false_claims(verdicts: list) -> list:
    """Say each claim the runs make false; return those that fail the check: a claim on a run of
    the reader's own is a note (pul.claims)."""
    failing = []
    for verdict in verdicts:
        if verdict.holds:
            continue
        measured = "; ".join(verdict.shown)
        if verdict.binding:
            failing.append(verdict)
            print(f"false claim: {verdict.claim.where()}: the prose claims `{verdict.claim.text}`, but the committed "
                  f"run has {measured}: change the sentence or the run", file=sys.stderr)
        else:
            print(f"note: {verdict.claim.where()}: the book claims `{verdict.claim.text}` of its committed run; "
                  f"your run has {measured}", file=sys.stderr)
    return failing


def cmd_runtimes(argv: list[str]) -> int:
    if argv[1:2] not in ([], ["list"], ["install"]) or (argv[1:2] == ["list"] and len(argv) > 2):
        raise UsageError("usage: scripts/lab runtimes [list | install [NAME...]]")
    return runtimes.main(argv[1:] or ["list"])


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    commands = {"list": lambda: cmd_list(), "build": lambda: cmd_build(argv), "run": lambda: cmd_run(argv),
                "serve": lambda: cmd_serve(argv), "report": lambda: cmd_report(argv),
                "check": lambda: exercises.cmd_check(argv), "reset": lambda: exercises.cmd_reset(argv),
                "runtimes": lambda: cmd_runtimes(argv)}
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
