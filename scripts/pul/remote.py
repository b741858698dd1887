"""A lab server on another machine: `scripts/lab serve` starts it, `scripts/lab run --target` loads it.

The load machine cannot start, stop or look inside the remote server, so it learns
everything from the server's /pools report: the pool sizes (for the predictions, as
for a local server), the JVM's own CPU time (its /proc is out of reach), and the -D
properties the server was started with. Each step runs only if those properties are
exactly the ones the driver would have given that step's server; the others are
skipped, each with the `scripts/lab serve` command that serves it.
"""

from __future__ import annotations

import ipaddress
import json
import shlex
import socket
import urllib.parse
from dataclasses import dataclass

from .errors import ServerFailed, UsageError
from .lab import Lab, Step, default_run
from .progress import Progress
from .server import WHERE_NOT_WHAT, http_fetch, http_get, url_host

# Every server the driver starts carries its lab's name, so a load machine can tell labs apart.
LAB_PROPERTY = "pul.lab"


def server_properties(lab: Lab, params: dict, step_setup: dict, settings: dict,
                      service_properties: dict | None = None) -> dict[str, str]:
    """Every -D property a step's server gets, the later sources winning: the lab's, its services'
    (a database), the step's own, --set, and the lab's name."""
    return {**lab.server_properties(params), **(service_properties or {}), **step_setup, **settings,
            LAB_PROPERTY: lab.name}


def parse_target(text: str) -> tuple[str, str, int]:
    """`http://HOST:PORT` -> (base URL, host, port); UsageError with the expected form otherwise."""
    form = "--target takes the server's base URL, http://HOST:PORT (as `scripts/lab serve` prints it)"
    try:
        url = urllib.parse.urlsplit(text.strip())
        port = url.port
    except ValueError as error:
        raise UsageError(f"{form}; {text!r} is not a URL ({error})")
    if url.scheme != "http":
        raise UsageError(f"{form}; got {text!r}" + (" (the labs serve plain http)" if url.scheme == "https" else ""))
    if not url.hostname:
        raise UsageError(f"{form}; {text!r} names no host")
    if not port:
        raise UsageError(f"{form}; {text!r} names no port")
    if url.path not in ("", "/") or url.query or url.fragment or url.username or url.password:
        raise UsageError(f"{form}, without a path; got {text!r}")
    return f"http://{url_host(url.hostname)}:{port}", url.hostname, port


def check_listen_address(address: str, anywhere: bool) -> None:
    """A numeric address of this machine; every interface only when asked for by name."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise UsageError(f"--listen takes an IP address of this machine, e.g. 192.168.56.10 (got {address!r})")
    if ip.is_unspecified and not anywhere:
        raise UsageError(f"--listen {address} would let every network this machine is on reach the server "
                         "(on a conference network: the whole room). Listen on the private network's address "
                         "instead (the `lab` VM's is 192.168.56.10), or add --listen-anywhere if you mean it.")
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    with socket.socket(family) as probe:
        try:
            probe.bind((address, 0))
        except OSError:
            raise UsageError(f"--listen {address}: not an address of this machine (`ip -brief address` "
                             "lists them)")


def command_line(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)


def run_command(lab: Lab, setup_options: list[str], variants: list[str], url: str) -> str:
    """What to type on the load machine to measure these variants of a served lab."""
    return command_line("scripts/lab", "run", lab.number, "--target", url, *setup_options,
                        *(w for v in variants for w in ("--variant", v)))


def serve_command(lab: Lab, setup_options: list[str], variants: list[str], host: str, port: int) -> str:
    """What to type on the server's machine to serve these variants."""
    listen = [] if host in ("127.0.0.1", "localhost") else ["--listen", host]
    return command_line("scripts/lab", "serve", lab.number, *setup_options,
                        *(w for v in variants for w in ("--variant", v)), *listen, "--port", str(port))


@dataclass
class Skipped:
    """A step the remote server cannot serve, with what differs and how to serve it."""

    step: Step
    differences: list[str]
    serve_command: str

    def record(self) -> dict:
        return {"name": self.step.name, "differences": self.differences, "serve_command": self.serve_command}


def differences(wanted: dict[str, str], served: dict[str, str]) -> list[str]:
    """Human-readable differences between the properties a step needs and those a server has."""
    found = []
    for key in sorted(set(wanted) | set(served)):
        if wanted.get(key) != served.get(key):
            has = "not set" if key not in served else repr(served[key])
            needs = "not set" if key not in wanted else repr(wanted[key])
            found.append(f"{key}: the server has {has}, this step needs {needs}")
    return found


class RemoteServer:
    """A server some other process started (`scripts/lab serve`), seen through HTTP only.

    It offers what run.py uses of a Server: base_url, start/stop (no-ops), alive, get,
    pools, cpu_seconds, log_path and log_tail."""

    cpu_source = "pools"

    def __init__(self, url: str):
        self.base_url, self.host, self.port = parse_target(url)
        self.log_path = f"the terminal running `scripts/lab serve` on {self.host}"

    def get(self, path: str, timeout: float = 10) -> bytes | None:
        return http_get(self.base_url + path, timeout)

    def pools(self) -> dict:
        answer = http_fetch(self.base_url + "/pools", timeout=30)
        if answer.status is None:
            raise ServerFailed(f"the server at {self.base_url} did not answer /pools ({answer.reason}). Is "
                               f"`scripts/lab serve` running on {self.host}, and is {self.host} reachable from "
                               f"here (curl {self.base_url}/status)?")
        if not answer.ok:
            hint = ""
            if answer.status == 400 and b"host not allowed" in answer.body.lower():
                # Play's AllowedHostsFilter: the Host header (this URL's host) is not in the server's
                # play.filters.hosts.allowed.
                hint = (f" The server does not accept requests addressed to {self.host} (its "
                        f"play.filters.hosts.allowed): `scripts/lab serve NN --listen {self.host}` starts one "
                        "that does; use the URL it prints.")
            raise ServerFailed(f"{self.base_url}/pools answered {answer.describe()}.{hint}")
        body = answer.body
        try:
            return json.loads(body)
        except ValueError:
            raise ServerFailed(f"{self.base_url}/pools did not answer JSON: is it a lab server?")

    def cpu_seconds(self) -> float:
        """CPU time the remote JVM has used so far, as it reports it on /pools."""
        seconds = self.pools().get("process_cpu_seconds")
        if seconds is None:
            raise ServerFailed(f"the server at {self.base_url} does not report process_cpu_seconds on /pools "
                               "(a lab built before the driver could load a remote server: restart "
                               "`scripts/lab serve` with --rebuild)")
        return float(seconds)

    def start(self, children, progress: Progress) -> None:
        progress.note(f"loading the server at {self.base_url} (started by `scripts/lab serve` there)")

    def alive(self) -> bool:
        # A dead server shows soon enough: ab fails, and the next /pools read raises ServerFailed.
        return True

    def log_tail(self, lines: int = 25) -> str:
        return f"(the server's log is on {self.host}: labs/NN-name/target/pul/serve.log)"

    def stop(self, children) -> None:
        """Not ours to stop."""

    # -- which steps it can serve ---------------------------------------------
    def served_properties(self, lab: Lab, pools: dict) -> dict[str, str]:
        """The -D properties the server started with that choose its set-up (not where it listens)."""
        properties = pools.get("properties")
        if properties is None:
            raise UsageError(f"the server at {self.base_url} does not report its properties on /pools, so "
                             "there is no telling what it would measure. Start it with "
                             f"`scripts/lab serve {lab.number}` (add --rebuild if it is already running).")
        served_lab = properties.get(LAB_PROPERTY)
        if served_lab != lab.name:
            raise UsageError(f"the server at {self.base_url} is "
                             + (f"lab {served_lab}" if served_lab else "not a server `scripts/lab serve` started")
                             + f", not lab {lab.name}. Start it with `scripts/lab serve {lab.number}`.")
        return {k: v for k, v in properties.items() if k not in WHERE_NOT_WHAT}

    def split_steps(self, lab: Lab, params: dict, steps: list[Step], settings: dict, pools: dict,
                    setup_options: list[str]) -> tuple[list[Step], list[Skipped]]:
        """(the steps this server is set up for, the others with what differs and how to serve them).
        UsageError when it serves none of them: measuring then would only measure the wrong set-up."""
        served = self.served_properties(lab, pools)
        matching, other = [], []
        for step in steps:
            wanted = server_properties(lab, params, step.setup, settings)
            (matching if wanted == served else other).append((step, differences(wanted, served)))
        # `scripts/lab serve` without --variant serves the set-up of the lab's first step (of a
        # default run: a named-only variant is not in it).
        all_steps = default_run(lab.steps(params))
        first_set_up = [s.name for s in all_steps if s.setup == all_steps[0].setup]
        skipped = []
        for step, found in other:
            # One serve command per set-up: every skipped step that shares this one's server.
            together = [s.name for s, _ in other if s.setup == step.setup]
            variants = [] if together == first_set_up else together
            skipped.append(Skipped(step, found, serve_command(lab, setup_options, variants, self.host, self.port)))
        if not matching:
            raise UsageError(f"the server at {self.base_url} is not set up for any step of this run, so "
                             "nothing would measure what it claims to:\n" + describe_skipped(skipped))
        return [s for s, _ in matching], skipped


def describe_skipped(skipped: list[Skipped]) -> str:
    """The skipped steps, grouped by the serve command that would serve them."""
    lines = []
    commands: dict[str, list[Skipped]] = {}
    for s in skipped:
        commands.setdefault(s.serve_command, []).append(s)
    for command, group in commands.items():
        lines.append(f"  {', '.join(s.step.name for s in group)}: needs a server with other properties "
                     f"({'; '.join(group[0].differences)}).")
        lines.append("    Stop the current one (Ctrl-C), then serve them with:")
        lines.append(f"    {command}")
    return "\n".join(lines)
