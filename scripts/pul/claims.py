"""Measured claims in the book's prose, checked against the labs' committed runs.

A sentence that states what a committed run measured (which bound binds, which variant is faster
and by how much) carries its claim beside it, in an HTML comment the book does not show:

    On this machine the common pool is not what binds it.
    <!-- claim: labNN.some_variant.bound_by == "requests in flight" -->

`scripts/lab report --check` evaluates every claim in book/src against its lab's
results/latest.json, and fails on one that is false or that names a number the run does not have,
so a re-made run that moves a number cannot leave the sentence that states it stale.

A claim is one comparison (chains such as `0.85 <= x <= 1.10` too), or several joined by `and`,
over numbers, strings, + - * /, unary minus, min/max/abs, and names of one lab's run
(`scripts/lab report --check NN` reads lab NN's run alone: a sentence about several labs carries a
claim for each):

    labNN.VARIANT.FIELD      a number or string of the variant's record in labs/NN-*/results/
                             latest.json (requests_per_sec, measured_over_predicted, bound_by,
                             p99_ms, server_cpu_utilization, ...); VARIANT is the variant's name
                             in lower case, every run of characters other than letters and
                             digits made one underscore (pool=16: pool_16,
                             commonpool-jvm-default: commonpool_jvm_default)
    labNN.VARIANT.bounds.B   one of its bounds, named the same way (server_cpu, threads, ...)
    labNN.VARIANT.probe.F    its /status probe (p50_ms, ...)
    labNN.VARIANT.extra.F    what the lab recorded of it besides (a number or string)
    labNN.params.P           a parameter of the run (work_ms, concurrency, ...)
    labNN.machine.F          the machine the run was made on, as its results record it
                             (load_average_at_start, jdk, cores; its nested records by name:
                             steadiness.after.least_share, ...)
    labNN.facts.F            what the lab's report computes of the run besides (report.py's
                             facts(results, lab): a fitted slope, a share), where it has one

Where a lab's results are not the committed ones (a reader's own run replaced them: git says the
lab's results/ folder differs from HEAD's; a report may read more runs there than latest.json, a
lab's --thorough one), a false claim is a note, not a failure, and so is a claim naming what that
run lacks (a variant the reader left out): the prose was written for the committed runs, and a
reader learns where theirs differ from them.
"""

from __future__ import annotations

import ast
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import expressions
from .errors import LabError
from .expressions import ExpressionError
from .results import load

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "book" / "src"
CLAIM = re.compile(r"<!--\s*claim:\s*(.*?)\s*-->", re.S)
LAB_NAME = re.compile(r"lab(\d\d)$")



class ClaimError(LabError):
    """A claim that cannot be read or evaluated (a typo, a name the run does not have)."""

    exit_code = 2


def key(name: str) -> str:
    """A variant's or a bound's name as a claim writes it: pool=16 -> pool_16, server CPU -> server_cpu."""
    return re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_").lower()


class Facts:
    """Names a claim reads, one level of them: attributes, each a number, a string or Facts."""

    def __init__(self, where: str, values: dict):
        self._where = where
        self._values = values

    def get(self, name: str):
        if name not in self._values:
            known = ", ".join(sorted(self._values)) or "none"
            raise ClaimError(f"{self._where} has no {name!r} (it has: {known})")
        return self._values[name]


def _scalars(record: dict) -> dict:
    return {key(k): v for k, v in record.items()
            if isinstance(v, (int, float, str)) and not isinstance(v, bool)}


def _record(where: str, record: dict) -> Facts:
    """A record's numbers and strings, and each record nested in it as Facts of its own."""
    values = _scalars(record)
    for name, value in record.items():
        if isinstance(value, dict):
            values[key(name)] = _record(f"{where}.{key(name)}", value)
    return Facts(where, values)


def lab_facts(lab_number: str, data: dict, computed: dict | None = None) -> Facts:
    """What claims may name of one lab's run; `computed`: what its report computes besides
    (Lab.facts), named labNN.facts.NAME."""
    where = f"lab{lab_number}"
    variants = {}
    for v in data["variants"]:
        name = key(v["name"])
        values = _scalars(v)
        for nested in ("bounds", "probe", "extra"):
            if isinstance(v.get(nested), dict):
                values[nested] = Facts(f"{where}.{name}.{nested}", _scalars(v[nested]))
        variants[name] = Facts(f"{where}.{name}", values)
    for reserved in ("params", "facts", "machine"):
        if reserved in variants:
            raise ClaimError(f"{where} has a variant named {reserved}, which claims cannot tell from the run's {reserved}")
    variants["params"] = Facts(f"{where}.params", _scalars(data.get("params") or {}))
    variants["facts"] = Facts(f"{where}.facts", _scalars(computed or {}))
    variants["machine"] = _record(f"{where}.machine", data.get("machine") or {})
    return Facts(where, variants)


@dataclass(frozen=True)
class Claim:
    path: Path
    line: int
    text: str

    def where(self) -> str:
        return f"{self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path}:{self.line}"


def find(book: Path = BOOK) -> list[Claim]:
    """Every claim in the book's Markdown sources, in file and line order."""
    found = []
    for path in sorted(book.rglob("*.md")):
        text = path.read_text()
        for match in CLAIM.finditer(text):
            found.append(Claim(path, text.count("\n", 0, match.start()) + 1, " ".join(match.group(1).split())))
    return found


def parse(claim: Claim) -> ast.expr:
    try:
        tree = expressions.read(claim.text)
        parts = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
        for part in parts:
            if not isinstance(part, ast.Compare):
                raise ExpressionError(f"{claim.text!r} must be comparisons joined by `and`")
            if any(isinstance(node, ast.BoolOp) for node in ast.walk(part)):
                raise ExpressionError(f"{claim.text!r} may join comparisons with `and` only at its top")
            expressions.check(part, claim.text, who="claims", strings=True)
    except ExpressionError as error:
        raise ClaimError(f"{claim.where()}: {error}") from None
    return tree


def labs_named(tree: ast.expr) -> set[str]:
    """The labs a claim reads (labNN -> "NN")."""
    return {m.group(1) for node in ast.walk(tree) if isinstance(node, ast.Name)
            for m in [LAB_NAME.match(node.id)] if m}


def _value(node: ast.expr, labs: dict[str, Facts]):
    def name(identifier: str) -> Facts:
        found = LAB_NAME.match(identifier)
        if identifier in expressions.FUNCTIONS or not found:
            raise ClaimError(f"{identifier!r} is not a lab (claims name a lab as labNN, NN its folder's number)")
        if found.group(1) not in labs:
            raise ClaimError(f"{identifier} has no committed run (labs/{found.group(1)}-*/results/latest.json)")
        return labs[found.group(1)]

    def attribute(owner, attr: str, node: ast.Attribute):
        if not isinstance(owner, Facts):
            raise ClaimError(f"{ast.unparse(node.value)} is a value, not something with .{attr}")
        return owner.get(attr)

    try:
        return expressions.evaluate(node, name, attribute)
    except ExpressionError as error:
        raise ClaimError(str(error)) from None


def _holds(tree: ast.expr, labs: dict[str, Facts]) -> tuple[bool, list[str]]:
    """Whether the claim holds, and each named value as the run has it (for the message)."""
    shown: list[str] = []
    parts = tree.values if isinstance(tree, ast.BoolOp) else [tree]
    holds = True
    for part in parts:
        left = _value(part.left, labs)
        for op, right_node in zip(part.ops, part.comparators):
            right = _value(right_node, labs)
            try:
                ok = expressions.compare(expressions.SYMBOLS[type(op)], left, right, part)
            except ExpressionError as error:
                raise ClaimError(str(error)) from None
            holds = holds and ok
            left = right
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(_value(node, labs), Facts):
            shown.append(f"{ast.unparse(node)} = {_value(node, labs)!r}")
    return holds, shown


def committed(results: Path) -> bool:
    """Whether the file or folder holds the committed runs: git has it unchanged (True outside a
    checkout)."""
    try:
        # Changed, deleted and new files alike (a run replaces the files of the one before it).
        done = subprocess.run(["git", "status", "--porcelain", "--", str(results)],
                              cwd=results if results.is_dir() else results.parent,
                              capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return True
    return done.returncode != 0 or not done.stdout.strip()


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    holds: bool
    shown: list[str]
    # False where a lab it reads has a run of the reader's own: a false claim is then a note.
    binding: bool


def check(runs: dict[str, tuple], claims: list[Claim], only: set[str] | None = None) -> list[Verdict]:
    """Each claim (of the labs in `only`, if given) evaluated against `runs`: {lab number: (its
    results folder or latest.json, its data[, what its report computes of it])}."""
    labs = {number: lab_facts(number, run[1], run[2] if len(run) > 2 else None) for number, run in runs.items()}
    own = {number for number, run in runs.items() if not committed(run[0])}
    verdicts = []
    for claim in claims:
        tree = parse(claim)
        named = labs_named(tree)
        if not named:
            raise ClaimError(f"{claim.where()}: {claim.text!r} names no lab's run")
        if only is not None and not named & only:
            continue
        try:
            holds, shown = _holds(tree, labs)
        except ClaimError as error:
            if not named & own:
                raise ClaimError(f"{claim.where()}: {claim.text!r}: {error}") from None
            # A reader's own run may leave out what the committed one has (a variant they did not
            # run, a fact of it): a note, like a false claim on their run.
            holds, shown = False, [f"no answer to it ({error})"]
        verdicts.append(Verdict(claim, holds, shown, binding=not named & own))
    return verdicts


def committed_runs(labs) -> dict[str, tuple[Path, dict, dict]]:
    """For each lab with a results/latest.json: its results folder (whose state git tells), the run,
    and what its report computes of it (which may read the folder's other runs)."""
    runs = {}
    for lab in labs:
        path = lab.dir / "results" / "latest.json"
        if path.exists():
            data = load(path)
            runs[lab.number] = (path.parent, data, lab.facts(data))
    return runs
