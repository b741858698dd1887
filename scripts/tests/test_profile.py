"""pul.profile: folded stacks from the server's flight recorder, their file, and the flame graphs."""

from __future__ import annotations

import gzip
import re

import pytest

from pul import profile
from pul.errors import BadResults
from pul.testing import FakePostServer

ANSWER = """# period_ms 10
# samples 6
# truncated 1
# deepest 5
[application-akka.actor.default-dispatcher-N];java/lang/Thread.run;akka/dispatch/Mailbox.run;play/api/mvc/Action.apply;controllers/Diagnostics.status 3
[application-akka.actor.default-dispatcher-N];java/lang/Thread.run;akka/dispatch/Mailbox.run 2
[pool-N-thread-N];java/lang/Thread.run;work/BlockingWork.run 1
"""


def test_parse_reads_the_header_and_the_stacks():
    folded = profile.parse(ANSWER)
    assert (folded.period_ms, folded.samples, folded.truncated, folded.deepest) == (10, 6, 1, 5)
    assert folded.stacks["[pool-N-thread-N];java/lang/Thread.run;work/BlockingWork.run"] == 1


@pytest.mark.parametrize("text, complaint", [
    ("[a];b 3\n", "no '# period_ms' line"),
    ("# period_ms 10\n[a];b three\n", "is not a count"),
    ("# period_ms 10\n[a];b -3\n", "is not a count"),
    ("# period_ms 10\nnocount\n", "not 'STACK COUNT'"),
    ("# period_ms 10\n# samples 5\n[a];b 3\n", "says 5 samples, its stacks hold 3"),
])
def test_parse_names_what_is_wrong(text, complaint):
    with pytest.raises(ValueError, match=re.escape(complaint)):
        profile.parse(text)


def test_profiles_of_several_runs_add_up():
    total = profile.Folded(10)
    one = profile.parse(ANSWER)
    one.cpu_seconds = 1.5
    total.add(one)
    total.add(one)
    assert total.samples == 12 and total.truncated == 2 and total.deepest == 5 and total.cpu_seconds == 3.0
    with pytest.raises(ValueError, match="every 20 ms"):
        total.add(profile.Folded(20, {"[a];b": 1}))


def test_the_file_round_trips_and_the_same_stacks_give_the_same_bytes(tmp_path):
    folded = profile.parse(ANSWER)
    profile.write(folded, tmp_path / "a.folded.gz")
    profile.write(profile.parse(folded.text()), tmp_path / "b.folded.gz")
    assert (tmp_path / "a.folded.gz").read_bytes() == (tmp_path / "b.folded.gz").read_bytes()
    assert profile.read(tmp_path / "a.folded.gz").stacks == folded.stacks


def test_a_file_from_a_student_is_checked(tmp_path, monkeypatch):
    (tmp_path / "not.folded.gz").write_bytes(b"plain text")
    with pytest.raises(BadResults, match="not a gzipped folded profile"):
        profile.read(tmp_path / "not.folded.gz")
    (tmp_path / "bad.folded.gz").write_bytes(gzip.compress(b"# period_ms 10\n[a];b x\n"))
    with pytest.raises(BadResults, match="is not a count"):
        profile.read(tmp_path / "bad.folded.gz")
    monkeypatch.setattr(profile, "MAX_FOLDED_BYTES", 100)
    (tmp_path / "big.folded.gz").write_bytes(gzip.compress(b"# period_ms 10\n" + b"[a];b 1\n" * 100))
    with pytest.raises(BadResults, match="once unpacked"):
        profile.read(tmp_path / "big.folded.gz")


@pytest.mark.parametrize("name", ["../elsewhere.folded.gz", "/etc/passwd", "run/../../x.folded.gz"])
def test_a_results_file_cannot_point_outside_its_folder(tmp_path, name):
    with pytest.raises(BadResults, match="outside its results folder"):
        profile.folded_file(tmp_path, {"file": name})


def test_the_summary_gives_each_pool_and_the_hottest_frames_their_share():
    summary = profile.summarise(profile.parse(ANSWER), "run/x.folded.gz")
    assert summary["samples"] == 6 and summary["file"] == "run/x.folded.gz"
    assert summary["server_cpu_seconds"] is None
    timed = profile.parse(ANSWER)
    timed.cpu_seconds = 0.2
    assert profile.summarise(timed, "run/x.folded.gz")["server_cpu_seconds"] == 0.2
    assert summary["pools"] == [{"pool": "[application-akka.actor.default-dispatcher-N]", "share": 0.8333},
                                {"pool": "[pool-N-thread-N]", "share": 0.1667}]
    assert summary["hottest"][0] == {"frame": "controllers/Diagnostics.status", "share": 0.5}
    assert profile.share_under(profile.parse(ANSWER), lambda f: f.startswith("play/")) == 0.5


@pytest.mark.parametrize("frame, whose", [
    ("controllers/Diagnostics.status", "the lab's code"), ("filters/NoopFilter.apply", "the lab's code"),
    ("play/api/mvc/Filter$$anon$1.apply", "Play"), ("router/Routes.routes", "Play"),
    ("akka/dispatch/Mailbox.run", "Akka"), ("scala/concurrent/Future.map", "Scala"),
    ("java/lang/Thread.run", "JDK"), ("com/zaxxer/hikari/HikariDataSource.getConnection", "libraries"),
    ("[application-akka.actor.default-dispatcher-N]", "pool"),
])
def test_a_frame_is_coloured_by_whose_code_it_is(frame, whose):
    assert profile.layer(frame)[0] == whose


def test_the_palette_gives_every_frame_a_colour_of_its_layer():
    lines = profile.palette(profile.parse(ANSWER)).splitlines()
    colours = dict(line.split("->") for line in lines)
    assert set(colours) >= {"", "controllers/Diagnostics.status", "akka/dispatch/Mailbox.run"}
    r, g, b = map(int, colours["controllers/Diagnostics.status"][4:-1].split(","))
    assert r > g and r > b  # the lab's code is red


def test_the_flame_graph_draws_each_frame_as_wide_as_its_samples():
    """inferno, installed once with cargo (CI has it), draws the graph: same input, same bytes."""
    folded = profile.parse(ANSWER)
    svg = profile.flame_svg(folded, "A title", "A subtitle", width=1000)
    assert svg == profile.flame_svg(folded, "A title", "A subtitle", width=1000)
    assert re.search(r"<svg\b[^>]*><title>A title</title>", svg) and "A subtitle" in svg
    widths = {}
    for title, width in re.findall(r'<title>([^<(]+) \([0-9,]+ samples[^<]*</title><rect[^>]*width="([0-9.]+)%"', svg):
        widths[title] = float(width)
    # 3 of 6 samples in the action, 5 of 6 in the mailbox, 1 in the other pool.
    assert widths["controllers/Diagnostics.status"] == pytest.approx(50, abs=1)
    assert widths["akka/dispatch/Mailbox.run"] == pytest.approx(83.3, abs=1)
    assert widths["[pool-N-thread-N]"] == pytest.approx(16.7, abs=1)


@pytest.fixture
def server():
    with FakePostServer() as fake:
        yield fake


def test_start_and_finish_over_http_with_the_cpu_in_between(server):
    server.answers = {"/profile/start": (200, b'{"period_ms":10}'), "/profile/stop": (200, ANSWER.encode())}
    clock = iter([10.0, 10.25])
    folded = profile.Profile(server.url, cpu=lambda: next(clock)).start().finish()
    assert folded.samples == 6 and folded.cpu_seconds == 0.25


def test_a_server_without_a_profiler_says_to_rebuild(server):
    server.answers = {}
    with pytest.raises(profile.ProfileUnavailable, match="rebuild the lab"):
        profile.Profile(server.url).start()


def test_a_refused_period_and_a_garbled_answer_are_reported(server):
    server.answers = {"/profile/start": (400, b'{"error":"period_ms must be 1..1000, not 0"}'),
                          "/profile/stop": (200, b"<html>oops</html>")}
    with pytest.raises(profile.ProfileUnavailable, match="period_ms must be"):
        profile.Profile(server.url, period_ms=0).start()
    with pytest.raises(profile.ProfileUnavailable, match="no profile"):
        profile.Profile(server.url).finish()
