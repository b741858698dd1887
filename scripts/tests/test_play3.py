"""The Play 3 line: choosing it, translating to it, and the book's pages about it (pul.playline,
pul.play3). That a lab really builds and runs on Play 3 is checked by `scripts/test labs` (every
lab's Play tests on both lines) and lab 01's part (a Play 3 smoke run)."""

from __future__ import annotations

import copy
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pul import play3, playline
from pul.errors import BadResults, UsageError
from pul.lab import resolve
from pul.testing import committed_results

REPO = Path(__file__).resolve().parents[2]
LAB = [sys.executable, str(REPO / "scripts" / "lab")]


# --- choosing the line ---------------------------------------------------------------------

def test_the_default_line_is_play_2_9(monkeypatch):
    monkeypatch.delenv(playline.VARIABLE, raising=False)
    assert playline.current() == "2.9"
    assert playline.target_dir(Path("/x")) == Path("/x/target")


def test_play_3_builds_into_its_own_target(monkeypatch):
    monkeypatch.setenv(playline.VARIABLE, "3")
    assert playline.target_dir(Path("/x")) == Path("/x/target/play-3")


def test_a_play_3_run_keeps_its_results_beside_the_books(monkeypatch):
    monkeypatch.setenv(playline.VARIABLE, "3")
    assert playline.results_dir(Path("/x")) == Path("/x/results/play-3")
    assert playline.results_dir(Path("/x"), "2.9") == Path("/x/results")


def test_an_unknown_line_is_refused_with_the_choices(monkeypatch):
    monkeypatch.setenv(playline.VARIABLE, "4")
    with pytest.raises(UsageError, match="2.9 or 3"):
        playline.current()
    with pytest.raises(UsageError, match="2.9 or 3"):
        playline.check("3.0")


def test_choose_sets_the_variable_every_sbt_inherits(monkeypatch):
    monkeypatch.delenv(playline.VARIABLE, raising=False)
    assert playline.choose("3") == "3"
    assert playline.current() == "3"


@pytest.mark.parametrize("args, message", [
    (["run", "01", "--play", "4"], "invalid choice: '4'"),
    (["run", "01", "--play", "3", "--target", "http://127.0.0.1:9"], "--play is about the server"),
    (["build", "01", "--play", "2"], "invalid choice: '2'"),
])
def test_a_wrong_play_option_fails_before_any_build(args, message, tmp_path):
    done = subprocess.run([*LAB, *args], cwd=REPO, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


def test_every_lab_names_the_switch_in_its_help():
    for number in ("01", "02", "03", "04", "05", "06"):
        done = subprocess.run([*LAB, "run", number, "--help"], cwd=REPO, capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 0 and "--play LINE" in done.stdout, (number, done.stdout[-500:])


# --- translating ---------------------------------------------------------------------------

def test_the_renames_translate_code_keys_and_thread_names():
    pairs = playline.renames()
    cases = {
        "import akka.actor.ActorSystem;": "import org.apache.pekko.actor.ActorSystem;",
        "dispatchers(akka.actor.ActorSystem system)": "dispatchers(org.apache.pekko.actor.ActorSystem system)",
        '"default" -> "akka.actor.default-dispatcher"': '"default" -> "pekko.actor.default-dispatcher"',
        "akka.http.server.backlog = 4096": "pekko.http.server.backlog = 4096",
        "play.akka.dev-mode.x = 1": "play.pekko.dev-mode.x = 1",
        "application-akka.actor.default-dispatcher-7": "application-pekko.actor.default-dispatcher-7",
        # A class named in full moves below org.apache.pekko; a key below pekko.
        "(akka.dispatch.MessageDispatcher)": "(org.apache.pekko.dispatch.MessageDispatcher)",
        "akka.ConfigurationException: Dispatcher": "org.apache.pekko.ConfigurationException: Dispatcher",
        "offload-dispatcher { executor = thread-pool-executor }": "offload-dispatcher { executor = thread-pool-executor }",
    }
    for old, new in cases.items():
        assert playline.translate(old, pairs) == new


def test_a_set_key_reaches_a_play_3_server_by_its_pekko_name():
    key = "akka.actor.default-dispatcher.fork-join-executor.parallelism-max"
    assert playline.setting(key, "2.9") == key
    assert playline.setting(key, "3") == "pekko.actor.default-dispatcher.fork-join-executor.parallelism-max"


def test_a_malformed_renames_line_is_named(tmp_path):
    bad = tmp_path / "renames.txt"
    bad.write_text("# fine\nakka. -> pekko.\nakka.actor without an arrow\n")
    with pytest.raises(BadResults, match=r"renames.txt:3: not `old -> new`"):
        playline.renames(bad)


def test_the_labs_pin_both_lines():
    versions = playline.plugin_versions()
    assert versions["2.9"] == "2.9.11" and versions["3"].startswith("3.0."), versions


def test_the_sbt_build_and_the_book_translate_alike():
    """PlayLine.scala's translate and renames are pul.playline's: same file format, same literal
    replacements in order. (The Play 3 build's output is compared with this translation in lab 01's
    part, where a Play 3 build exists.)"""
    scala = (REPO / "labs" / "sbt" / "build" / "PlayLine.scala").read_text()
    assert 'split(" -> ", -1)' in scala and 'startsWith("#")' in scala
    assert "pairs.foldLeft(text) { case (done, (from, to)) => done.replace(from, to) }" in scala


# --- the book's pages ----------------------------------------------------------------------

def test_a_labs_names_table_shows_its_settings_and_imports():
    text = play3.names_markdown(resolve("05"))
    assert "| `conf/application.conf` | `akka.http.server.backlog = 4096` | `pekko.http.server.backlog = 4096` |" in text
    assert "`import org.apache.pekko.actor.ActorSystem`" in text
    # Comments are left out: they teach nothing a reader types.
    assert "# Connections" not in text


def run_with(variants: list[tuple[str, float, str]]) -> dict:
    base = committed_results("01-non-blocking")
    run = copy.deepcopy(base)
    template = run["variants"][0]
    run["variants"] = []
    for name, rate, bound in variants:
        v = copy.deepcopy(template)
        v.update(name=name, requests_per_sec=rate, bound_by=bound)
        run["variants"].append(v)
    return run


def test_the_comparison_says_which_variants_agree():
    old = run_with([("a", 1000.0, "threads"), ("b", 1000.0, "threads"), ("c", 1000.0, "threads")])
    new = run_with([("a", 1090.0, "threads"), ("b", 1200.0, "threads"), ("c", 1000.0, "server CPU")])
    text = play3.comparison_markdown(resolve("01"), [old], [new])
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert rows["a"].endswith("| yes |") and "1.09" in rows["a"]
    assert rows["b"].endswith("| **no** |")  # 20% apart
    assert rows["c"].endswith("| **no** |") and "threads → server CPU" in rows["c"]  # another bound
    assert "1 of 3 variants agree" in text and "Apart: b, c." in text


def test_second_runs_are_the_yardstick():
    old = run_with([("a", 1000.0, "threads"), ("b", 1000.0, "threads"), ("c", 1000.0, "threads")])
    again = run_with([("a", 1400.0, "threads"), ("b", 1000.0, "threads"), ("c", 1000.0, "threads")])
    new = run_with([("a", 1250.0, "threads"), ("b", 1250.0, "threads"), ("c", 1000.0, "server CPU")])
    new_again = run_with([("a", 1250.0, "threads"), ("b", 1300.0, "threads"), ("c", 1000.0, "threads")])
    text = play3.comparison_markdown(resolve("01"), [old, again], [new])
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    # a: 25% above one Play 2.9 run, but between the two: the line itself moved that much.
    assert rows["a"].endswith("| yes |") and "| 1,000 · 1,400 | 1,250 |" in rows["a"]
    # b: both Play 2.9 runs at 1,000, Play 3 25% above them; c: another bound.
    assert rows["b"].endswith("| **no** |") and rows["c"].endswith("| **no** |")
    assert "1 of 3 variants agree between the lines" in text
    assert "2 of 3 variants agree within each line (apart within a line: a)" in text
    # A second Play 3 run that agrees with a Play 2.9 run makes c agree: its first run's bound was noise.
    text = play3.comparison_markdown(resolve("01"), [old, again], [new, new_again])
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert rows["c"].endswith("| yes |") and rows["b"].endswith("| **no** |")


def test_repeated_runs_agree_when_each_lies_within_the_others_range():
    def with_runs(rate, rates):
        run = run_with([("a", rate, "server CPU")])
        run["variants"][0]["extra"]["runs"] = [{"tool": "ab", "requests_per_sec": r} for r in rates]
        return run["variants"][0]
    wide = with_runs(1000.0, [700.0, 1000.0, 1300.0])
    assert play3.agrees([wide], [with_runs(1250.0, [900.0, 1250.0, 1260.0])])
    # One slow run in each does not make two far-apart medians agree.
    assert not play3.agrees([wide], [with_runs(1450.0, [900.0, 1440.0, 1450.0])])


def test_the_appendix_lists_the_books_akka_names_with_their_pekko_names():
    text = play3.appendix_markdown()
    assert "| `akka.actor.default-dispatcher` | `pekko.actor.default-dispatcher` | setting |" in text
    assert "| `import akka.actor.ActorSystem` | `import org.apache.pekko.actor.ActorSystem` | import |" in text
    # One row for a dispatcher's threads, whatever number the book shows.
    assert "| `application-akka.actor.default-dispatcher-N` | `application-pekko.actor.default-dispatcher-N` | thread name |" in text
    assert "default-dispatcher-7" not in text


def test_the_appendix_renames_nothing_that_play_2_9_does_not_read(tmp_path):
    """A name of Play 2.0-2.8 gets no Play 3 name, an example is said to be one, and a class named
    in full moves below org.apache.pekko (scripts/tests/test_play3_names.py checks every row
    against Pekko's and Play's sources)."""
    (tmp_path / "page.md").write_text("# Page\n`play.akka.config`, `akka.my-context`, `akka.dispatch.MessageDispatcher`, "
                                      "`akka.actor.default-dispatcher`\n")
    rows = {row[0]: row for row in play3.appendix_rows(tmp_path)}
    assert rows["play.akka.config"][1] is None and "removed" in rows["play.akka.config"][2]
    assert "example" in rows["akka.my-context"][2]
    assert rows["akka.dispatch.MessageDispatcher"][1:3] == ("org.apache.pekko.dispatch.MessageDispatcher", "class")
    assert rows["akka.actor.default-dispatcher"][1:3] == ("pekko.actor.default-dispatcher", "setting")
    assert "| `play.akka.config` | none |" in play3.appendix_markdown(tmp_path)


def test_the_appendix_finds_names_in_prose_and_in_included_listings(tmp_path):
    (tmp_path / "listing.conf").write_text("akka.http.server.backlog = 10\n")
    (tmp_path / "page.md").write_text("Set `akka.actor.default-dispatcher`.\n{{#include listing.conf}}\n")
    found = play3.book_names(tmp_path)
    assert found == {"akka.actor.default-dispatcher": ["page.md"], "akka.http.server.backlog": ["page.md"]}


def test_the_appendix_reads_plays_server_keys_whole(tmp_path):
    """Play's Akka HTTP server settings sit below play.server.akka: the whole key, not its tail from
    akka on, which names nothing (Play 2.9.11's play-akka-http-server reference.conf)."""
    (tmp_path / "page.md").write_text("# Page\nSet `play.server.akka.requestTimeout = 10s`.\n")
    assert play3.book_names(tmp_path) == {"play.server.akka.requestTimeout": ["page.md"]}
    rows = {row[0]: row for row in play3.appendix_rows(tmp_path)}
    assert rows["play.server.akka.requestTimeout"][1:3] == ("play.server.pekko.requestTimeout", "setting")


def test_every_lab_chapter_shows_its_play_3_pages():
    for lab_dir in sorted(REPO.glob("labs/[0-9][0-9]-*")):
        lab = resolve(lab_dir.name[:2])
        chapter_path = tomllib.loads((lab_dir / "lab.toml").read_text())["book"]["chapter"]
        chapter = (REPO / chapter_path).read_text()
        for path in (play3.names_path(lab), play3.comparison_path(lab)):
            assert f"{{{{#include generated/{path.name}}}}}" in chapter, (chapter_path, path.name)
            assert (REPO / path).is_file(), f"{path} is missing: run `scripts/lab report {lab.number}`"
    assert "{{#include generated/play3-renames.md}}" in (REPO / "book" / "src" / "play3.md").read_text()
