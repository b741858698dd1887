"""The book's table of Play 3 names (book/src/generated/play3-renames.md, from pul.play3) against
the names the libraries really have.

scripts/tests/fixtures/play3-names.txt lists each name of the table as its sources have it: the
Play 3 column in Apache Pekko 1.0.3, Pekko HTTP 1.0.1 and Play 3.0.9, the Play 2.9 column in Akka
2.6.21, Akka HTTP 10.2.10 and Play 2.9.11 (their reference.conf files and source trees, at those
tags). scripts/tests/fixtures/play3-names.py wrote it from clones of those repositories; these
tests never use the network. A name the book starts to use is missing from the fixture until that
script runs again, and the tests say so.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from pul import play3

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIXTURE = FIXTURES / "play3-names.txt"
TABLE = REPO / play3.APPENDIX_PATH
MAKE = "scripts/tests/fixtures/play3-names.py"
CODE = re.compile(r"``? ?(.+?) ?``?(?:\s|$)")


def fixture(path: Path = FIXTURE) -> dict[str, dict[str, tuple[str, str]]]:
    """{Play line: {name: (kind, where)}}; the thread naming pattern under `<pattern>`, and the actor
    system's name under `<system>` as (its name, where)."""
    found: dict[str, dict[str, tuple[str, str]]] = {"3": {}, "2.9": {}}
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        play, kind, name, *where = line.split("\t")
        where = where[0] if where else ""
        if kind == "pattern":
            found[play]["<pattern>"] = (name, where)
        elif kind == "system":
            found[play]["<system>"] = (name, where)
        else:
            found[play][name] = (kind, where)
    return found


def table_rows(text: str) -> list[dict[str, str | None]]:
    """Each row of the table as {"old", "new" (None: the cell names nothing), "what"}, by the header's
    column names; a table without a "what it is" column (the older one) reads as "what" empty."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split(" | ")]
    rows = []
    for line in lines[2:]:
        cells = dict(zip(header, (cell.strip() for cell in re.split(r"(?<!\\) \| ", line.strip("| ")))))
        old, new = (CODE.match(cells[column]) for column in ("Play 2.9 (Akka)", "Play 3 (Pekko)"))
        rows.append({"old": old.group(1), "new": new.group(1) if new else None,
                     "what": cells.get("what it is", "")})
    return rows


THREAD = re.compile(r"^(?P<system>[\w]+)-(?P<dispatcher>.+)-(?:N|\d+)$")


def kind_of(name: str) -> tuple[str, str]:
    """(kind, the name to look up) by the name's form, independent of pul.play3's own rule: an import
    line or a dotted name ending in a capital is a class, <system>-<key>-N a thread, else a key."""
    if name.startswith("import "):
        return "class", name.removeprefix("import ").rstrip(";")
    if THREAD.match(name) and not name.startswith(("akka.", "pekko.")):
        return "thread", name
    return ("class" if name.rsplit(".", 1)[-1][:1].isupper() else "key"), name


def real(name: str, line: str, names: dict) -> str | None:
    """Why a name is not one of the line's real names (None: it is)."""
    kind, look = kind_of(name)
    known = names[line]
    if kind == "thread":
        match = THREAD.match(look)
        system = known.get("<system>", ("?",))[0]
        if "<pattern>" not in known or system != match["system"]:
            return f"{name}: threads are named <system>-<dispatcher>-N, and Play's system is called {system}"
        found = known.get(match["dispatcher"])
        return None if found and found[0] == "key" else f"{name}: {match['dispatcher']} is no dispatcher's key"
    found = known.get(look)
    if found is None:
        return f"{name}: not in {FIXTURE.name} (run {MAKE} again)"
    if found[0] == "absent":
        return f"{name}: in none of the Play {line} line's sources"
    if found[0] != kind:
        return f"{name}: the sources have no {kind} of that name, but a {found[0]} ({found[1]})"
    return None


def problems(text: str, names: dict | None = None) -> list[str]:
    """Every row of a table whose names the sources contradict, each as `old name: why`."""
    names = names or fixture()
    found = []
    for row in table_rows(text):
        old, new, what = row["old"], row["new"], row["what"]
        example = "example" in what
        old_problem = real(old, "2.9", names)
        absent = names["2.9"].get(old, ("",))[0] == "absent"
        if example:  # the reader's own key: no library has it, on either line
            if not absent or new is None:
                found.append(f"{old}: an example is a key of the reader's own, with its Play 3 spelling")
        elif old_problem and not absent:
            found.append(f"{old}: Play 2.9 column: {old_problem}")
        elif absent and new is not None:
            found.append(f"{old}: Play 2.9 reads no such name, yet the table renames it to {new}")
        elif not absent and new is None:
            found.append(f"{old}: a real Play 2.9 name with no Play 3 name in the table")
        if new is not None and not example:
            new_problem = real(new, "3", names)
            if new_problem:
                found.append(f"{old}: Play 3 column: {new_problem}")
    return found


def test_every_play_3_name_in_the_table_is_pekkos_or_plays():
    """The committed table and the one the book's text makes now: a config key is in a
    reference.conf, a class is declared, a thread is named as Pekko names a dispatcher's."""
    for label, text in (("committed", TABLE.read_text()), ("generated", play3.appendix_markdown())):
        assert problems(text) == [], label


def test_the_rows_once_wrong_are_marked():
    rows = {row["old"]: row for row in table_rows(TABLE.read_text())}
    # Play 2.9 reads none of these (Play 2.9.11's reference.conf; its Migration29.md removed
    # play.akka.config): no Play 3 name, and the row says why.
    for name in ("play.akka.config", "play.akka.actor", "play.akka.actor.default-dispatcher"):
        assert rows[name]["new"] is None and rows[name]["what"], rows[name]
    # A class named in full moves below org.apache.pekko, not below the configuration's pekko.
    assert rows["akka.dispatch.MessageDispatcher"]["new"] == "org.apache.pekko.dispatch.MessageDispatcher"
    assert rows["akka.ConfigurationException"]["new"] == "org.apache.pekko.ConfigurationException"
    # Chapter 1's own dispatcher: the reader's key, said to be an example.
    assert "example" in rows["akka.my-context"]["what"]


OLD_TABLE = """\
| Play 2.9 (Akka) | Play 3 (Pekko) | used in |
|---|---|---|
| `akka.actor.default-dispatcher` | `pekko.actor.default-dispatcher` | [Non-blocking actions](ch01-non-blocking.md) |
| `akka.dispatch.MessageDispatcher` | `pekko.dispatch.MessageDispatcher` | [Measuring with ApacheBench](measuring.md) |
| `akka.my-context` | `pekko.my-context` | [Non-blocking actions](ch01-non-blocking.md) |
| `play.akka.actor` | `play.pekko.actor` | [Sizing dispatchers for JDBC](ch03-jdbc-dispatcher.md) |
| `play.akka.actor.default-dispatcher` | `play.pekko.actor.default-dispatcher` | [Non-blocking actions](ch01-non-blocking.md) |
| `play.akka.config` | `play.pekko.config` | [Non-blocking actions](ch01-non-blocking.md) |
"""


def test_the_check_fails_on_the_table_as_it_was():
    """The rows of the table before it knew better (commit 38da0f9), each named."""
    found = problems(OLD_TABLE)
    assert {problem.split(": ")[0] for problem in found} == {
        "akka.dispatch.MessageDispatcher", "akka.my-context", "play.akka.actor",
        "play.akka.actor.default-dispatcher", "play.akka.config"}, found
    assert "akka.dispatch.MessageDispatcher: Play 3 column: pekko.dispatch.MessageDispatcher: not in" in "\n".join(found)
    assert "play.akka.config: Play 2.9 reads no such name, yet the table renames it to play.pekko.config" in found


@pytest.mark.parametrize("cell, problem", [
    ("`org.apache.pekko.dispatch.Dispatcher2`", "not in play3-names.txt"),
    ("`pekko.actor.default-dispatcher.fork-join-executor.parallelism-maximum`", "not in play3-names.txt"),
    ("`org.apache.pekko.actor.default-dispatcher`", "not in play3-names.txt"),
    ("`pekko.actor.ActorSystem`", "not in play3-names.txt"),
    ("`app-pekko.actor.default-dispatcher-N`", "Play's system is called application"),
    ("`application-pekko.actor.default-dispatch-N`", "is no dispatcher's key"),
])
def test_a_made_up_play_3_name_is_caught(cell, problem):
    table = f"| Play 2.9 (Akka) | Play 3 (Pekko) | used in |\n|---|---|---|\n| `akka.actor.ActorSystem` | {cell} | x |\n"
    found = problems(table)
    assert len(found) == 1 and problem in found[0], found


def test_the_fixture_names_its_sources():
    head = FIXTURE.read_text()
    for source in ("apache/pekko v1.0.3", "apache/pekko-http v1.0.1", "playframework/playframework 3.0.9",
                   "akka/akka v2.6.21", "akka/akka-http v10.2.10", "playframework/playframework 2.9.11"):
        assert source in head
    names = fixture()
    for line in ("3", "2.9"):
        for name, (kind, where) in names[line].items():
            assert kind == "absent" or re.search(r" \S+:\d+", where), (line, name, where)


def test_the_fixture_script_reads_hocon_paths():
    """The script's reader of reference.conf (it needs the network to run, its parser does not)."""
    spec = importlib.util.spec_from_file_location("play3_names", FIXTURES / "play3-names.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    conf = '''
# a comment
pekko.http {
  server {
    backlog = 100  // trailing
    preview { enable-http2 = off }
    header = "a { b" , list = [1, {x = 2}]
    big = """one
two"""
  }
}
pekko.actor.serialization-bindings { "java.lang.String" = x }
path = ${pekko.http.server.backlog}
'''
    paths = module.conf_paths(conf)
    for key in ("pekko.http.server.backlog", "pekko.http.server.preview.enable-http2", "pekko.http.server.header",
                "pekko.http.server.list", "pekko.http.server.big", "pekko.actor.serialization-bindings.java.lang.String",
                "path"):
        assert key in paths, (key, sorted(paths))
    assert "pekko.http.server.list.x" not in paths and "x" not in paths
    assert paths["pekko.http.server.backlog"] == 5
