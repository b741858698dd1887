"""A CPU profile of the server during a step's measured runs, and its flame graph.

Every lab's server keeps a JDK Flight Recorder profiler (labs/instruments/app/instruments/CpuProfile.java): the
driver starts it before a measured run (POST /profile/start?period_ms=N) and takes its stacks
after (POST /profile/stop), folded into the "collapsed" format every flame-graph tool reads:
one line per distinct stack, root first, frames separated by ';', then the number of samples.
The root frame is the thread's pool. Over HTTP, so that a server on another machine can be
profiled too.

The folded stacks go beside the run's raw output (VARIANT.folded.gz, gzipped: tens of KB); the
variant's `profile` in the results names the file and keeps the counts. The flame graphs are
drawn by inferno's `inferno-flamegraph` (crates.io, a Rust port of Brendan Gregg's FlameGraph),
pinned and installed once into the user's cache with cargo: its SVG is static (a book can
include it as a figure), it takes our folded stacks as they are, and it colours each frame from
a palette map we give it (whose code the frame is: LAYERS), the same in every run.
async-profiler's converter (Maven Central) draws only HTML pages on a canvas.
"""

from __future__ import annotations

import gzip
import html
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from .errors import BadResults, LabError, MissingTool
from .runtimes import cache_dir
from .server import http_fetch

# Every 10 ms, JFR's own "profile" setting for execution samples (default.jfc takes 20 ms).
DEFAULT_PERIOD_MS = 10
# The server's limits (CpuProfile.MIN_PERIOD_MS, MAX_PERIOD_MS).
MIN_PERIOD_MS, MAX_PERIOD_MS = 1, 1000
# JFR keeps 64 frames of a stack by default (measured: without this option lab 04's deepest
# stacks stopped at 64, cut short; with it they reach 98). A profiled server starts with room for
# this many.
STACK_DEPTH = 1024
JVM_OPTIONS = (f"-XX:FlightRecorderOptions:stackdepth={STACK_DEPTH}",)
# The most a folded file may hold once unpacked (a results file is untrusted input).
MAX_FOLDED_BYTES = 64 * 1024 * 1024
# The hottest frames a variant's `profile` lists (by their own samples).
TOP_FRAMES = 12

INFERNO_VERSION = "0.12.8"
INFERNO_CRATE = ("inferno", "--version", INFERNO_VERSION, "--locked", "--no-default-features", "--features", "cli")


class ProfileUnavailable(Exception):
    """The server has no profiler (an older build) or the profile could not be taken."""


@dataclass
class Folded:
    """Folded stacks: {stack: samples}, and how they were taken."""

    period_ms: int
    stacks: dict[str, int] = field(default_factory=dict)
    truncated: int = 0
    deepest: int = 0
    # The server's CPU time while it recorded (None: unknown); not in the folded file.
    cpu_seconds: float | None = None

    @property
    def samples(self) -> int:
        return sum(self.stacks.values())

    def add(self, other: "Folded") -> None:
        if other.period_ms != self.period_ms:
            raise ValueError(f"cannot add a profile sampled every {other.period_ms} ms to one of {self.period_ms} ms")
        for stack, count in other.stacks.items():
            self.stacks[stack] = self.stacks.get(stack, 0) + count
        self.truncated += other.truncated
        self.deepest = max(self.deepest, other.deepest)
        if other.cpu_seconds is not None:
            self.cpu_seconds = (self.cpu_seconds or 0.0) + other.cpu_seconds

    def text(self) -> str:
        """The collapsed format, with the header CpuProfile writes, lines sorted (same stacks,
        same file)."""
        return (f"# period_ms {self.period_ms}\n# samples {self.samples}\n"
                f"# truncated {self.truncated}\n# deepest {self.deepest}\n" + self.lines())

    def lines(self) -> str:
        """The stacks alone, as flame-graph tools read them."""
        return "".join(f"{stack} {count}\n" for stack, count in sorted(self.stacks.items()))


def parse(text: str, where: str = "profile") -> Folded:
    """Folded stacks from CpuProfile's answer or a .folded file; ValueError naming the bad line."""
    header: dict[str, int] = {}
    stacks: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line:
            continue
        if line.startswith("#"):
            key, _, value = line[1:].strip().partition(" ")
            if key in ("period_ms", "samples", "truncated", "deepest"):
                header[key] = _count(value, f"{where}:{number}")
            continue
        stack, _, count = line.rpartition(" ")
        if not stack:
            raise ValueError(f"{where}:{number}: not 'STACK COUNT': {line[:120]!r}")
        stacks[stack] = stacks.get(stack, 0) + _count(count, f"{where}:{number}")
    if "period_ms" not in header:
        raise ValueError(f"{where}: no '# period_ms' line")
    folded = Folded(header["period_ms"], stacks, header.get("truncated", 0), header.get("deepest", 0))
    if "samples" in header and header["samples"] != folded.samples:
        raise ValueError(f"{where}: says {header['samples']} samples, its stacks hold {folded.samples}")
    return folded


def _count(value: str, where: str) -> int:
    if not value.isdigit():
        raise ValueError(f"{where}: {value[:40]!r} is not a count")
    return int(value)


class Profile:
    """Starts the server's profiler and takes its stacks."""

    def __init__(self, base_url: str, period_ms: int = DEFAULT_PERIOD_MS, timeout: float = 60, cpu=None):
        self.base_url, self.period_ms, self.timeout = base_url.rstrip("/"), period_ms, timeout
        # The server's CPU seconds so far (a callable), read at start and before the stop.
        self.cpu, self.cpu_before = cpu, None

    def start(self) -> "Profile":
        self.cpu_before = self.cpu() if self.cpu else None
        answer = http_fetch(f"{self.base_url}/profile/start?period_ms={self.period_ms}", self.timeout, method="POST")
        if answer.status == 404:
            raise ProfileUnavailable(f"{self.base_url} has no /profile/start (rebuild the lab: scripts/lab build)")
        if not answer.ok:
            raise ProfileUnavailable(f"POST /profile/start?period_ms={self.period_ms}: {answer.describe()}")
        return self

    def finish(self) -> Folded:
        # Before the stop: reading the recording back costs the server CPU of its own.
        cpu = self.cpu() - self.cpu_before if self.cpu_before is not None else None
        answer = http_fetch(f"{self.base_url}/profile/stop", self.timeout, method="POST")
        if not answer.ok:
            raise ProfileUnavailable(f"POST /profile/stop: {answer.describe()}")
        try:
            folded = parse(answer.body.decode(), "POST /profile/stop")
        except (UnicodeDecodeError, ValueError) as error:
            raise ProfileUnavailable(f"POST /profile/stop answered no profile ({error})") from None
        folded.cpu_seconds = None if cpu is None else round(cpu, 3)
        return folded


def write(folded: Folded, path: Path) -> None:
    """The folded stacks, gzipped with no time stamp (the same stacks give the same bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(folded.text().encode(), mtime=0))


def read(path: Path) -> Folded:
    """A .folded.gz file written by `write`, checked (its size, its lines)."""
    try:
        with gzip.open(path, "rb") as packed:
            data = packed.read(MAX_FOLDED_BYTES + 1)
    except (OSError, EOFError) as error:
        raise BadResults(f"{path}: not a gzipped folded profile ({error})")
    if len(data) > MAX_FOLDED_BYTES:
        raise BadResults(f"{path}: more than {MAX_FOLDED_BYTES // 2**20} MB of stacks once unpacked")
    try:
        return parse(data.decode(), str(path))
    except (UnicodeDecodeError, ValueError) as error:
        raise BadResults(f"{path}: {error}")


def folded_file(results_dir: Path, record: dict) -> Path:
    """The folded file a variant's `profile` names, which must lie inside its results folder."""
    name = record["file"]
    path = (results_dir / name).resolve()
    if Path(name).is_absolute() or results_dir.resolve() not in path.parents:
        raise BadResults(f"profile file {name!r} is outside its results folder {results_dir}")
    return path


def summarise(folded: Folded, file: str) -> dict:
    """A variant's `profile`: how it was taken, its file, and where its samples went by pool and
    by frame (a frame's own samples: those where it is the innermost frame)."""
    total = folded.samples
    pools: dict[str, int] = {}
    own: dict[str, int] = {}
    for stack, count in folded.stacks.items():
        frames = stack.split(";")
        pools[frames[0]] = pools.get(frames[0], 0) + count
        own[frames[-1]] = own.get(frames[-1], 0) + count

    def share(count: int) -> float:
        return round(count / total, 4) if total else 0.0

    return {
        "period_ms": folded.period_ms,
        "samples": total,
        "server_cpu_seconds": folded.cpu_seconds,
        "truncated": folded.truncated,
        "deepest": folded.deepest,
        "file": file,
        "pools": [{"pool": pool, "share": share(n)} for pool, n in sorted(pools.items(), key=lambda p: -p[1])],
        "hottest": [{"frame": frame, "share": share(n)}
                    for frame, n in sorted(own.items(), key=lambda f: (-f[1], f[0]))[:TOP_FRAMES]],
    }


def share_under(folded: Folded, match) -> float:
    """The share of samples whose stack has a frame for which `match(frame)` is true."""
    total = folded.samples
    hits = sum(count for stack, count in folded.stacks.items() if any(match(f) for f in stack.split(";")))
    return hits / total if total else 0.0


def subtitle(record: dict) -> str:
    """What a flame graph counts, and what its colours mean."""
    return f"{record['samples']:,} JFR samples, every {record['period_ms']} ms. {LEGEND}"


def title(lab_name: str, variant: dict) -> str:
    return (f"Lab {lab_name}, {variant['name']}: where the Java code ran "
            f"({variant['requests_per_sec']:,.0f} req/s at c={variant['concurrency']})")


# -- the flame graphs (inferno) ----------------------------------------------------

# Where `cargo install --root DIR` puts the flame-graph program.
INFERNO_IN_ROOT = Path("bin") / "inferno-flamegraph"


def inferno_dir() -> Path:
    return cache_dir() / "tools" / f"inferno-{INFERNO_VERSION}"


def inferno_installed() -> Path | None:
    """inferno-flamegraph in the cache, if it is installed."""
    binary = inferno_dir() / INFERNO_IN_ROOT
    return binary if binary.is_file() else None


def cargo() -> str | None:
    """Rust's cargo: on PATH, or where rustup puts it."""
    return shutil.which("cargo") or next(
        (str(p) for p in [Path.home() / ".cargo" / "bin" / "cargo"] if p.is_file() and os.access(p, os.X_OK)), None)


def can_draw() -> bool:
    """Whether flame graphs can be drawn here: inferno installed, or cargo to install it."""
    return inferno_installed() is not None or cargo() is not None


def inferno(say=print) -> Path:
    """inferno-flamegraph, installed into the cache with cargo when missing (about 30 s, once).
    The build lands beside the final folder and is renamed into place: an interrupted install
    leaves nothing half-built behind."""
    binary = inferno_installed()
    if binary:
        return binary
    rust = cargo()
    if rust is None:
        raise MissingTool(f"the flame graphs are drawn by inferno {INFERNO_VERSION} (crates.io), which needs Rust's "
                          "cargo 1.71 or newer to install, and there is no cargo here: install Rust "
                          "(https://rustup.rs), or run without --profile")
    target = inferno_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    say(f"installing inferno {INFERNO_VERSION} from crates.io (once, about 30 s) into {target}")
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        result = subprocess.run([rust, "install", *INFERNO_CRATE, "--root", str(scratch)],
                                capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if result.returncode != 0 or not (scratch / INFERNO_IN_ROOT).is_file():
            raise MissingTool(f"cargo install inferno {INFERNO_VERSION} failed (it needs Rust 1.71 or newer):\n"
                              f"{(result.stderr or result.stdout).strip()[-1500:]}")
        if not inferno_installed():  # else another install (a parallel test part) finished first
            shutil.rmtree(target, ignore_errors=True)
            scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target / INFERNO_IN_ROOT


# Each frame's colour tells whose code it is, from its name; the first prefix that matches wins.
LAYERS = (
    ("pool", ("[",), (150, 150, 150)),
    ("Play", ("play/", "router/", "views/"), (80, 130, 220)),
    ("Akka", ("akka/", "org/apache/pekko/"), (160, 110, 210)),  # Pekko on Play 3: the same layer
    ("Scala", ("scala/",), (225, 190, 60)),
    ("JDK", ("java/", "javax/", "jdk/", "sun/", "com/sun/"), (110, 185, 110)),
    ("libraries", ("com/", "org/", "io/", "net/", "ch/"), (190, 160, 120)),
)
# Everything else is the lab's own code (controllers, filters, work, ...).
OWN_CODE = ("the lab's code", (230, 90, 60))
LEGEND = "red: lab code, blue: Play, purple: Akka (Pekko on Play 3), yellow: Scala, green: JDK, tan: libraries, grey: pool"


def layer(frame: str) -> tuple[str, tuple[int, int, int]]:
    """Whose code a frame is, and its colour."""
    for name, prefixes, colour in LAYERS:
        if frame.startswith(prefixes):
            return name, colour
    return OWN_CODE


def palette(folded: Folded) -> str:
    """inferno's palette.map for these stacks: every frame in its layer's colour, a little lighter
    or darker by its name (neighbours stay apart, and the same frame gets the same colour)."""
    frames = {frame for stack in folded.stacks for frame in stack.split(";")}
    # inferno's own root frame ("all"), under every stack: its name is empty.
    lines = ["->rgb({},{},{})\n".format(*LAYERS[0][2])]
    for frame in sorted(frames):
        if "->" in frame:
            continue  # the map's separator: inferno picks a colour of its own
        shade = zlib.crc32(frame.encode()) % 41 - 20
        r, g, b = (max(0, min(255, c + shade)) for c in layer(frame)[1])
        lines.append(f"{frame}->rgb({r},{g},{b})\n")
    return "".join(lines)


def flame_svg(folded: Folded, title: str, subtitle: str = "", width: int = 1200, min_width: float = 0.25,
              say=print) -> str:
    """The flame graph of these stacks, as SVG text: one box per frame, as wide as its share of the
    samples, callers below callees, coloured by whose code it is (LAYERS); frames narrower than
    `min_width` percent are left out (they cannot be read, and they make the file large). The
    same stacks give the same bytes."""
    binary = inferno(say)
    command = [str(binary), "--title", title, "--cp", "--width", str(width), "--minwidth", str(min_width),
               "--countname", "samples"]
    if subtitle:
        command += ["--subtitle", subtitle]
    # --cp reads ./palette.map (and writes back the colours it added).
    with tempfile.TemporaryDirectory(prefix="pul-flame-") as scratch:
        (Path(scratch) / "palette.map").write_text(palette(folded))
        try:
            result = subprocess.run(command, input=folded.lines(), capture_output=True, text=True, timeout=120,
                                    cwd=scratch)
        except subprocess.TimeoutExpired:
            raise LabError("inferno-flamegraph took more than 120 s")
    if result.returncode != 0:
        raise LabError(f"inferno-flamegraph failed: {result.stderr.strip()[-800:]}")
    # The figure's own <title> first, which a screen reader announces (each frame has one too).
    svg, count = re.subn(r"(<svg\b[^>]*>)", lambda m: f"{m.group(1)}<title>{html.escape(title)}</title>",
                         result.stdout, count=1)
    if not count:
        raise LabError("inferno-flamegraph wrote no <svg> element")
    return svg
