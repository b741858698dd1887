"""A throwaway PostgreSQL cluster for labs and tests, or the one DATABASE_URL names.

`database(...)` is a context manager that yields a `Database`: the JDBC URL,
user and password a Play app needs, plus the environment variables that hand
them over (the Heroku names JDBC_DATABASE_URL / _USERNAME / _PASSWORD, so the
password never appears on a command line).

Without DATABASE_URL it creates a cluster of its own: `initdb` into a fresh
temporary directory, `postgres` listening on 127.0.0.1 only, on a free port,
with its Unix socket in that directory too, started as a child of the caller
(so the driver's Ctrl-C and failure handling stop it) and pinned to the CPUs
asked for. On the way out it stops the server (fast shutdown, then SIGKILL)
and deletes the directory, whatever happened; if the driver itself is killed,
its watchdog does (the directory names its driver: pul.watchdog.claim). PostgreSQL refuses to run as
root, so as root both programs run as the `postgres` system user that
Debian's package creates (or `nobody`), through util-linux's `setpriv`.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from . import tools, watchdog
from .errors import LabError, UsageError
from .procs import Child, Children, start_watchdog
from .progress import Progress
from .server import free_port

TEMP_PREFIX = watchdog.POSTGRES_PREFIX
SUPERUSER = "lab"
# Settings the throwaway cluster starts with; stored in results through the app's report.
SETTINGS = {
    "max_connections": "100",
    "shared_buffers": "128MB",
    # Nothing in a throwaway cluster is worth an fsync, and the labs only read.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


@dataclass
class Database:
    jdbc_url: str
    username: str | None
    password: str | None
    # "throwaway" (started here) or "DATABASE_URL" (given by the user).
    origin: str
    description: str
    cpus: str | None = None
    # The server's process group, to read its CPU time (throwaway clusters only).
    pgid: int | None = None
    settings: dict = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = {"JDBC_DATABASE_URL": self.jdbc_url}
        if self.username:
            env["JDBC_DATABASE_USERNAME"] = self.username
        if self.password:
            env["JDBC_DATABASE_PASSWORD"] = self.password
        return env

    def facts(self) -> dict:
        return {"origin": self.origin, "where": self.description, "cpus": self.cpus,
                "startup_settings": self.settings or None}


def from_url(url: str) -> Database:
    """A Database from `postgres://user:pw@host:port/db` or `jdbc:postgresql://host:port/db?user=..`."""
    if url.startswith("jdbc:postgresql:"):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(url[len("jdbc:"):]).query)
        user = query.get("user", [None])[0]
        return Database(url, user, None, "DATABASE_URL", redact(url))
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql") or not parts.hostname or not parts.path.strip("/"):
        raise UsageError(f"DATABASE_URL must look like postgresql://user:password@host:5432/dbname "
                         f"or jdbc:postgresql://host:5432/dbname (got {redact(url)!r})")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    jdbc = f"jdbc:postgresql://{host}:{parts.port or 5432}{parts.path}"
    if parts.query:
        jdbc += "?" + parts.query
    return Database(jdbc, urllib.parse.unquote(parts.username) if parts.username else None,
                    urllib.parse.unquote(parts.password) if parts.password else None,
                    "DATABASE_URL", redact(url))


# A password given as a URL parameter: PgJDBC's `password` and `sslpassword`, libpq's `password`.
_PASSWORD_PARAMETER = re.compile(r"([?&](?:ssl)?password=)[^&#]*", re.IGNORECASE)


def redact(url: str) -> str:
    """The URL as it may be printed or stored: user:***@host, and ?password=*** or &password=***."""
    prefix = "jdbc:" if url.startswith("jdbc:") else ""
    rest = url[len(prefix):]
    parts = urllib.parse.urlsplit(rest)
    if parts.password:
        netloc = parts.netloc.replace(":" + parts.password + "@", ":***@")
        rest = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return prefix + _PASSWORD_PARAMETER.sub(r"\1***", rest)



def _run_as() -> list[str]:
    """A prefix that drops root for PostgreSQL (which refuses to run as root)."""
    if os.geteuid() != 0:
        return []
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            if not shutil.which("setpriv"):
                raise LabError("running as root, PostgreSQL must be started as another user, which needs "
                               "`setpriv` (apt-get install util-linux)")
            return ["setpriv", f"--reuid={name}", f"--regid={pwd.getpwnam(name).pw_gid}", "--init-groups",
                    "--inh-caps=-all"]
    raise LabError("running as root, and there is neither a `postgres` nor a `nobody` user to run PostgreSQL as")


def _owner() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return entry.pw_uid, entry.pw_gid
    return None


def _bin_dir(progress: Progress) -> Path:
    found = tools.ensure((tools.INITDB, tools.POSTGRES), progress)
    return Path(found["postgres"]).resolve().parent


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").rstrip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _ready(data_dir: Path) -> bool:
    """postmaster.pid's 8th line says `ready` once connections are accepted."""
    try:
        lines = (data_dir / "postmaster.pid").read_text().splitlines()
    except OSError:
        return False
    return len(lines) >= 8 and lines[7].strip() == "ready"


@contextlib.contextmanager
def throwaway(children: Children, progress: Progress, cpus: str | None = None,
              timeout: float = 60) -> Iterator[Database]:
    """initdb + postgres in a temporary directory; stopped and removed on the way out."""
    bin_dir = _bin_dir(progress)
    # Before the directory exists: from then on, a killed driver's watchdog removes it.
    start_watchdog()
    base = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
    child: Child | None = None
    try:
        watchdog.claim(base)
        owner = _owner()
        if owner:
            os.chown(base, *owner)
        data_dir, socket_dir, log_path = base / "data", base / "socket", base / "postgres.log"
        password = secrets.token_urlsafe(18)
        pwfile = base / "pwfile"
        pwfile.write_text(password + "\n")
        socket_dir.mkdir()
        for path in (pwfile, socket_dir):
            if owner:
                os.chown(path, *owner)
        progress.step(f"creating a throwaway PostgreSQL cluster in {base}")
        init = subprocess.run(
            [*_run_as(), str(bin_dir / "initdb"), "-D", str(data_dir), "-U", SUPERUSER,
             f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, cwd=base)
        pwfile.unlink()
        if init.returncode != 0:
            raise LabError(f"initdb failed:\n{init.stdout}{init.stderr}")
        port = free_port()
        args = [str(bin_dir / "postgres"), "-D", str(data_dir), "-p", str(port),
                "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={socket_dir}",
                *(x for key, value in SETTINGS.items() for x in ("-c", f"{key}={value}"))]
        args = [*_run_as(), *args]
        if cpus is not None:
            args = ["taskset", "-c", cpus, *args]
        log = log_path.open("w")
        progress.step(f"starting PostgreSQL on 127.0.0.1:{port}"
                      + (f", pinned to CPU {cpus}" if cpus is not None else ""))
        child = children.start(args, cwd=base, stdout=log, name="postgres")
        log.close()
        deadline = time.monotonic() + timeout
        while not _ready(data_dir):
            if child.poll() is not None:
                raise LabError(f"PostgreSQL exited with code {child.popen.returncode} while starting:\n"
                               f"{_tail(log_path)}")
            if time.monotonic() > deadline:
                raise LabError(f"PostgreSQL was not ready within {timeout:.0f}s:\n{_tail(log_path)}")
            time.sleep(0.1)
        yield Database(f"jdbc:postgresql://127.0.0.1:{port}/postgres", SUPERUSER, password, "throwaway",
                       "a throwaway cluster started by the driver", cpus=cpus, pgid=child.pid,
                       settings=dict(SETTINGS))
    finally:
        if child is not None:
            _stop(children, child)
        shutil.rmtree(base, ignore_errors=True)


def _stop(children: Children, child: Child) -> None:
    """Fast shutdown (SIGINT to the postmaster: ends sessions, no waiting for clients), then the group."""
    if child.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(15)
    children.stop(child, grace=5)


@contextlib.contextmanager
def database(children: Children, progress: Progress, cpus: str | None = None) -> Iterator[Database]:
    """DATABASE_URL when set, else a throwaway cluster."""
    url = os.environ.get("DATABASE_URL", "").strip()
    if url:
        found = from_url(url)
        progress.step(f"using the database in DATABASE_URL: {found.description}")
        yield found
        return
    with throwaway(children, progress, cpus) as found:
        yield found
