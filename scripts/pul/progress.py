"""One status line for long steps: rewritten in place on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, stream=None, quiet: bool = False):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = self.stream.isatty()
        self._last_plain = ""
        self._width = 0
        self._started = time.monotonic()

    def step(self, label: str) -> None:
        """Start a new step: a line of its own, and the start of the clock."""
        self.clear()
        self._started = time.monotonic()
        if not self.quiet:
            print(f"==> {label}", file=self.stream, flush=True)

    def update(self, detail: str) -> None:
        """Show how far the current step is (elapsed time added)."""
        if self.quiet:
            return
        text = f"    {detail} ({time.monotonic() - self._started:.0f}s)"
        if self.live:
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self.stream.flush()
            self._width = len(text)
        elif detail != self._last_plain:
            # Without a terminal, print only when the detail itself changes.
            print(text, file=self.stream, flush=True)
            self._last_plain = detail

    def clear(self) -> None:
        if self.live and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
        self._width = 0

    def note(self, message: str) -> None:
        self.clear()
        if not self.quiet:
            print(f"    {message}", file=self.stream, flush=True)

    def elapsed(self) -> float:
        return time.monotonic() - self._started


def clock(seconds: float) -> str:
    """12 s, 3m05s."""
    seconds = max(0, int(round(seconds)))
    return f"{seconds}s" if seconds < 60 else f"{seconds // 60}m{seconds % 60:02d}s"


class Eta:
    """Time left of a run: a plan of phases (a server start, a step's warm-up, a step's
    measurement), each with the seconds it should take; the phase under way counts what is
    left of its own estimate, or nothing once it overruns (a warm-up still settling). The
    estimates of the phases to come are scaled by how the finished ones went against theirs
    (warm-ups that settle slowly on a slow core: a lab 06 run planned at 2 m 33 s took 4 m 10 s)."""

    # The scale waits for this many planned seconds finished, and stays within these bounds: never
    # below 1, the plan counting each warm-up at its fewest rounds (a floor), nor a fast server
    # start promising fast measurements.
    LEARN_AFTER_SECONDS = 10.0
    SCALE_BOUNDS = (1.0, 3.0)

    def __init__(self, phases: list[tuple[str, float]], now=None):
        import time as _time
        self._now = now or _time.monotonic
        self.phases = phases
        self.index = {key: i for i, (key, _) in enumerate(phases)}
        self.current = 0
        self.started = self._now()
        # Where the run's time went: seconds per phase begun, for the results (duration_s's parts).
        self._spent: dict[str, float] = {}
        self._open: tuple[str, float] | None = None
        # Planned phases finished: their estimates and the seconds they took; and whether the phase
        # under way is `current`, begun at `started` (not an unplanned one since).
        self._planned_done = 0.0
        self._taken = 0.0
        self._in_plan = False

    def begin(self, key: str) -> None:
        """Start timing `key`; a key not in the plan (the build) is timed all the same."""
        self._close()
        now = self._now()
        if self._in_plan:
            self._planned_done += self.phases[self.current][1]
            self._taken += now - self.started
        self._open = (key, now)
        self._in_plan = key in self.index
        if self._in_plan:
            self.current = self.index[key]
            self.started = now

    def scale(self) -> float:
        """How long the finished planned phases took against their estimates (1 until enough)."""
        if self._planned_done < self.LEARN_AFTER_SECONDS:
            return 1.0
        low, high = self.SCALE_BOUNDS
        return min(high, max(low, self._taken / self._planned_done))

    def _close(self) -> None:
        if self._open is not None:
            key, since = self._open
            self._spent[key] = self._spent.get(key, 0.0) + (self._now() - since)
            self._open = None

    def spent(self) -> dict[str, float]:
        """Seconds spent in each phase begun so far, in the order begun, to a tenth of a second."""
        self._close()
        return {key: round(seconds, 1) for key, seconds in self._spent.items()}

    def seconds_left(self) -> float:
        if not self.phases:
            return 0.0
        scale = self.scale()
        own = max(0.0, self.phases[self.current][1] * scale - (self._now() - self.started))
        return own + scale * sum(seconds for _, seconds in self.phases[self.current + 1:])

    def left(self) -> str:
        """' [phase 4/12, about 1m20s left]', for a progress line."""
        return f" [{self.current + 1}/{len(self.phases)}, about {clock(self.seconds_left())} left]"
