"""Step.configure: settings the driver POSTs to a running server, so that steps share it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pul import run as run_module
from pul.errors import ServerFailed
from pul.lab import Step
from pul.progress import Eta
from pul.testing import FakePostServer, unit_bench, unit_step_bench


def _step(name: str, *paths: str) -> Step:
    return Step(name=name, endpoint="jdbc", concurrency=50, requests=1000, seconds=1,
                configure={f"lab.setting-{n}": path for n, path in enumerate(paths)})


def _server(fake: FakePostServer, reported: dict | None = None) -> SimpleNamespace:
    return SimpleNamespace(base_url=fake.url, log_path="server.log", log_tail=lambda: "its last lines",
                           pools=lambda: reported or {})


def test_every_path_is_posted_in_order_query_included():
    with FakePostServer() as fake:
        fake.answers = {"/connections": (200, b"{}"), "/other": (204, b"")}
        server = _server(fake, {"pools": {"connections": {"threads": 16}}})
        at = unit_step_bench(_step("s", "/connections?size=16", "/other"), server)
        run_module.configure(at)
        found = run_module._pools_after_configure(at, {"pools": {"connections": {"threads": 4}},
                                                       "calibration": {"mean_ms": 21}})
    assert fake.posted == ["/connections?size=16", "/other"]
    # The prediction reads the pools as the server reports them now, and keeps what the lab
    # found at the server's start besides.
    assert found == {"pools": {"connections": {"threads": 16}}, "calibration": {"mean_ms": 21}}


def test_a_step_without_settings_posts_nothing_and_keeps_the_pools():
    pools = {"pools": {"connections": {"threads": 4}}}
    with FakePostServer() as fake:
        at = unit_step_bench(_step("s"), _server(fake))
        run_module.configure(at)
        assert run_module._pools_after_configure(at, pools) is pools
    assert fake.posted == []


@pytest.mark.parametrize("status", [400, 404, 503])
def test_a_refused_setting_stops_the_run_saying_what_and_why(status):
    with FakePostServer() as fake:
        fake.answers = {"/connections": (status, b"size must be 1..100")}
        with pytest.raises(ServerFailed, match=r"(?s)s: the server refused POST /connections\?size=0: HTTP "
                                               rf"{status}.*size must be 1\.\.100.*its last lines"):
            run_module.configure(unit_step_bench(_step("s", "/connections?size=0"), _server(fake)))


def test_settings_are_posted_before_each_warm_up_and_again_before_each_measurement(monkeypatch):
    # Every step warms up before any is measured (pul.run._measure_group): the second step's
    # setting is in force when the first is measured, unless the first posts its own again.
    events = []
    monkeypatch.setattr(run_module, "configure", lambda at: events.append(("configure", at.step.name)))
    monkeypatch.setattr(run_module, "warm_up", lambda at: events.append(("warm", at.step.name)))
    monkeypatch.setattr(run_module, "_prime_profiler", lambda *_a: None)
    monkeypatch.setattr(run_module, "_print_step", lambda *_a: None)

    def measured(step, _calibrated_and_measured, _progress):
        events.append(("measure", step.name))
        return {"name": step.name, "extra": {}}, None

    monkeypatch.setattr(run_module, "_measured_until_they_agree", measured)
    lab = SimpleNamespace(verify_step=lambda *_a: None)
    steps = [_step("four", "/connections?size=4"), _step("sixteen", "/connections?size=16")]
    # /pools is read again only for a prediction: before each measurement, not each warm-up.
    server = SimpleNamespace(pools=lambda: events.append(("pools", None)) or {})
    run_module._measure_group(unit_bench(lab=lab, eta=Eta([])), steps, server, None, {})
    assert events == [("configure", "four"), ("warm", "four"), ("configure", "sixteen"), ("warm", "sixteen"),
                      ("configure", "four"), ("pools", None), ("measure", "four"),
                      ("configure", "sixteen"), ("pools", None), ("measure", "sixteen")]
