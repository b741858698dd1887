"""A pinned server starts on every core, sized for its own by -XX:ActiveProcessorCount, and every
thread it has is pinned once it answers, including threads it starts while being pinned."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pul import server

# A process that keeps starting threads (each lives a while), so some start during a pass.
SPAWNER = textwrap.dedent("""
    import sys, threading, time
    def spawn():
        while True:
            threading.Thread(target=time.sleep, args=(0.5,), daemon=True).start()
            time.sleep(0.002)
    for _ in range(4):
        threading.Thread(target=spawn, daemon=True).start()
    print("ready", flush=True)
    time.sleep(60)
""")


def test_the_jvm_is_told_the_cores_it_will_be_pinned_to():
    assert server.jvm_options("0") == (*server.Server.JVM_OPTIONS, "-XX:ActiveProcessorCount=1")
    assert server.jvm_options("0,2-3") == (*server.Server.JVM_OPTIONS, "-XX:ActiveProcessorCount=3")
    assert server.jvm_options(None) == server.Server.JVM_OPTIONS


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to pin one of them")
def test_every_thread_of_the_group_ends_up_pinned_even_while_threads_start():
    target = {min(os.sched_getaffinity(0))}
    child = subprocess.Popen([sys.executable, "-c", SPAWNER], stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        assert os.sched_getaffinity(child.pid) != target
        threads = server.pin_group(child.pid, target)
        assert threads > 4
        time.sleep(0.1)  # threads started since: their creators were pinned, so they are too
        tids = [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]
        masks = {}
        for tid in tids:
            try:
                masks[tid] = os.sched_getaffinity(tid)
            except ProcessLookupError:
                pass  # a thread that ended meanwhile
        assert len(masks) > 4 and all(mask == target for mask in masks.values()), masks
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
