"""pul.progress.Eta: the time left of a run, and where its time went (results' phase_seconds)."""

from pul.progress import Eta


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_time_left_counts_the_rest_of_the_phase_under_way_and_every_later_one():
    clock = Clock()
    eta = Eta([("start 0", 10), ("warm a", 4), ("measure a", 6)], now=clock)
    eta.begin("start 0")
    clock.now += 3
    assert eta.seconds_left() == 7 + 4 + 6
    eta.begin("warm a")
    clock.now += 9  # a warm-up still settling: its own estimate counts nothing once overrun
    assert eta.seconds_left() == 6


def test_spent_times_every_phase_begun_planned_or_not_and_adds_up_a_phase_begun_twice():
    clock = Clock()
    eta = Eta([("start 0", 10), ("measure a", 6)], now=clock)
    eta.begin("build")  # not in the plan: timed all the same
    clock.now += 20.04
    eta.begin("start 0")
    clock.now += 8
    eta.begin("measure a")
    clock.now += 5
    eta.begin("start 0")
    clock.now += 1
    spent = eta.spent()
    assert spent == {"build": 20.0, "start 0": 9.0, "measure a": 5.0}
    assert list(spent) == ["build", "start 0", "measure a"]
    # Reading it closes the phase under way: time after it is not counted twice.
    clock.now += 50
    assert eta.spent() == spent


def test_a_run_that_has_begun_nothing_spent_nothing():
    assert Eta([]).spent() == {}


def test_the_run_prints_where_its_time_went_by_kind_largest_first():
    from pul.run import time_line
    data = {"duration_s": 61, "phase_seconds": {"build": 3.2, "services": 0.1, "start 0": 9.0, "warm a": 20.0,
                                                "warm b": 6.0, "measure a": 8.0, "measure b": 8.4,
                                                "stop 0": 1.0, "steadiness": 1.0, "steadiness again": 1.0,
                                                "stop services": 2.0}}
    # The services' 0.1 s is left out; "stop services" is a stop.
    assert time_line(data) == ("Time: 61 s: warm-ups 26 s, calibration and measured runs 16 s, server starts 9 s, "
                               "build 3 s, stops 3 s, steadiness probe 2 s.")


def test_a_run_without_phase_seconds_prints_no_time_line():
    from pul.run import time_line
    assert time_line({"duration_s": 10}) is None
