"""`cd labs/01-non-blocking && ../../scripts/sbt run`, as the README and the chapter tell a reader:
Play's dev mode builds the lab together with the instruments module (labs/instruments, a part of
the lab's own build) and serves both, on loopback only. The lab's routes and the module's answer;
stopping sbt leaves nothing behind. (Every lab is wired the same way: scripts/tests/test_instruments.py.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from pul.procs import processes_with_run_id
from pul.server import free_port

# A real sbt and server (a minute or so): the lifecycle part runs it, never the fast unit tests.
pytestmark = [pytest.mark.slow, pytest.mark.lifecycle]

LAB_DIR = Path(__file__).resolve().parents[1]
SBT = LAB_DIR.parents[1] / "scripts" / "sbt"
# sbt loads, compiles what changed, then dev mode builds the app on the first request.
STARTUP_SECONDS = 300


def fetch(url: str, method: str = "GET") -> tuple[int, str]:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_sbt_run_serves_the_lab_and_its_instruments_and_stops_clean(tmp_path):
    port = free_port()
    token = "devmode-" + uuid.uuid4().hex[:10]
    log = (tmp_path / "sbt.log").open("w")
    # stdin a pipe that stays open: dev mode stops at the end of its input (Ctrl-D).
    sbt = subprocess.Popen([str(SBT), f"run {port}"], cwd=LAB_DIR, stdin=subprocess.PIPE, stdout=log,
                           stderr=subprocess.STDOUT, start_new_session=True,
                           env={**os.environ, "PUL_RUN_ID": token})
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        status = None
        while time.monotonic() < deadline and sbt.poll() is None:
            try:
                status = fetch(f"http://127.0.0.1:{port}/status")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(2)
        output = (tmp_path / "sbt.log").read_text()
        assert status == (200, "ok\n"), f"dev mode did not answer /status: {status}\n{output[-3000:]}"
        # The lab's own route, and the module's: /pools names the lab's pools (its Diagnostics).
        assert fetch(f"http://127.0.0.1:{port}/scala/offloaded")[0] == 200
        code, body = fetch(f"http://127.0.0.1:{port}/pools")
        assert code == 200, body
        pools = json.loads(body)
        assert {"default", "offload"} <= set(pools["pools"]) and pools["work_ms"] > 0, pools
        assert fetch(f"http://127.0.0.1:{port}/timeline/start?hz=10", "POST")[0] == 200
        code, body = fetch(f"http://127.0.0.1:{port}/timeline/stop", "POST")
        assert code == 200 and "offload.busy" in json.loads(body)["series"], body
        # Loopback only (build.sbt: PlayKeys.playDefaultAddress), like the servers the driver starts:
        # 127.0.0.1, or its IPv4-mapped form on a dual-stack socket ([::ffff:127.0.0.1]).
        listening = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True).stdout
        local = [line.split()[3] for line in listening.splitlines() if line.strip()]
        assert local and all(address.rsplit(":", 1)[0] in ("127.0.0.1", "[::ffff:127.0.0.1]") for address in local), \
            listening
    finally:
        # Ctrl-D, as a reader stops it; then sbt exits. Its whole group goes if it does not.
        sbt.stdin.close()
        try:
            sbt.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(sbt.pid, signal.SIGKILL)
            sbt.wait()
        log.close()
    left = processes_with_run_id(token)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left behind by sbt run: {left}"
