"""Checks of `scripts/lab run` and `serve`'s options that must pass before anything is built or started.

A bad option should cost the reader a second and a sentence naming it, not a build (a minute the
first time) followed by a traceback or a server started with what the driver meant to prevent.
"""

from __future__ import annotations

from .errors import UsageError

# -D properties the driver (or the staged start script) sets itself: a --set of one would override
# it, since the reader's settings come last (remote.server_properties, Server.command). Play reads
# each alias below as the same setting (play-server 2.9's reference.conf: play.server.http.port =
# ${?http.port}, address = ${?http.address}, https.port and https.address likewise,
# play.server.dir = ${?user.dir}, pidfile.path = ${?pidfile.path}). Each maps to what to use instead.
_ADDRESS = ("the server's address is the driver's: `scripts/lab serve` takes --listen ADDR (0.0.0.0 only "
            "with --listen-anywhere); `scripts/lab run` always serves on 127.0.0.1")
_PORT = "use --port N"
_HTTPS = ("the labs serve plain HTTP on --listen and --port; an HTTPS port would listen on every "
          "address of the machine (Play's default for https.address is 0.0.0.0)")
_DIR = "the staged start script sets it to the lab's build, where Play finds its files"
_PIDFILE = "the driver's: its servers write no pid file (pidfile.path=/dev/null); it stops them itself"
RESERVED_SETTINGS = {
    "http.address": _ADDRESS,
    "play.server.http.address": _ADDRESS,
    "http.port": _PORT,
    "play.server.http.port": _PORT,
    "https.port": _HTTPS,
    "https.address": _HTTPS,
    "play.server.https.port": _HTTPS,
    "play.server.https.address": _HTTPS,
    "play.http.secret.key": "the driver generates a fresh secret for every server start",
    "pidfile.path": _PIDFILE,
    "play.server.pidfile.path": _PIDFILE,
    "user.dir": _DIR,
    "play.server.dir": _DIR,
    "pul.lab": "the driver sets it to the lab's name, which `scripts/lab run --target` checks",
}


def check_setting(key: str) -> None:
    """UsageError for a --set of a property the driver sets itself, saying what to use instead."""
    if key in RESERVED_SETTINGS:
        raise UsageError(f"--set {key}=... is not allowed: {RESERVED_SETTINGS[key]}.")
