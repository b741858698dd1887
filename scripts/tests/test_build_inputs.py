"""A lab's staged build is stale when anything its build reads changed: its own files, and the
instruments module and the shared build code beside it (labs/instruments, labs/sbt), which every
lab compiles into its own build. Otherwise a change to an instrument would leave each lab
serving the old one, `build: ... is up to date`."""

from __future__ import annotations

import os

import pytest

from pul import server


def a_lab(root):
    for relative in ("labs/01-demo/app/A.java", "labs/01-demo/build.sbt", "labs/01-demo/project/plugins.sbt",
                     "labs/01-demo/project/Extra.scala", "labs/01-demo/project/target/x.class",
                     "labs/01-demo/project/project/build.sbt", "labs/instruments/app/instruments/PoolTimeline.java",
                     "labs/instruments/conf/instruments.routes", "labs/sbt/build/PlayLine.scala",
                     "labs/sbt/plugin/PlayPlugin.scala", "labs/sbt/pekko-renames.txt", "labs/01-demo/results/x.json"):
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(relative)
        os.utime(path, (1_000, 1_000))
    return root / "labs" / "01-demo"


@pytest.mark.parametrize("relative", ["labs/01-demo/app/A.java", "labs/01-demo/project/project/build.sbt",
                                      "labs/01-demo/project/plugins.sbt", "labs/01-demo/project/Extra.scala",
                                      "labs/instruments/app/instruments/PoolTimeline.java",
                                      "labs/instruments/conf/instruments.routes", "labs/sbt/build/PlayLine.scala",
                                      "labs/sbt/plugin/PlayPlugin.scala", "labs/sbt/pekko-renames.txt"])
def test_a_change_to_what_the_build_reads_is_newer_than_the_build(tmp_path, relative):
    lab_dir = a_lab(tmp_path)
    assert server._newest_input(lab_dir) == 1_000
    os.utime(tmp_path / relative, (2_000, 2_000))
    assert server._newest_input(lab_dir) == 2_000


@pytest.mark.parametrize("relative", ["results/x.json", "project/target/x.class"])
def test_a_run_s_results_and_the_build_s_output_are_not_inputs(tmp_path, relative):
    lab_dir = a_lab(tmp_path)
    os.utime(lab_dir / relative, (2_000, 2_000))
    assert server._newest_input(lab_dir) == 1_000
