"""`scripts/lab serve`: one of a lab's server set-ups, in the foreground, for a load generator
on another machine (`scripts/lab run LAB --target URL` there).

The server is started exactly as `scripts/lab run` would start it for the chosen steps: the
same build, services (lab 03's database), -D properties and pinning. It runs until Ctrl-C or
SIGTERM, which stop its whole process group; and it holds this machine's bench lock all along,
so that no other measurement here disturbs the one it serves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from . import cpulimit, limits, profile, runtimes, tools
from .errors import ServerFailed, UsageError
from .lab import Lab
from .procs import Children, run_id
from .progress import Progress
from .remote import check_listen_address, run_command, serve_command, server_properties
from .run import Context, RunOptions, bench_lock, group_by_server, pinning, select_steps
from .server import Server, build, check_port
from .watchdog import clean_leftovers

DEFAULT_PORT = 9000
LOOPBACK = "127.0.0.1"


@dataclass
class ServeOptions:
    listen: str = LOOPBACK
    listen_anywhere: bool = False
    port: int = DEFAULT_PORT
    variants: tuple[str, ...] = ()
    rebuild: bool = False
    pin: bool = True
    server_cpus: str | None = None
    quiet: bool = False
    settings: dict = field(default_factory=dict)


def serve(lab: Lab, params: dict, options: ServeOptions, setup_options: list[str]) -> None:
    """Start the server for the first set-up among the chosen steps; return when it stops."""
    clean_leftovers()
    progress = Progress(quiet=options.quiet)
    children = Children()
    run_id()
    check_listen_address(options.listen, options.listen_anywhere)
    groups = group_by_server(select_steps(lab, params, options.variants))
    if options.variants and len(groups) > 1:
        raise UsageError("these variants need servers with different properties, and one server has one set "
                         "of them. Serve them one set-up at a time:\n"
                         + "\n".join("  " + serve_command(lab, setup_options, [s.name for s in group],
                                                          options.listen, options.port)
                                     for _, group in groups))
    props, served = groups[0]
    check_port(options.port, options.listen)
    # The load generators run on the other machine.
    tools.ensure(tuple(t for t in lab.tools_needed if t not in (tools.AB, tools.WRK)), progress)
    runtimes.ensure({s.runtime for s in served}, progress)
    limit_note = limits.raise_open_files(max(s.concurrency for s in served) + 1024)
    if limit_note:
        progress.note(limit_note)
    pin = pinning(RunOptions(pin=options.pin, server_cpus=options.server_cpus))
    # A variant served under a CPU limit (Step.cpu_limit): can this machine make it? Said before the build.
    limit = served[0].cpu_limit
    cpu_group = cpulimit.Group(limit, cpulimit.find_hierarchy()) if limit else None
    work_dir = lab.dir / "target" / "pul"
    try:
        with bench_lock(progress):
            script = build(lab.dir, children, progress, force=options.rebuild)
            with lab.services(Context(children, progress, work_dir), params) as services:
                server = Server(script, options.port, work_dir / "serve.log", pin["server_cpus"],
                                server_properties(lab, params, props, options.settings, services.properties),
                                host=options.listen, env={**services.env, **runtimes.env(served[0].runtime)},
                                # Deep enough stacks for a `run --target ... --profile` from the other machine.
                                extra_jvm_options=(*served[0].jvm_options, *profile.JVM_OPTIONS), cpu_group=cpu_group)
                try:
                    if cpu_group:
                        cpu_group.make()
                    server.start(children, progress)
                    progress.clear()
                    _print_instructions(lab, server, [s.name for s in served], groups, setup_options, options)
                    while server.alive():
                        time.sleep(0.5)
                    raise ServerFailed(f"the server stopped (exit code {server.child.popen.returncode}). "
                                       f"Last lines of {server.log_path}:\n{server.log_tail()}")
                finally:
                    server.stop(children)
                    if cpu_group:
                        cpu_group.remove()
    finally:
        children.stop_all()


def _print_instructions(lab: Lab, server: Server, served: list[str], groups: list, setup_options: list[str],
                        options: ServeOptions) -> None:
    all_steps = [s.name for _, group in groups for s in group]
    # No --variant needed when this server serves everything the run would measure.
    variants = [] if served == all_steps and not options.variants else served
    print(f"\nLab {lab.name}: serving {', '.join(served)} at {server.base_url}"
          + (f", pinned to CPU {server.server_cpus}" if server.server_cpus is not None else ""))
    print(f"Server log: {server.log_path}")
    print("\nOn the load machine, type:")
    print(f"  {run_command(lab, setup_options, variants, server.base_url)}")
    if options.listen == LOOPBACK:
        print(f"({LOOPBACK} is reachable from this machine only. For the `load` VM, serve on the private "
              "network's address instead: --listen 192.168.56.10)")
    else:
        print(f"(Anyone who can reach {options.listen} can reach this server while it runs.)")
    others = [group for _, group in groups[1:]]
    if others:
        print("\nThe other steps need servers with other properties; serve them one at a time with:")
        for group in others:
            print(f"  {serve_command(lab, setup_options, [s.name for s in group], options.listen, options.port)}")
    print("\nCtrl-C stops the server.", flush=True)
