"""Errors the driver reports to the user, each with its own exit code."""

from __future__ import annotations


class LabError(Exception):
    """A failure the user can act on; the message says what to do."""

    exit_code = 1


class UsageError(LabError):
    exit_code = 2


class MissingTool(LabError):
    exit_code = 3


class PortBusy(LabError):
    exit_code = 4


class ServerFailed(LabError):
    exit_code = 5


class BuildFailed(LabError):
    exit_code = 6


class LoadFailed(LabError):
    exit_code = 7


class NothingCompleted(LoadFailed):
    """The load tool reported, but no request completed within its time limit: a warm-up round
    may say so (the server still works off an earlier round's requests); a measured run may not."""


class WriteFailed(LabError, OSError):
    """A results or book file could not be written (full disk, read-only folder); the earlier
    file, if any, is left as it was. An OSError too, for callers that catch those."""

    exit_code = 9


class BadResults(LabError):
    """A results file that is not valid JSON or lacks what the book is drawn from."""

    exit_code = 10


EXIT_CODES = {
    0: "success",
    1: "other failure",
    2: "bad command line (unknown lab, bad option)",
    3: "a tool is missing (the message says how to install it)",
    4: "the chosen port is taken",
    5: "the server did not start, or stopped during the run",
    6: "the lab did not build",
    7: "the load generator failed",
    8: "an exercise check did not pass (scripts/lab check: the output says why, with a hint)",
    9: "a results or book file could not be written (the message names it; a run prints its measurement first)",
    10: "a results file is corrupt or incomplete (the message names it and what is wrong)",
    130: "interrupted (Ctrl-C); everything started was stopped",
    143: "terminated (SIGTERM); everything started was stopped",
}
