"""pul.listenq: the listen queue a step watches, read from a real socket that accepts nothing."""

from __future__ import annotations

import socket
import time

import pytest

from pul import listenq

NETSTAT = """\
TcpExt: SyncookiesSent ListenOverflows ListenDrops
TcpExt: 0 7 9
IpExt: InNoRoutes
IpExt: 0
"""


def test_tcp_ext_counters_pair_names_with_values(tmp_path):
    path = tmp_path / "netstat"
    path.write_text(NETSTAT)
    assert listenq.tcp_ext_counters(path) == {"SyncookiesSent": 0, "ListenOverflows": 7, "ListenDrops": 9}
    assert listenq.tcp_ext_counters(tmp_path / "missing") == {}


def test_ss_listen_line_gives_queue_and_limit():
    assert listenq.parse_ss("LISTEN 4097   4096   0.0.0.0:9000 0.0.0.0:*\n") == (4097, 4096)
    assert listenq.parse_ss("") is None


@pytest.mark.skipif(not listenq.ListenQueueMeter.available(), reason="needs ss and /proc/net/netstat")
def test_a_server_that_accepts_nothing_fills_its_queue_and_overflows():
    # Backlog 2: the kernel queues 3 handshakes (Recv-Q one above Send-Q), then drops the rest's
    # final ACKs and counts them in ListenOverflows.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(2)
    port = server.getsockname()[1]
    meter = listenq.ListenQueueMeter(port).start()
    clients = []
    try:
        for _ in range(8):
            client = socket.socket()
            client.setblocking(False)
            client.connect_ex(("127.0.0.1", port))
            clients.append(client)
        # Until the meter has sampled a few times: a sample is an `ss` run, and on a busy machine
        # (the suite's builds beside it) a fixed 0.6 s held only two.
        deadline = time.monotonic() + 10
        while len(meter.samples) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        found = meter.finish()
        for client in clients:
            client.close()
        server.close()
    assert found["accept_queue_limit"] == 2
    assert found["accept_queue_max"] == 3
    assert found["samples"] >= 5 and found["full_share"] > 0.5
    assert found["listen_overflows"] >= 1
