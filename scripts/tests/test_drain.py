"""A time-limited run leaves requests in flight: the driver lets the server finish them before the
next round, and a warm-up round that completed nothing is a round, not a failure."""

from __future__ import annotations

import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from pul import ab, run as run_module
from pul.errors import NothingCompleted
from pul.lab import Step
from pul.procs import Children
from pul.testing import unit_step_bench

# ab's report when its time limit passed before any response came back (Debian's ab 2.3).
EMPTY_REPORT = """\
$ ab -l -r -s 30 -t 2 -n 600 -c 50 http://127.0.0.1:40523/commonpool
Server Software:
Server Hostname:        127.0.0.1
Server Port:            40523

Document Path:          /commonpool
Document Length:        Variable

Concurrency Level:      50
Time taken for tests:   2.535 seconds
Complete requests:      0
Failed requests:        0
Total transferred:      371 bytes
HTML transferred:       41 bytes
"""


def _report(complete: int, seconds: float) -> str:
    lines = EMPTY_REPORT.replace("Complete requests:      0", f"Complete requests:      {complete}")
    lines = lines.replace("2.535 seconds", f"{seconds:.3f} seconds")
    return lines + (f"Requests per second:    {complete / seconds:.2f} [#/sec] (mean)\n"
                    f"Time per request:       {50 * seconds * 1000 / complete:.3f} [ms] (mean)\n")


def test_an_empty_report_is_nothing_completed_not_a_garbled_one():
    with pytest.raises(NothingCompleted, match=r"no request in 2.535 s"):
        ab.parse(EMPTY_REPORT, "")


@pytest.mark.parametrize("complete, rate, expected", [
    (600, 30.0, 0.0),            # every request answered: nothing left behind
    (60, 30.0, 50 / 30.0),       # 50 in flight, worked off at the run's own rate
    (0, 0.0, 2.0),               # no rate to go by: a round's length
    (10, 1.0, run_module.MAX_DRAIN_SECONDS),  # capped
])
def test_drain_time_is_littles_law_on_the_run_s_own_rate(complete, rate, expected):
    result = SimpleNamespace(complete=complete, requests_per_sec=rate)
    assert run_module.drain_seconds(50, result, 600, 2.0) == pytest.approx(expected)


class FakeServer:
    base_url = "http://127.0.0.1:1"

    def cpu_seconds(self):
        return 1.0

    def alive(self):
        return True


def _fake_lab(tmp_path: Path, report: str) -> SimpleNamespace:
    bench = tmp_path / "bench.sh"
    (tmp_path / "report.txt").write_text(report)
    # Like ab -e: the percentiles file, for a report with completed requests.
    csv = "Percentage served,Time in ms\n" + "".join(f"{i},{i:.3f}\n" for i in range(101))
    (tmp_path / "percentiles.csv").write_text(csv)
    copy_csv = "" if "Requests per second" not in report else f'cp {tmp_path / "percentiles.csv"} "$PERCENTILES_CSV"\n'
    bench.write_text(f"#!/bin/sh\n{copy_csv}cat {tmp_path / 'report.txt'}\n")
    bench.chmod(bench.stat().st_mode | stat.S_IXUSR)
    return SimpleNamespace(bench=bench)


def _run_once(tmp_path, report, what, monkeypatch):
    slept = []
    monkeypatch.setattr(run_module, "_let_abandoned_requests_finish",
                        lambda at, result, requests, seconds, *rest: slept.append(
                            run_module.drain_seconds(at.step.concurrency, result, requests, seconds)))
    step = Step(name="commonpool", endpoint="commonpool", concurrency=50, requests=600, warmup_seconds=2)
    at = unit_step_bench(step, FakeServer(), lab=_fake_lab(tmp_path, report),
                         pin={"server_cpus": None, "load_cpus": None}, children=Children())
    result, _ = run_module._run_once(at, 600, tmp_path / "out" / "warm.txt", "ab", what, seconds=2)
    return result, slept


def test_a_warm_up_round_that_completed_nothing_is_an_empty_round(tmp_path, monkeypatch):
    result, slept = _run_once(tmp_path, EMPTY_REPORT, "warm-up", monkeypatch)
    assert (result.complete, result.requests_per_sec) == (0, 0.0)
    assert slept == [2.0]  # the next round waits a round's length for the server to catch up


def test_a_measured_run_that_completed_nothing_fails_clearly(tmp_path, monkeypatch):
    with pytest.raises(NothingCompleted, match="no request"):
        _run_once(tmp_path, EMPTY_REPORT, "measured run", monkeypatch)


def test_a_round_cut_by_its_time_limit_is_drained(tmp_path, monkeypatch):
    result, slept = _run_once(tmp_path, _report(60, 2.0), "warm-up", monkeypatch)
    assert result.complete == 60
    assert slept == [pytest.approx(50 / 30.0)]


def test_empty_rounds_never_settle_a_warm_up(monkeypatch):
    rates = [0.0, 0.0, 0.0, 30.0, 29.0]

    def fake_run(*_args, **_kwargs):
        rate = rates.pop(0)
        return (SimpleNamespace(requests_per_sec=rate, complete=int(2 * rate)),
                {"cpu_seconds": 0.1, "load_cpu_seconds": 0.1})

    monkeypatch.setattr(run_module, "_run_once", fake_run)
    step = Step(name="s", endpoint="s", concurrency=50, requests=600, warmup_requests=600,
                warmup_jit_quiet=None)
    warm = run_module.warm_up(unit_step_bench(step, SimpleNamespace(pools=lambda: {})))
    assert warm["settled"]
    assert [r["requests_per_sec"] for r in warm["rounds"]] == [0.0, 0.0, 0.0, 30.0, 29.0]
