"""scripts/openload's schedule: when each request is due, for both kinds of arrivals.

The lab's queueing predictions assume these schedules: Poisson arrivals (exponential gaps with
mean 1 / rate) for the M/D/c wait, evenly spaced ones for no wait at all below capacity.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import statistics
from pathlib import Path

import pytest

OPENLOAD = Path(__file__).resolve().parents[1] / "openload"


def load_openload():
    """scripts/openload is a script without .py: import it by path."""
    loader = importlib.machinery.SourceFileLoader("openload_script", str(OPENLOAD))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


openload = load_openload()


def gaps(due: list[float]) -> list[float]:
    return [b - a for a, b in zip(due, due[1:])]


def test_even_arrivals_are_exactly_one_over_rate_apart():
    due = openload.schedule(400, 1000, "even")
    assert len(due) == 1000 and due[0] == 0
    assert due == [i / 400 for i in range(1000)]


def test_poisson_gaps_have_mean_one_over_rate_and_vary_like_an_exponential():
    rate = 360
    g = gaps(openload.schedule(rate, 10_001, "poisson", seed=7))
    assert len(g) == 10_000
    assert statistics.fmean(g) == pytest.approx(1 / rate, rel=0.03)
    # An exponential's standard deviation equals its mean (coefficient of variation 1); the even
    # schedule's is 0. This is what makes requests bunch up and wait.
    assert statistics.pstdev(g) / statistics.fmean(g) == pytest.approx(1, rel=0.05)
    # And about 1 - 1/e of the gaps are shorter than the mean.
    shorter = sum(x < 1 / rate for x in g) / len(g)
    assert shorter == pytest.approx(0.632, abs=0.02)


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    first = openload.schedule(200, 500, "poisson", seed=3)
    assert first == openload.schedule(200, 500, "poisson", seed=3)
    assert first != openload.schedule(200, 500, "poisson", seed=4)
    # The default seed is fixed too: two runs with the same options send on the same schedule.
    assert openload.schedule(200, 500, "poisson") == openload.schedule(200, 500, "poisson")


def test_the_schedule_starts_at_zero_and_never_goes_back():
    due = openload.schedule(1000, 2000, "poisson", seed=1)
    assert due[0] == 0 and all(b >= a for a, b in zip(due, due[1:]))


def test_unknown_arrivals_are_refused():
    with pytest.raises(ValueError):
        openload.schedule(100, 10, "bursty")


def test_the_options_default_to_poisson_with_a_recorded_seed():
    options = openload.parse_args(["--rate", "100", "http://127.0.0.1:9/x"])
    assert options.arrivals == "poisson" and options.seed == openload.DEFAULT_SEED
    options = openload.parse_args(["--rate", "100", "--arrivals", "even", "--seed", "9", "http://127.0.0.1:9/x"])
    assert options.arrivals == "even" and options.seed == 9
    with pytest.raises(SystemExit):
        openload.parse_args(["--rate", "100", "--arrivals", "bursty", "http://127.0.0.1:9/x"])


def test_the_summary_says_which_arrivals_and_seed():
    line = openload.arrivals_line(openload.parse_args(["--rate", "1", "--seed", "42", "http://127.0.0.1:9/"]))
    assert line.startswith("Arrivals:") and "poisson" in line and "seed 42" in line
    line = openload.arrivals_line(openload.parse_args(["--rate", "1", "--arrivals", "even", "http://127.0.0.1:9/"]))
    assert "even" in line and "seed" not in line
    # Not an error line: the driver lists lines starting "openload: " as errors.
    assert not line.startswith("openload: ")
