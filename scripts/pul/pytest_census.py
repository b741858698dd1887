"""A pytest plugin for every test session here (the repository's conftest.py loads it): the
census (pul.census) records the bands of measured tests only, those marked `slow` (a real run of a
lab). A unit test that runs a check on made-up or doctored results exercises the check; its
bands are not measurements, and a census that counted them would report its designed failures."""

from __future__ import annotations

import os

MEASURED_VARIABLE = "PUL_CENSUS_MEASURED"


def pytest_runtest_setup(item) -> None:
    if item.get_closest_marker("slow") is not None:
        os.environ[MEASURED_VARIABLE] = "1"
    else:
        os.environ.pop(MEASURED_VARIABLE, None)


def pytest_runtest_teardown(item) -> None:
    os.environ.pop(MEASURED_VARIABLE, None)
