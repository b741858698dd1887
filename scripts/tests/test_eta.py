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


def test_time_left_learns_from_the_phases_finished_how_long_the_rest_will_take():
    """A slow core: the first warm-ups took twice their estimates, so the phases to come will
    likely too (a lab 06 run planned at 2 m 33 s took 4 m 10 s, its estimate fixed throughout)."""
    clock = Clock()
    eta = Eta([("warm a", 4), ("warm b", 4), ("warm c", 4), ("measure a", 6), ("measure b", 6)], now=clock)
    eta.begin("warm a")
    clock.now += 8
    eta.begin("warm b")
    assert eta.seconds_left() == 4 + 4 + 6 + 6  # 4 planned seconds finished: too few to learn from
    clock.now += 8
    eta.begin("warm c")
    clock.now += 8
    eta.begin("measure a")  # 12 planned seconds took 24
    assert eta.scale() == 2.0
    assert eta.seconds_left() == 2 * (6 + 6)
    clock.now += 3
    assert eta.seconds_left() == 2 * 6 - 3 + 2 * 6
    # An unplanned phase between two planned ones (a server's stop) ends the planned one: 18
    # planned seconds took 27, the stop's 100 not among them.
    eta.begin("stop 0")
    clock.now += 100
    eta.begin("measure b")
    assert eta.scale() == 1.5 and eta.seconds_left() == 9


def test_the_learnt_scale_stays_within_its_bounds():
    clock = Clock()
    eta = Eta([("warm a", 10), ("measure a", 10)], now=clock)
    eta.begin("warm a")
    clock.now += 100
    eta.begin("measure a")
    assert eta.scale() == Eta.SCALE_BOUNDS[1]
    fast = Eta([("warm a", 10), ("measure a", 10)], now=clock)
    fast.begin("warm a")
    clock.now += 1
    fast.begin("measure a")
    assert fast.scale() == Eta.SCALE_BOUNDS[0] == 1.0  # the plan is a floor: never promise less
