"""The instructor guide's generated timings and schedules."""

from __future__ import annotations

import re

from pul import timings


def _end_minutes(schedule: str) -> int:
    hours, minutes = re.search(r"End \((\d+) h (\d+) min\)", schedule).groups()
    return int(hours) * 60 + int(minutes)


def test_measured_numbers_flow_into_the_tables_and_schedules():
    fake = {"machine_line": "measured on a test machine",
            "labs": {"01-non-blocking": {"first_build_s": 600, "check_s": 300}}}
    outputs = timings.render(fake)
    measured = outputs[timings.OUTPUTS["measured"]]
    row = next(line for line in measured.splitlines() if line.startswith("| 01 "))
    assert "| 600 |" in row and "| 300 |" in row and "measured on a test machine" in measured
    full = outputs[timings.OUTPUTS["full"]]
    lab_row = next(line for line in full.splitlines() if "Lab 01: build" in line)
    # 600 s of build + the committed run + the table allowance, rounded up to 5 minutes.
    assert int(lab_row.split("|")[2]) >= 600 / 60 + timings.TABLE_MINUTES


def test_half_day_fits_its_budget_or_says_what_is_left_for_homework():
    slow = {"labs": {name: {"first_build_s": 1800, "check_s": 600}
                     for name in ("01-non-blocking", "02-java-async", "03-jdbc-dispatcher", "04-filter-cost",
                                  "05-concurrency-highway")}}
    half = timings.render(slow)[timings.OUTPUTS["half"]]
    if "homework" in half:
        assert _end_minutes(half) <= timings.HALF_DAY_MINUTES + timings.BREAK_MINUTES
    full = timings.render(slow)[timings.OUTPUTS["full"]]
    assert "homework" not in full and _end_minutes(full) >= _end_minutes(half)

