"""The /status probe is an open loop: probes leave on schedule while the server stalls, and their
latency counts from when they were due (no coordinated omission, chapter 5)."""

from __future__ import annotations

import http.server
import threading
import time

import pytest

from pul import probe

INTERVAL = 0.02  # seconds between probes: fast, so that a test lasts well under a second
# Probes that must reach the server while it stalls: an open loop keeps sending, a closed loop
# sends one and waits.
IN_STALL = 15
# Every wait below is for a condition, never a fixed sleep: on a busy machine (the suite's builds
# beside it) the poller's threads can be late by a few hundred ms, which fixed windows of 0.1-0.3 s
# did not allow.
PATIENCE = 10


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"not within {PATIENCE} s: {what}"
        time.sleep(0.005)


class StallingServer(http.server.ThreadingHTTPServer):
    """Answers GET at once, except during a stall: then every request waits for its end."""

    daemon_threads = True
    block_on_close = False

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.arrivals: list[float] = []   # time.monotonic() of each request, as the server saw it
        self.answering = threading.Event()
        self.answering.set()
        self.url = f"http://127.0.0.1:{self.server_address[1]}/status"

    def stall(self) -> float:
        """Hold every request from now until release(); when the stall began."""
        self.answering.clear()
        return time.monotonic()

    def release(self) -> float:
        released = time.monotonic()
        self.answering.set()
        return released

    def arrived_since(self, moment: float) -> int:
        return sum(1 for t in list(self.arrivals) if t >= moment)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.arrivals.append(time.monotonic())
        self.server.answering.wait(PATIENCE)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    server = StallingServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release()
    server.shutdown()
    server.server_close()


def run_with_a_stall(server: StallingServer):
    """Quick answers, a stall that lasts until IN_STALL probes have reached the server, quick answers
    again until a probe due after the stall has left: the poller, its record, when it started (at
    the latest), when it finished, and the stall's start and end."""
    poller = probe.StatusPoller(server.url, interval=INTERVAL, timeout=PATIENCE)
    started = time.monotonic()
    poller.start()
    wait_until(lambda: len(poller.latencies_ms) >= 3, "three quick answers")
    stalled = server.stall()
    wait_until(lambda: server.arrived_since(stalled) >= IN_STALL,
               f"{IN_STALL} probes reaching the stalled server (a closed loop sends one, then waits)")
    released = server.release()
    # Probe i is due at (the poller's start) + i x INTERVAL, and the poller started after `started`.
    wait_until(lambda: poller.scheduled >= (released - started) / INTERVAL + 2, "a probe due after the stall")
    record = poller.finish()
    return poller, record, (started, time.monotonic()), (stalled, released)


def test_probes_leave_on_schedule_while_the_server_stalls(server):
    _, record, (started, finished), (stalled, released) = run_with_a_stall(server)
    assert server.arrived_since(stalled) - server.arrived_since(released) >= IN_STALL
    # Scheduled by the clock, never ahead of it (probe 0 is due at once).
    assert record["scheduled"] <= (finished - started) / INTERVAL + 1, record
    assert record["requests"] + record["failed"] == record["scheduled"], record
    assert record["failed"] == 0, record


def test_latency_counts_from_when_the_probe_was_due(server):
    poller, record, _, (stalled, released) = run_with_a_stall(server)
    # A probe due in the stall was answered after its end, even if the poller sent it late (a late
    # send counts from when it was due), and every such probe was sent before finish(). The first
    # probe due in the stall was due at most one interval after it began, the next one interval
    # later, and so on; so the k-th longest latency (from 0) is at least the stall minus k + 1
    # intervals.
    stall = released - stalled
    longest = sorted(poller.latencies_ms, reverse=True)
    due_in_stall = int(stall / INTERVAL) - 1
    assert len(longest) >= due_in_stall
    for k in range(due_in_stall):
        floor_ms = (stall - (k + 1) * INTERVAL) * 1000
        assert longest[k] >= floor_ms, f"latency {k}: {longest[k]:.1f} ms < {floor_ms:.0f} ms ({longest[:due_in_stall]})"
    assert record["max_ms"] >= (stall - INTERVAL) * 1000


def test_a_late_send_is_charged_to_the_probe(server, monkeypatch):
    """The poller itself falls behind (here: starting one probe's thread takes 0.1 s, as when the
    driver's process is starved of CPU); the probes due meanwhile leave late and say so."""
    lag = 0.1
    real_thread = threading.Thread
    poller = probe.StatusPoller(server.url, interval=INTERVAL, timeout=PATIENCE)
    starts = []

    class SlowToStart(real_thread):
        def start(self):
            if threading.current_thread() is poller:
                starts.append(self)
                if len(starts) == 2:
                    time.sleep(lag)
            super().start()

    monkeypatch.setattr(threading, "Thread", SlowToStart)
    poller.start()
    wait_until(lambda: len(poller.latencies_ms) >= 6, "the probes after the late one answered")
    record = poller.finish()
    monkeypatch.undo()
    # Probe 1 left `lag` late, and the probes due during that time left together right after it.
    late = sorted(poller.latencies_ms, reverse=True)[:3]
    assert all(latency >= (lag - 3 * INTERVAL) * 1000 for latency in late), (late, record)
    assert record["max_ms"] >= (lag - INTERVAL) * 1000, record


def test_the_p99_needs_a_hundred_answers(server):
    poller = probe.StatusPoller(server.url, interval=INTERVAL, timeout=PATIENCE)
    poller.start()
    wait_until(lambda: len(poller.latencies_ms) >= 10, "ten answers")
    record = poller.finish()
    assert 10 <= record["requests"] < 100, record
    assert record["p99_ms"] is None, record
    assert record["samples_for_p99"] == 100
    assert record["p50_ms"] is not None and record["max_ms"] >= record["p50_ms"]
    assert record["interval_ms"] == INTERVAL * 1000


def test_summarize_gives_a_p99_from_a_hundred_samples():
    too_few = probe.summarize([float(i) for i in range(1, 100)], 0, 0, 99, 0.05)
    enough = probe.summarize([float(i) for i in range(1, 101)], 0, 0, 100, 0.05)
    assert too_few["p99_ms"] is None and too_few["max_ms"] == 99.0
    assert enough["p99_ms"] == 99.0 and enough["max_ms"] == 100.0


def test_probes_beyond_the_bound_are_not_sent_and_count_as_failed(server):
    server.stall()
    poller = probe.StatusPoller(server.url, interval=INTERVAL, timeout=PATIENCE, max_outstanding=3)
    poller.start()
    wait_until(lambda: poller.not_sent >= 2, "probes due beyond the three outstanding")
    # finish() stops the schedule first and then waits for the three held probes: the stall ends
    # only once the poller has stopped, so no fourth probe can reach the server.
    finished = []
    finishing = threading.Thread(target=lambda: finished.append(poller.finish()))
    finishing.start()
    wait_until(lambda: not poller.is_alive(), "the poller stopping")
    server.release()
    finishing.join(PATIENCE)
    record = finished[0]
    assert len(server.arrivals) == 3
    assert record["requests"] == 3, record
    assert record["not_sent"] == record["failed"] == record["scheduled"] - 3 > 0, record


def test_reports_show_a_p99_only_with_enough_answers():
    old_record = {"requests": 51, "failed": 0, "mean_ms": 150.0, "p50_ms": 170.9, "p99_ms": 227.7, "max_ms": 227.7}
    assert probe.probe_p99(old_record) is None  # a record from the closed loop: its p99 was its max
    assert probe.describe_tail(old_record) == "max 227.7 ms (51 answers)"
    enough = probe.summarize([float(i) for i in range(1, 141)], 0, 0, 140, 0.05)
    assert probe.describe_tail(enough) == f"p99 {enough['p99_ms']:.1f} ms (140 answers)"
    assert probe.describe_tail(probe.summarize([], 3, 0, 3, 0.05)) == "no answer"
