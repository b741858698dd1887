"""The pools' timeline as the results keep it (pul.timeline): shrunk, CPU as cores busy, per pool."""

from __future__ import annotations

import json

import pytest

from pul import timeline
from pul.testing import FakePostServer


def raw(samples: int, hz: int = 20) -> dict:
    step = 1000 // hz
    return {"hz": hz, "dropped": 0, "series": {
        "t_ms": [i * step for i in range(samples)],
        # Half a core busy throughout.
        "cpu_ms": [i * step // 2 for i in range(samples)],
        "jvm_threads": [40] * samples,
        "default.busy": [8] * samples,
        "default.queued": [i for i in range(samples)],
        "connections.awaiting": [0] * samples,
    }}


def test_a_short_run_keeps_every_sample_and_its_whole_numbers():
    found = timeline.summarise(raw(80))
    assert found["samples"] == 80 and len(found["t_s"]) == 80
    assert found["t_s"][:3] == [0.0, 0.05, 0.1]
    assert found["pools"]["default"] == {"busy": [8] * 80, "queued": list(range(80))}
    assert found["pools"]["connections"]["awaiting"] == [0] * 80
    # The first sample ends no interval: its CPU is unknown.
    assert found["cpu_cores"][0] is None and set(found["cpu_cores"][1:]) == {0.5}


def test_a_long_run_is_averaged_down_to_the_most_points_kept():
    found = timeline.summarise(raw(1000), max_points=100)
    assert found["samples"] == 1000
    assert all(len(s) == 100 for s in (found["t_s"], found["cpu_cores"], found["jvm_threads"]))
    # Ten samples a point: 0..9 average 4.5.
    assert found["pools"]["default"]["queued"][:2] == [4.5, 14.5]
    assert found["pools"]["default"]["busy"] == [8] * 100
    assert found["cpu_cores"][1] == 0.5


def test_threads_started_between_the_first_sample_and_the_last_are_counted():
    # A thread per task: 30 started each sample, each gone by the next, so the live count is flat.
    data = raw(21)
    data["series"]["jvm_threads_started"] = [500 + 30 * i for i in range(21)]
    found = timeline.summarise(data, max_points=5)
    assert found["jvm_threads_started"] == 600
    assert set(found["jvm_threads"]) == {40}
    # A server built before the sampler counted them: no count, not a zero.
    assert "jvm_threads_started" not in timeline.summarise(raw(21))


def test_unknown_cpu_and_gauges_stay_unknown():
    data = raw(5)
    data["series"]["cpu_ms"] = [-1] * 5
    data["series"]["default.busy"] = [8, -1, 8, 8, 8]
    found = timeline.summarise(data)
    assert found["cpu_cores"] == [None] * 5
    assert found["pools"]["default"]["busy"] == [8, None, 8, 8, 8]


@pytest.mark.parametrize("broken", ["ragged", "unnamed"])
def test_a_malformed_answer_is_refused(broken):
    data = raw(5)
    if broken == "ragged":
        data["series"]["default.busy"] = [1, 2]
    else:
        data["series"]["busy"] = [1] * 5
    with pytest.raises(ValueError):
        timeline.summarise(data)


def test_share_at_counts_the_points_at_a_level():
    assert timeline.share_at([8, 8, 7, None, 8], 8) == 0.75
    assert timeline.share_at([], 8) is None


@pytest.fixture
def server():
    with FakePostServer() as fake:
        yield fake


def test_start_and_finish_over_http(server):
    server.answers = {"/timeline/start": (200, b'{"hz":20}'),
                          "/timeline/stop": (200, json.dumps(raw(3)).encode())}
    found = timeline.Timeline(server.url).start().finish()
    assert found["samples"] == 3 and found["pools"]["default"]["busy"] == [8, 8, 8]


def test_a_server_without_a_timeline_says_to_rebuild(server):
    server.answers = {}
    with pytest.raises(timeline.TimelineUnavailable, match="rebuild the lab"):
        timeline.Timeline(server.url).start()


def test_a_refused_rate_and_a_garbled_answer_are_reported(server):
    server.answers = {"/timeline/start": (400, b'{"error":"hz must be 1..100, not 500"}'),
                          "/timeline/stop": (200, b"<html>oops</html>")}
    with pytest.raises(timeline.TimelineUnavailable, match="hz must be"):
        timeline.Timeline(server.url, hz=500).start()
    with pytest.raises(timeline.TimelineUnavailable, match="no timeline"):
        timeline.Timeline(server.url).finish()
