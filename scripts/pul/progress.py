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
