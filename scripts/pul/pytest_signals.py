"""A pytest plugin for every test session here (the repository's conftest.py loads it): SIGTERM
and SIGHUP (a CI time-out, a closed terminal) stop pytest the way Ctrl-C does, by raising
KeyboardInterrupt in the test that runs. Without it Python dies on the spot, and the `finally`
blocks and fixtures that remove a lab's scratch copy or stop a server never run."""

from __future__ import annotations

import signal


def pytest_configure(config) -> None:
    for stop in (signal.SIGTERM, signal.SIGHUP):
        # Ignored when pytest started (`nohup`): the caller wants the session to outlive it.
        if signal.getsignal(stop) is not signal.SIG_IGN:
            signal.signal(stop, signal.default_int_handler)
