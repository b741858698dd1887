"""Fast tests of `scripts/lab serve` and `scripts/lab run --target`: bad input, and which steps a
remote server may measure (the real serve-and-load test is in labs/01-non-blocking/tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pul import cli, lab
from pul.errors import UsageError
from pul.run import select_steps
from pul.remote import LAB_PROPERTY, RemoteServer, parse_target, server_properties
from pul.server import free_port

REPO = Path(__file__).resolve().parents[2]
LAB = [sys.executable, str(REPO / "scripts" / "lab")]
URL = "http://192.168.56.10:9000"


def run_lab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*LAB, *args], capture_output=True, text=True, timeout=60, cwd=REPO,
                          stdin=subprocess.DEVNULL)


def served(lab_obj, params: dict, step_setup: dict, settings: dict | None = None) -> dict:
    """The /pools report of a server started for these properties (as scripts/lab serve would)."""
    properties = {"http.address": "192.168.56.10", "http.port": "9000", "pidfile.path": "/dev/null",
                  "user.dir": "/somewhere", **server_properties(lab_obj, params, step_setup, settings or {})}
    return {"process_cpu_seconds": 1.5, "properties": properties, "pools": {}}


@pytest.mark.parametrize("target, why", [
    ("192.168.56.10:9000", "http://HOST:PORT"),
    ("https://192.168.56.10:9000", "plain http"),
    ("http://192.168.56.10", "names no port"),
    ("http://192.168.56.10:0", "names no port"),
    ("http://192.168.56.10:70000", "not a URL"),
    ("http://192.168.56.10:9000/pools", "without a path"),
    ("http://:9000", "names no host"),
])
def test_a_bad_target_is_a_usage_error(target, why):
    with pytest.raises(UsageError, match=why):
        parse_target(target)


def test_a_bad_target_exits_2_before_anything_starts():
    out = run_lab("run", "01", "--target", "http://192.168.56.10")
    assert out.returncode == 2 and "http://HOST:PORT" in out.stderr, out.stderr


@pytest.mark.parametrize("option", [["--port", "9000"], ["--rebuild"], ["--server-cpus", "0"]])
def test_server_options_are_refused_with_a_target(option):
    out = run_lab("run", "01", "--target", URL, *option)
    assert out.returncode == 2 and "scripts/lab serve" in out.stderr, out.stderr


def test_targets_are_normalised():
    assert parse_target("http://192.168.56.10:9000/") == (URL, "192.168.56.10", 9000)
    assert parse_target("http://[::1]:9000")[0] == "http://[::1]:9000"


@pytest.mark.parametrize("address", ["0.0.0.0", "::"])
def test_serve_refuses_every_interface_unless_asked_by_name(address):
    out = run_lab("serve", "01", "--listen", address)
    assert out.returncode == 2 and "--listen-anywhere" in out.stderr and "conference" in out.stderr


def test_serve_refuses_an_address_this_machine_does_not_have():
    out = run_lab("serve", "01", "--listen", "192.0.2.1")  # TEST-NET-1: never assigned
    assert out.returncode == 2 and "not an address of this machine" in out.stderr


def test_serve_refuses_variants_that_need_two_servers():
    out = run_lab("serve", "02", "--variant", "blocking", "--variant", "commonpool-jvm-default")
    assert out.returncode == 2
    assert "scripts/lab serve 02 --variant commonpool-jvm-default --port 9000" in out.stderr


def test_setup_args_keep_only_what_chooses_the_server():
    argv = ["run", "03", "--target", URL, "--sweep", "--results-dir", "/tmp/x", "--pools", "2,4",
            "--variant", "pool=2", "--set", "a.b=1", "--no-report", "--time-limit", "30"]
    assert cli.setup_options(argv, cli.add_run_options) == ["--sweep", "--pools", "2,4", "--set", "a.b=1"]
    argv = ["serve", "01", "--listen", "192.168.56.10", "--work-ms", "100", "--port", "9001", "--no-pin"]
    assert cli.setup_options(argv, cli.add_serve_options) == ["--work-ms", "100"]


def test_every_step_runs_when_the_server_has_their_properties():
    lab01 = lab.resolve("01")
    params = dict(lab01.defaults)
    steps = lab01.steps(params)
    matching, skipped = RemoteServer(URL).split_steps(lab01, params, steps, {}, served(lab01, params, {}), [])
    assert [s.name for s in matching] == [s.name for s in steps] and skipped == []


def test_steps_needing_another_server_are_skipped_with_the_command_that_serves_them():
    lab02 = lab.resolve("02")
    params = dict(lab02.defaults)
    steps = lab02.steps(params)
    pools = served(lab02, params, steps[0].setup)  # the five main variants' server
    matching, skipped = RemoteServer(URL).split_steps(lab02, params, steps, {}, pools, ["--requests", "400"])
    assert [s.name for s in matching] == ["blocking", "commonpool", "default-ec", "custom-ec", "ws"]
    [jvm_default] = skipped
    assert jvm_default.step.name == "commonpool-jvm-default"
    assert jvm_default.serve_command == ("scripts/lab serve 02 --requests 400 --variant commonpool-jvm-default "
                                         "--listen 192.168.56.10 --port 9000")
    assert any("java.util.concurrent.ForkJoinPool.common.parallelism" in d for d in jvm_default.differences)


def test_a_server_set_up_for_none_of_the_steps_is_refused_with_the_serve_command():
    lab01 = lab.resolve("01")
    params = dict(lab01.defaults)
    pools = served(lab01, {**params, "work_ms": 100}, {})
    with pytest.raises(UsageError) as error:
        RemoteServer(URL).split_steps(lab01, params, lab01.steps(params), {}, pools, [])
    message = str(error.value)
    assert "not set up for any step" in message
    assert "lab.work-ms: the server has '100', this step needs '30'" in message
    assert "scripts/lab serve 01 --listen 192.168.56.10 --port 9000" in message


def test_a_default_run_against_the_wrong_server_suggests_a_plain_serve_despite_named_only_variants():
    # Lab 06's scala-virtual runs only when named: the steps of a default run all share the first
    # set-up, so serving it needs no --variant.
    lab06 = lab.resolve("06")
    params = dict(lab06.defaults)
    steps = select_steps(lab06, params, ())
    pools = served(lab06, {**params, "work_ms": 100}, {})
    with pytest.raises(UsageError) as error:
        RemoteServer(URL).split_steps(lab06, params, steps, {}, pools, [])
    assert "scripts/lab serve 06 --listen 192.168.56.10 --port 9000" in str(error.value)


def test_a_setting_only_the_server_has_is_a_difference():
    lab01 = lab.resolve("01")
    params = dict(lab01.defaults)
    pools = served(lab01, params, {}, {"akka.x": "1"})
    with pytest.raises(UsageError, match="akka.x: the server has '1', this step needs not set"):
        RemoteServer(URL).split_steps(lab01, params, lab01.steps(params), {}, pools, [])


@pytest.mark.parametrize("properties, why", [
    (None, "does not report its properties"),
    ({}, "not a server `scripts/lab serve` started"),
    ({LAB_PROPERTY: "02-java-async"}, "is lab 02-java-async, not lab 01-non-blocking"),
])
def test_a_server_that_is_not_this_lab_is_refused(properties, why):
    lab01 = lab.resolve("01")
    params = dict(lab01.defaults)
    pools = {"pools": {}} if properties is None else {"pools": {}, "properties": properties}
    with pytest.raises(UsageError, match=why):
        RemoteServer(URL).split_steps(lab01, params, lab01.steps(params), {}, pools, [])


@pytest.fixture
def fake_server():
    """An HTTP server whose /pools says it is lab 01 with 100 ms of work (no JVM needed)."""
    lab01 = lab.resolve("01")
    body = json.dumps(served(lab01, {**lab01.defaults, "work_ms": 100}, {})).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/pools" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_run_refuses_a_target_set_up_for_other_options(fake_server, tmp_path):
    # Lab 01 at its default 30 ms of work, against a server set up for 100 ms: nothing runs.
    out = subprocess.run([*LAB, "run", "01", "--target", fake_server, "--requests", "100",
                          "--results-dir", str(tmp_path)], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 2, out.stderr
    port = fake_server.rsplit(":", 1)[1]
    # Every variant shares the first set-up: no --variant needed.
    assert f"scripts/lab serve 01 --requests 100 --port {port}\n" in out.stderr
    assert not (tmp_path / "latest.json").exists()


# -- what --target says when the server answers /pools with an error ---------------------------

# What a lab server's allowed-hosts filter answers: Play 2.9's production error page, as lab 01
# sent it for a Host it does not allow (its style sheet shortened).
BAD_HOST_PAGE = b"""<!DOCTYPE html>
<html lang="en">
    <head>
        <title>Bad Request</title>
<style  type="text/css">
            html, body, pre { margin: 0; font-family: Monaco, 'Lucida Console', monospace; }
        </style>
    </head>
    <body>
        <h1>Bad Request</h1>

        <p id="detail">
            For request 'GET /pools' [Host not allowed: 192.0.2.10:9000]
        </p>

    </body>
</html>
"""


@pytest.fixture
def answering():
    """A local HTTP server answering every GET with the status and body a test sets."""
    reply = {"status": 200, "body": b"{}"}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(reply["status"])
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(reply["body"])))
            self.end_headers()
            self.wfile.write(reply["body"])

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", reply
    finally:
        server.shutdown()
        server.server_close()


def test_run_with_target_shows_the_status_and_body_of_an_error_on_pools(answering, tmp_path):
    url, reply = answering
    reply.update(status=400, body=BAD_HOST_PAGE)
    out = subprocess.run([*LAB, "run", "01", "--target", url, "--requests", "100", "--results-dir", str(tmp_path),
                          "--no-report"], capture_output=True, text=True, timeout=60, cwd=REPO,
                         stdin=subprocess.DEVNULL)
    assert out.returncode != 0
    assert "did not answer" not in out.stderr, out.stderr
    assert (f"{url}/pools answered HTTP 400 Bad Request: Bad Request For request 'GET /pools' "
            "[Host not allowed: 192.0.2.10:9000]") in out.stderr, out.stderr
    # The page's markup and style are left out; the hint names the fix.
    assert "<h1>" not in out.stderr and "font-family" not in out.stderr
    assert "scripts/lab serve NN --listen 127.0.0.1" in out.stderr, out.stderr
    assert not (tmp_path / "latest.json").exists()


@pytest.mark.parametrize("status, body, shown", [
    (500, b"boom: the dispatcher is gone", "HTTP 500 Internal Server Error: boom: the dispatcher is gone"),
    (404, b"", "HTTP 404 Not Found (empty body)"),
    (503, b"x" * 500, "HTTP 503 Service Unavailable: " + "x" * 200 + "\u2026"),
], ids=["500", "404-empty", "503-long"])
def test_remote_pools_errors_carry_status_and_first_bytes(answering, status, body, shown):
    from pul.errors import ServerFailed

    url, reply = answering
    reply.update(status=status, body=body)
    with pytest.raises(ServerFailed) as error:
        RemoteServer(url).pools()
    assert f"{url}/pools answered {shown}." in str(error.value)
    assert "listen" not in str(error.value)  # the allowed-hosts hint is for that 400 only


def test_a_target_that_does_not_answer_says_why():
    from pul.errors import ServerFailed

    port = free_port()  # nothing listens there
    with pytest.raises(ServerFailed, match=r"did not answer /pools \(.*refused.*\)"):
        RemoteServer(f"http://127.0.0.1:{port}").pools()


def test_http_get_still_returns_the_body_or_none(answering):
    from pul.server import http_fetch, http_get

    url, reply = answering
    reply.update(status=200, body=b'{"pools": {}}')
    assert http_get(url + "/pools") == b'{"pools": {}}'
    for status in (400, 404, 500):
        reply.update(status=status, body=b"no")
        assert http_get(url + "/pools") is None
        answer = http_fetch(url + "/pools")
        assert (answer.status, answer.body, answer.ok) == (status, b"no", False)
    assert http_get(f"http://127.0.0.1:{free_port()}/status", timeout=2) is None
    assert http_fetch(f"http://127.0.0.1:{free_port()}/status", timeout=2).status is None


# -- the Play secret stays off the server's command line ------------------------------------------

def test_the_server_command_line_holds_no_secret(tmp_path):
    from pul.server import Server

    server = Server(tmp_path / "bin" / "lab01", 9000, tmp_path / "server.log", "0",
                    {"lab.work-ms": "100"}, env={"JDBC_DATABASE_PASSWORD": "from-a-service"})
    command = server.command()
    assert not [arg for arg in command if "secret" in arg.lower()], command
    assert "-Dlab.work-ms=100" in command and "-Dhttp.address=127.0.0.1" in command
    # The secret goes by environment, fresh on every start, next to the services' variables;
    # every lab's application.conf reads it: play.http.secret.key = ${?APPLICATION_SECRET}.
    env, again = server.child_env(), server.child_env()
    assert len(env["APPLICATION_SECRET"]) >= 32 and env["APPLICATION_SECRET"] != again["APPLICATION_SECRET"]
    assert env["JDBC_DATABASE_PASSWORD"] == "from-a-service"
    assert env["PATH"] == os.environ["PATH"]
    for conf in sorted(REPO.glob("labs/[0-9][0-9]-*/conf/application.conf")):
        assert "play.http.secret.key = ${?APPLICATION_SECRET}" in conf.read_text(), conf
