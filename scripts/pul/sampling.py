"""A thread of the driver that samples something at a fixed rate while a step's measured runs go
on: the server's footprint (pul.footprint), its listen queue (pul.listenq), a CPU limit's
cpu.stat (pul.cpulimit). Started before the runs, stopped after them."""

from __future__ import annotations

import threading
from typing import Callable


class Periodic:
    """Calls `sample` `hz` times a second on a daemon thread, from start() until stop(); with
    `at_once`, once more right when it starts (a first reading to measure the first interval
    from)."""

    def __init__(self, hz: float, sample: Callable[[], None], name: str, at_once: bool = False):
        self.interval, self.sample, self.at_once = 1.0 / hz, sample, at_once
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def _loop(self) -> None:
        if self.at_once:
            self.sample()
        while not self._stop.wait(self.interval):
            self.sample()

    def start(self) -> "Periodic":
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)
