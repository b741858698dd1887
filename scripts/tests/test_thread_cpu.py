"""Where a server's CPU went, by group of threads (pul.footprint.thread_cpu): the groups, and the
time of threads that ended between the two readings."""

import os
import threading
import time
from pathlib import Path

from pul import footprint


def stat(pid: int, name: str, utime: int, stime: int) -> str:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    return f"{pid} ({name}) S 1 1 1 0 -1 0 0 0 0 0 {utime} {stime} 0 0 20 0 1 0 100\n"


def fake_process(root, pid, process_ticks, threads):
    (root / str(pid) / "task").mkdir(parents=True, exist_ok=True)
    (root / str(pid) / "stat").write_text(stat(pid, "java", process_ticks, 0))
    for tid in list((root / str(pid) / "task").iterdir()):
        for f in tid.iterdir():
            f.unlink()
        tid.rmdir()
    for tid, (name, ticks) in threads.items():
        (root / str(pid) / "task" / str(tid)).mkdir()
        (root / str(pid) / "task" / str(tid) / "stat").write_text(stat(tid, name, ticks, 0))


def test_a_names_numbers_make_its_group_and_one_pool_is_one_group():
    assert footprint.thread_group("GC Thread#3") == "GC Thread"
    assert footprint.thread_group("ForkJoinPool-1-") == "ForkJoinPool"
    # The kernel keeps 15 characters: the same pool's threads, cut at different places.
    assert footprint.thread_group("pool-12-thread-") == footprint.thread_group("pool-1-thread-1") == "pool-N-thread"
    assert footprint.thread_group("C2 CompilerThre") == "C2 CompilerThre"
    assert footprint.thread_group("G1 Conc#0") == "G1 Conc"
    assert footprint.thread_group("HikariPool-1 ho") == "HikariPool-N ho"


def test_groups_ranked_with_new_threads_counted_from_zero_and_ended_ones_as_a_remainder(tmp_path):
    fake_process(tmp_path, 7, 1000, {7: ("java", 10), 8: ("C2 CompilerThre", 300), 9: ("GC Thread#0", 50),
                                     10: ("pool-1-thread-1", 40)})
    before = footprint.read_threads(7, tmp_path)
    # Thread 10 ended (its 40 + 60 more ticks stay in the process's count); 11 and 12 are new.
    fake_process(tmp_path, 7, 1600, {7: ("java", 10), 8: ("C2 CompilerThre", 500), 9: ("GC Thread#0", 80),
                                     11: ("GC Thread#1", 30), 12: ("pool-1-thread-2", 200)})
    after = footprint.read_threads(7, tmp_path)
    found = footprint.thread_cpu(before, after, ticks_per_second=100)
    assert found["cpu_seconds"] == 6.0
    assert found["groups"] == [{"name": "C2 CompilerThre", "cpu_seconds": 2.0, "threads": 1},
                               {"name": "pool-N-thread", "cpu_seconds": 2.0, "threads": 1},
                               {"name": "GC Thread", "cpu_seconds": 0.6, "threads": 2}]
    # 600 ticks in all, 460 of them in live threads: 140 by threads that ended.
    assert found["ended_threads_cpu_seconds"] == 1.4
    assert footprint.read_threads(99, tmp_path) is None


def test_beyond_the_top_groups_the_rest_is_other(tmp_path):
    threads = {100 + i: (f"worker-{chr(97 + i)}", 0) for i in range(10)}
    fake_process(tmp_path, 7, 0, threads)
    before = footprint.read_threads(7, tmp_path)
    fake_process(tmp_path, 7, 550, {tid: (name, 10 * (i + 1)) for i, (tid, (name, _)) in enumerate(threads.items())})
    found = footprint.thread_cpu(before, footprint.read_threads(7, tmp_path), 100, top=8)
    assert [g["name"] for g in found["groups"]][:2] == ["worker-j", "worker-i"]
    assert found["groups"][-1] == {"name": "other", "cpu_seconds": 0.3, "threads": 2}


def test_this_process_spinning_thread_shows_in_its_group():
    before = footprint.read_threads(os.getpid())
    spun, done = threading.Event(), threading.Event()

    def spin():
        # Named as the kernel sees it (a thread may rename itself), then a fifth of a second of its
        # own CPU, however busy the machine is.
        Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text("spinner-7")
        while time.thread_time() < 0.2:
            pass
        spun.set()
        done.wait(5)

    worker = threading.Thread(target=spin)
    worker.start()
    assert spun.wait(30)
    after = footprint.read_threads(os.getpid())
    done.set()
    worker.join()
    found = footprint.thread_cpu(before, after, footprint.CLOCK_TICKS)
    [spinner] = [g for g in found["groups"] if g["name"] == "spinner"]
    assert spinner["cpu_seconds"] >= 0.18 and spinner["threads"] == 1
