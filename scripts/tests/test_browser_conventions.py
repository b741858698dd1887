"""The book-conventions part of the browser check (scripts/browser/check-book.cjs), without a
browser: which pages of SUMMARY.md it binds, which exercise ids it reads from the labs, and what it
says about a page's facts (the data its in-page function gathers). Each defect must be named with
the page and the missing element; a page that follows the conventions must pass. Needs node."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "scripts" / "browser" / "check-book.cjs"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def call(function: str, *args):
    """check-book.cjs's exported `function`(*args), through node, as JSON."""
    script = ("const c = require(process.argv[1]);"
              "const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "process.stdout.write(JSON.stringify(c[input.fn](...input.args)));")
    result = subprocess.run(["node", "-e", script, str(CHECK)], input=json.dumps({"fn": function, "args": args}),
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


SUMMARY = textwrap.dedent("""\
    # Summary

    [Introduction](introduction.md)

    - [Measuring](measuring.md)

    # The lessons

    - [Non-blocking](ch01-non-blocking.md)
    - [Request plumbing](request-plumbing.md)
    - [Filters](ch04-filter-cost.md)
      - [Filters in depth](ch04-filter-depth.md)
      - [Notes](notes.md)

    # For instructors

    - [Guide](instructor/index.md)
      - [Ch 9](ch09-not-a-lesson.md)
    """)


def test_lesson_pages_are_the_ch_pages_of_the_lessons_part():
    found = call("lessonPages", SUMMARY)
    assert found["sawPart"] is True
    assert found["pages"] == [
        {"file": "ch01-non-blocking.html", "number": 1, "lab": "01", "subPage": False},
        {"file": "ch04-filter-cost.html", "number": 4, "lab": "04", "subPage": False},
        {"file": "ch04-filter-depth.html", "number": 4, "lab": "04", "subPage": True},
    ]


def test_a_summary_without_the_lessons_part_says_so():
    found = call("lessonPages", "# Summary\n\n- [One](ch01-one.md)\n")
    assert found == {"pages": [], "sawPart": False}


def test_the_real_summary_binds_every_lesson_chapter():
    summary = (REPO / "book" / "src" / "SUMMARY.md").read_text()
    pages = call("lessonPages", summary)["pages"]
    listed = sorted(name.removesuffix(".md") + ".html" for name in re.findall(r"\]\((ch\d+[^)]*\.md)\)", summary))
    assert sorted(p["file"] for p in pages) == listed
    labs = {lab.name[:2] for lab in (REPO / "labs").glob("[0-9][0-9]-*") if (lab / "lab.toml").exists()}
    assert {p["lab"] for p in pages if not p["subPage"]} == labs


def test_exercise_ids_come_from_each_labs_exercises_toml(tmp_path: Path):
    (tmp_path / "01-one").mkdir()
    (tmp_path / "01-one" / "exercises.toml").write_text(textwrap.dedent("""\
        # id = "a-comment"
        [[exercise]]
        id = "first"
        title = "First"
        [[exercise.expect]]
        variant = "x"
        [[exercise]]
        id = "second"
        """))
    (tmp_path / "02-two").mkdir()
    (tmp_path / "common").mkdir()
    assert call("exerciseIds", str(tmp_path)) == {"01": ["first", "second"]}


def test_the_real_labs_name_their_exercises():
    ids = call("exerciseIds", str(REPO / "labs"))
    assert ids["01"] == ["right-size-pool", "grow-default-dispatcher"]


PAGE = {"file": "ch01-non-blocking.html", "number": 1, "lab": "01", "subPage": False}
MARKER = '"Don\'t do this"'


def listing(number: str, caption: str | None = None, anti: bool = False, **extra) -> dict:
    text = caption if caption is not None else f"Listing {number}: labs/01-non-blocking/app/X.java: the code"
    return {"id": f"listing-{number}", "antiPattern": anti, "caption": text,
            "marker": MARKER if anti else "none", "border": 4 if anti else 0, **extra}


def good_facts() -> dict:
    return {
        "listings": [listing("1-1"),
                     listing("1-2", "Listing 1-2 (don\u2019t do this): labs/01-non-blocking/app/X.java: blocking",
                             anti=True),
                     listing("1-3", "Listing 1-3: the output of scripts/lab run 01")],
        "sections": [
            {"title": "The problem", "text": "...", "solutions": 0, "diffSolutions": 0},
            {"title": "Exercises", "text": "Check it with scripts/lab check 01 right-size-pool; and "
                                           "scripts/lab check 01 grow-default-dispatcher. Solution --- a/conf",
             "solutions": 3, "diffSolutions": 2},
            {"title": "Summary", "text": "You can now predict.", "solutions": 0, "diffSolutions": 0},
        ],
    }


IDS = {"01": ["right-size-pool", "grow-default-dispatcher"]}


def problems(facts: dict, page: dict = PAGE, ids: dict = IDS) -> list[str]:
    return call("conventionProblems", page, facts, ids)


def test_a_page_that_follows_the_conventions_passes():
    assert problems(good_facts()) == []


def test_no_numbered_listing_is_named():
    facts = good_facts()
    facts["listings"] = []
    assert problems(facts) == ['ch01-non-blocking.html: book conventions: no numbered listing: expected a '
                               '<figure class="listing"> whose <figcaption> starts with "Listing 1-"']


def test_a_listing_of_another_chapter_does_not_count():
    facts = good_facts()
    facts["listings"] = [listing("2-1")]
    found = problems(facts)
    assert any("no numbered listing" in p for p in found)
    assert any('captioned "Listing 2-1: ' in p and 'expected it to start with "Listing 1-1:"' in p for p in found)


def test_numbering_ids_and_captions_are_checked():
    facts = good_facts()
    facts["listings"][1] = {**listing("1-3"), "id": "listing-1-3"}       # skips 1-2
    facts["listings"][2] = {**listing("1-4"), "id": "listing-one"}
    facts["listings"].append({**listing("1-5"), "caption": None, "id": "x"})
    found = problems(facts)
    assert ('ch01-non-blocking.html: book conventions: listing 2 of the page is captioned "Listing 1-3: '
            'labs/01-non-blocking/app/X.java: the code": expected it to start with "Listing 1-2:"') in found
    assert 'ch01-non-blocking.html: book conventions: Listing 1-4 has id "listing-one", expected "listing-1-4"' in found
    assert 'ch01-non-blocking.html: book conventions: listing 4 of the page (id "x") has no <figcaption>' in found


def test_anti_patterns_need_the_class_the_caption_and_the_marker():
    facts = good_facts()
    facts["listings"][0] = listing("1-1", anti=True)                                    # caption lacks it
    facts["listings"][1] = {**facts["listings"][1], "antiPattern": False, "marker": "none", "border": 0}
    facts["listings"][2] = {**listing("1-3", "Listing 1-3 (don't do this): x", anti=True), "marker": "none"}
    found = problems(facts)
    assert ('ch01-non-blocking.html: book conventions: Listing 1-1 is an anti-pattern: its caption must start '
            'with "Listing 1-1 (don\'t do this):"') in found
    assert any(p.startswith('ch01-non-blocking.html: book conventions: Listing 1-2 says "don\'t do this" but lacks')
               for p in found)
    assert any(p.startswith("ch01-non-blocking.html: book conventions: Listing 1-3 is an anti-pattern but shows "
                            "no marker") for p in found)


def test_exercises_need_the_command_a_solution_diff_and_every_checked_id():
    facts = good_facts()
    facts["sections"][1] = {"title": "Exercises", "text": "Think about it.", "solutions": 1, "diffSolutions": 0}
    found = problems(facts)
    assert 'ch01-non-blocking.html: book conventions: the Exercises section never names "scripts/lab check"' in found
    assert any('has no <details class="solution"> with a diff code block' in p for p in found)
    assert any('does not list the checked exercise "right-size-pool" (labs/01-*/exercises.toml) with its '
               'command "scripts/lab check 01 right-size-pool"' in p for p in found)
    assert any('"grow-default-dispatcher"' in p for p in found)


def test_no_exercises_section_is_named():
    facts = good_facts()
    del facts["sections"][1]
    assert problems(facts) == ['ch01-non-blocking.html: book conventions: no <h2> "Exercises" section']


def test_the_summary_must_be_the_last_h2():
    facts = good_facts()
    facts["sections"].append({"title": "Further reading", "text": "", "solutions": 0, "diffSolutions": 0})
    assert problems(facts) == ['ch01-non-blocking.html: book conventions: the last <h2> is "Further reading", '
                               'expected "Summary" (a chapter ends with its Summary)']
    facts["sections"] = []
    found = problems(facts)
    assert 'ch01-non-blocking.html: book conventions: no <h2> at all: a chapter ends with an <h2> "Summary"' in found


def test_a_sub_page_needs_listings_but_no_exercises_or_summary():
    page = {**PAGE, "file": "ch01-more.html", "subPage": True}
    # It continues its chapter's numbering: 1-7 and 1-8 are fine, 1-10 after them is not.
    facts = {"listings": [listing("1-7"), listing("1-8")], "sections": [{"title": "More", "text": "",
                                                                         "solutions": 0, "diffSolutions": 0}]}
    assert problems(facts, page) == []
    facts["listings"].append(listing("1-10"))
    assert any('expected it to start with "Listing 1-9:"' in p for p in problems(facts, page))
    assert problems({"listings": [], "sections": [], "code": 2}, page) == [
        'ch01-more.html: book conventions: no numbered listing: expected a <figure class="listing"> whose '
        '<figcaption> starts with "Listing 1-"']


def test_a_prose_only_sub_page_needs_no_listing():
    page = {**PAGE, "file": "ch03-lockstep.html", "number": 3, "subPage": True}
    assert problems({"listings": [], "sections": [], "code": 0}, page) == []
    # A chapter's own page always needs one.
    assert any("no numbered listing" in p for p in problems({"listings": [], "sections": [], "code": 0}))
