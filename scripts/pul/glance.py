"""The book's "At a glance" page: each rule's worked number, from the labs' runs.

`artifacts()` gives {path: text} for book/src/generated/at-a-glance-*.md, one file per rule of
book/src/at-a-glance.md, written from each lab's results/latest.json (and what its report.py
computes of it, `facts`). `scripts/lab report` writes them with the other book-wide pages and
`scripts/lab report --check` fails when one is stale; `scripts/lab run NN` rewrites the ones its
run feeds. Symbols as book/src/symbols.md defines them.

Each rule lives in the lab whose run it works on: the lab's report.py maps the rule's name to a
function of that run (`GLANCE = {"knee": glance_knee}`), and this module collects them, and gives
the rules what they share: the run as they read it (`Run`), the way they write a number, and
what Akka and Play configure by default.

A reader's own run may lack a variant a rule reads (`--variant NAME`): the rule then says so
instead of a number, and the page still builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from typing import Callable

from .lab import Lab, LabError, all_labs
from .results import load

GENERATED = Path("book") / "src" / "generated"

# The question the page answers with the rules: "50 ms of blocking, 100 clients, 4 cores: what
# throughput and latency?" (round numbers of a reader's own service, not a measurement).
EXAMPLE = {"wait_ms": 50, "clients": 100, "cores": 4}
# Akka's default dispatcher: parallelism-min 8, factor 1.0, max 64 (reference.conf of Akka 2.6
# and Pekko 1.0), so max(8, cores) threads, at most 64.
DEFAULT_DISPATCHER = {"min": 8, "factor": 1.0, "max": 64}
# Play's HikariCP pool: play.db.prototype.hikaricp.maximumPoolSize = 10 (play-jdbc's reference.conf,
# the same at Play 2.9.11 and 3.0.9).
PLAY_MAX_POOL_SIZE = 10


@dataclass
class Run:
    """One lab's run as a rule reads it: its results (None without any) and its report's facts."""

    number: str
    data: dict | None
    lab: Lab | None = None
    _facts: dict | None = field(default=None, repr=False)

    def variant(self, name: str) -> dict | None:
        return next((v for v in (self.data or {}).get("variants", []) if v["name"] == name), None)

    def facts(self) -> dict:
        """What the lab's report.py computes of the run (pul.claims' labNN.facts); none where it
        cannot work on this run (a reader's run of a few variants may lack what it reads)."""
        if self._facts is None:
            try:
                self._facts = self.lab.facts(self.data) if self.lab is not None and self.data else {}
            except (KeyError, IndexError, TypeError, ValueError, StopIteration, ZeroDivisionError):
                self._facts = {}
        return self._facts


def shown(x: float, digits: int) -> float:
    """`x` as the page shows it, to `digits` decimals: a formula's result is worked from its inputs
    as shown, so that its last digit is the reader's own arithmetic."""
    return float(f"{x:.{digits}f}")


def rate(x: float) -> str:
    return f"{x:,.0f} req/s"


def ms(x: float, digits: int = 1) -> str:
    return f"{x:,.{digits}f} ms"


def us(x: float) -> str:
    """Microseconds to two or three significant figures (0.15 µs, 7.7 µs, 138 µs)."""
    return f"{x:,.{2 if abs(x) < 1 else 1 if abs(x) < 100 else 0}f} µs"


def seconds(millis: float) -> str:
    """Milliseconds as seconds, as the formulas write them (0.030 s)."""
    return f"{millis / 1000:.3f} s"


def missing(run: Run, *names: str) -> str:
    """What a rule says instead of its number where the run lacks what it reads."""
    if not run.data:
        return f"Lab {run.number} has no run to work this rule on: `scripts/lab run {run.number}` makes one.\n"
    quoted = [f"`{name}`" for name in names]
    what = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return (f"Lab {run.number}'s run has no {what} to work this rule on: `scripts/lab run {run.number}` "
            "measures it.\n")


def run_line(run: Run) -> str:
    return f"Lab {run.number}'s run (`scripts/lab run {run.number}`)"


def default_dispatcher_threads(cores: int) -> int:
    """Akka's fork-join default dispatcher: cores × factor, at least min, at most max."""
    d = DEFAULT_DISPATCHER
    return int(min(d["max"], max(d["min"], cores * d["factor"])))


# -- the files ------------------------------------------------------------------------------

def rules() -> dict[str, tuple[str, Callable[[Run], str]]]:
    """{rule's name: (lab number, rule)}: the GLANCE of every lab's report.py."""
    found: dict[str, tuple[str, Callable[[Run], str]]] = {}
    for number, _, lab in all_labs():
        report = lab.module("report") if lab is not None else None
        for name, rule in (getattr(report, "GLANCE", None) or {}).items():
            if name in found:
                raise LabError(f"labs {found[name][0]} and {number} both have the rule {name!r} "
                               "(GLANCE in report.py): rename one")
            found[name] = (number, rule)
    return found


def path(name: str) -> Path:
    return GENERATED / f"at-a-glance-{name}.md"


def render(runs: dict[str, Run]) -> dict[Path, str]:
    """{path relative to the repository: text} for every rule, from `runs`: {lab number: Run}."""
    return {path(name): rule(runs.get(number) or Run(number, None)) for name, (number, rule) in rules().items()}


def labs_runs() -> dict[str, Run]:
    """Each lab's run as its results/latest.json holds it (None for a lab without one)."""
    runs = {}
    for number, _, lab in all_labs():
        if lab is None:
            continue
        latest = lab.dir / "results" / "latest.json"
        runs[number] = Run(number, load(latest) if latest.exists() else None, lab)
    return runs


def artifacts() -> dict[Path, str]:
    """The page's generated files, {absolute path: text}, from the working tree's runs."""
    from .lab import REPO

    return {REPO / rel: text for rel, text in render(labs_runs()).items()}
