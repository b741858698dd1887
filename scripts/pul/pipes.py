"""A reader that stops reading (`scripts/lab list | head -1`, `| grep -q 01`) ends our output,
not our work, and prints no traceback: the command goes on (a run still writes its results and
stops its servers) and exits as it would have.

Python raises BrokenPipeError on the first write after the reader has gone, and again when it
flushes the stream at exit. Each entry point calls `tolerate_closed_output()` first: from the first
such error on, the stream writes to /dev/null instead.
"""

from __future__ import annotations

import os
import sys


class _Tolerant:
    """A text stream that, once its reader has gone, sends everything to /dev/null."""

    def __init__(self, stream):
        self._stream = stream
        self.reader_gone = False

    def _to_devnull(self) -> None:
        self.reader_gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()
            # What the stream still held goes to /dev/null on the next flush.
            try:
                self._stream.flush()
            except BrokenPipeError:
                pass

    def __getattr__(self, name):
        return getattr(self._stream, name)


def tolerate_closed_output() -> None:
    if not isinstance(sys.stdout, _Tolerant):
        sys.stdout = _Tolerant(sys.stdout)
    if not isinstance(sys.stderr, _Tolerant):
        sys.stderr = _Tolerant(sys.stderr)
