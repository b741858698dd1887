"""`scripts/lab build A B --test` builds the labs in one sbt (pul.server.build_together): sbt's
output is cut after each command's [success] line and each part goes to its lab's pul-build.log,
where `tests_passed` reads what the lab's Play tests said; a failure names the lab and the task
whose command did not succeed."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from pul import playline, server
from pul.lab import all_labs
from pul.testing import REPO

OUTPUT = """[info] welcome to sbt 1.13.0
[info] loading project definition from /l/01/project
[info] Passed: Total 3, Failed 0, Errors 0, Passed 3
[success] Total time: 9 s, completed Dec 7, 2026
[info] Passed: Total 8, Failed 0, Errors 0, Passed 8
[success] Total time: 12 s, completed Dec 7, 2026
[info] Main Scala API documentation to ...
[success] Total time: 3 s, completed Dec 7, 2026
[info] Passed: Total 5, Failed 0, Errors 0, Passed 5
[success] Total time: 7 s, completed Dec 7, 2026
"""


def test_each_command_s_output_goes_to_its_lab_with_sbt_s_loading_in_the_first():
    logs, done = server.split_by_command(OUTPUT, ["01", "01", "01", "02", "02"])
    assert done == 4
    assert logs["01"].startswith("[info] welcome to sbt") and "Passed 8" in logs["01"]
    assert logs["02"] == "[info] Passed: Total 5, Failed 0, Errors 0, Passed 5\n[success] Total time: 7 s, " \
                         "completed Dec 7, 2026\n"


def test_the_command_that_failed_gets_the_rest_and_is_counted():
    failed = OUTPUT.split("[info] Passed: Total 5")[0] + "[error] Failed: Total 5, Failed 1\n[error] (Test / test) sbt.TestsFailedException\n"
    logs, done = server.split_by_command(failed, ["01", "01", "01", "02", "02"])
    assert done == 3
    assert logs["02"].startswith("[error] Failed: Total 5") and "TestsFailedException" in logs["02"]
    assert "[error]" not in logs["01"]


def test_sbt_that_fails_while_loading_gives_it_all_to_the_first_lab():
    logs, done = server.split_by_command("[info] loading\n[error] not found: plugin\n", ["01", "02"])
    assert done == 0 and list(logs) == ["01"]


def test_a_build_of_copies_that_were_never_prepared_is_refused_at_once(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "lab"), "build", "--in", str(tmp_path), "01"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"no prepared copy of a lab at {tmp_path}/labs/01-non-blocking" in done.stderr
    assert "--solution --prepare DIR makes one" in done.stderr


def test_the_aggregate_names_each_lab_in_a_scala_string_whatever_its_path(tmp_path):
    odd = tmp_path / 'a "quoted" \\ lab'
    text = server.aggregate_build([tmp_path / "01-one", odd])
    assert f'RootProject(file("{tmp_path}/01-one"))' in text
    assert f'RootProject(file("{tmp_path}/a \\"quoted\\" \\\\ lab"))' in text
    assert text.count("RootProject") == 2 and "autoScalaLibrary := false" in text


def test_each_lab_s_build_gets_its_own_directory_as_zinc_s_base(tmp_path):
    command = server.own_bases([tmp_path / "01-one", tmp_path / 'a "quoted" lab'])
    assert command.startswith("set Seq(") and command.count("rootPaths ~=") == 2
    assert (f'BuildRef(file("{tmp_path}/01-one").toPath.toUri) / rootPaths ~= '
            f'(_ + ("BASE" -> file("{tmp_path}/01-one").toPath))') in command
    assert f'file("{tmp_path}/a \\"quoted\\" lab")' in command


def zinc_records(lab_dir):
    """The lab's zinc analyses on both lines (main and test), with their line, as bytes: its sources
    are named there as sbt's file converter wrote them."""
    for line in playline.LINES:
        for analysis in playline.target_dir(lab_dir, line).glob("scala-2.13/*zinc/inc_compile_2.13.zip"):
            with zipfile.ZipFile(analysis) as archive:
                yield line, analysis, archive.read("inc_compile.bin")


@pytest.mark.slow
def test_the_labs_part_left_each_lab_s_zinc_records_relative_to_the_lab():
    """Run by the labs part once it built every lab in one sbt per half and line: each lab's sources
    are recorded as ${BASE}/app/..., as the lab's own sbt records them, so that `cd labs/NN && sbt
    run` afterwards compiles nothing (the lifecycle part's dev-mode test, a reader's first `sbt run`).
    With the scratch build's directory as BASE, they were absolute paths and sbt compiled every lab
    again."""
    found = 0
    for _, lab_dir, lab in all_labs():
        if lab is None:
            continue
        for line, analysis, records in zinc_records(lab_dir):
            found += 1
            # Classpath entries are absolute either way: only the sources' names matter. On Play 3
            # the sources compiled are translations, in target/play-3/.../src_managed.
            for folder in ("app", "test", "target/play-3/scala-2.13/src_managed"):
                assert f"{lab_dir.resolve()}/{folder}/".encode() not in records, \
                    f"{analysis} names the lab's sources in {folder}/ by absolute path"
            own = (b"${BASE}/app/", b"${BASE}/test/") if line != "3" else (b"${BASE}/target/play-3/",)
            assert any(prefix in records for prefix in own), f"{analysis} names no source relative to the lab"
    if not found:
        pytest.skip("no lab is built here (the labs part builds them)")
