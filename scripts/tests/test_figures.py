"""The book's figures (book/src/figures, drawn by each lab's report from its committed run): each
has a title of its own, which a screen reader announces, and stays light enough for the site."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pul import report

REPO = Path(__file__).resolve().parents[2]
FIGURES = sorted((REPO / "book" / "src" / "figures").glob("*.svg"))
# The heaviest a figure may be: the timelines, a few panels of up to 240 points a series, are the
# largest, at under half of it.
MAX_BYTES = 300_000


@pytest.mark.parametrize("figure", FIGURES, ids=lambda p: p.name)
def test_every_figure_has_a_title_of_its_own_and_is_light(figure):
    text = figure.read_text()
    titles = re.findall(r"<title>([^<]*)</title>", text)
    assert titles and titles[0].strip() and titles[0] != "Gnuplot", f"{figure.name}: <title> {titles[:1]}"
    assert len(text.encode()) <= MAX_BYTES, f"{figure.name}: {len(text.encode()):,} bytes"


def test_a_figure_takes_its_title_from_its_script():
    assert report.figure_title('set title "One"\nplot x') == "One"
    assert report.figure_title('set multiplot layout 2,1 title "Both"\nset title "panel"') == "Both"
    assert report.figure_title("set title 'Carol''s laptop' noenhanced") == "Carol's laptop"
    assert report.figure_title("plot x") is None
