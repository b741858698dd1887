"""scripts/sbt refuses clearly when Java is missing or too old, before fetching anything."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SBT = REPO / "scripts" / "sbt"


def fake_java(bin_dir: Path, version: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\necho '    java.specification.version = {version}' >&2\n")
    java.chmod(0o755)


def run_sbt(path: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {"PATH": path, "HOME": str(tmp_path), "PUL_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run(["/bin/bash", str(SBT), "--version"], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_missing_java_is_explained(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "awk", "sha256sum", "mktemp", "mkdir", "mv", "rm"):
        os.symlink(f"/usr/bin/{tool}", bin_dir / tool)
    out = run_sbt(str(bin_dir), tmp_path)
    assert out.returncode != 0
    assert "Java is not installed" in out.stderr and "openjdk-17" in out.stderr


def test_old_java_is_refused(tmp_path):
    fake_java(tmp_path / "bin", "11")
    out = run_sbt(f"{tmp_path / 'bin'}:/usr/bin:/bin", tmp_path)
    assert out.returncode != 0
    assert "Java 11 found" in out.stderr and "17 or newer" in out.stderr
    assert not (tmp_path / "cache").exists(), "nothing should be fetched with an unusable Java"


def test_a_tampered_download_is_refused_and_not_kept(tmp_path):
    # A fake curl that "downloads" the wrong bytes: the checksum must catch it.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    curl = bin_dir / "curl"
    curl.write_text('#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\necho not-a-jar > "$2"\n')
    curl.chmod(0o755)
    out = run_sbt(f"{bin_dir}:/usr/bin:/bin", tmp_path)
    assert out.returncode != 0
    assert "checksum mismatch" in out.stderr
    assert not list((tmp_path / "cache").glob("sbt-launch*")), "a bad download must not be kept"


def shown(*args: str) -> str:
    env = {**os.environ, "PUL_SBT_SHOW": "1"}
    return subprocess.run(["/bin/bash", str(SBT), *args], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=True).stdout


def test_builds_use_the_first_jit_tier_only_and_the_app_keeps_both():
    c1_only = "-XX:TieredStopAtLevel=1"
    for build in (["stage"], ["test", "stage"], ["Test/compile", "stage"]):
        assert c1_only in shown(*build).split(), build
    # Play's dev mode runs in sbt's JVM: the app gets the full JIT, so does the shell (it may run it).
    for app in (["run"], ["~run"], ["run 9001"], ["compile", "runProd"], []):
        assert c1_only not in shown(*app).split(), app
