"""Facts about the machine a result was measured on, stored with every result."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def cpu_model() -> str:
    match = re.search(r"^model name\s*:\s*(.+)$", _read("/proc/cpuinfo"), re.M)
    return match.group(1).strip() if match else platform.processor() or platform.machine()


def memory_gib() -> float | None:
    match = re.search(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), re.M)
    return round(int(match.group(1)) / 1024 / 1024, 1) if match else None


def os_name() -> str:
    match = re.search(r'^PRETTY_NAME="?([^"\n]+)', _read("/etc/os-release"), re.M)
    name = match.group(1) if match else platform.system()
    return f"{name} (kernel {platform.release()})"


def jdk_version() -> str | None:
    if not shutil.which("java"):
        return None
    out = subprocess.run(["java", "-XshowSettings:properties", "-version"], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL).stderr
    vendor = re.search(r"java\.vendor = (.+)", out)
    version = re.search(r"java\.runtime\.version = (.+)", out)
    return " ".join(x.group(1).strip() for x in (vendor, version) if x) or None


def ab_version(ab: str | None) -> str | None:
    if not ab:
        return None
    out = subprocess.run([ab, "-V"], capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout
    match = re.search(r"Version (\S+)", out)
    return match.group(1) if match else None


def play_version(lab_dir: Path) -> str | None:
    match = re.search(r'"sbt-plugin"\s*%\s*"([^"]+)"', _read(str(lab_dir / "project" / "plugins.sbt")))
    return match.group(1) if match else None


def facts(lab_dir: Path, pinning: dict, ab: str | None) -> dict:
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": memory_gib(),
        "os": os_name(),
        "jdk": jdk_version(),
        "play": play_version(lab_dir),
        "ab": ab_version(ab),
        "load_average_at_start": round(os.getloadavg()[0], 2),
        "pinning": pinning,
    }
