"""When the driver installs a missing tool and apt-get fails, the message says why
(issue #15, item 7): a held dpkg lock must not look like "tools missing" and nothing else."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from pul import tools
from pul.errors import MissingTool
from pul.progress import Progress

LOCK = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 1234 (apt-get)"
UNABLE = ("E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), "
          "is another process using it?")
NOT_INSTALLED = tools.Tool("pul-test-no-such-program", "pul-test-no-such-package", "for the test")


def fake_apt_get(folder: Path, script: str) -> Path:
    folder.mkdir()
    apt = folder / "apt-get"
    apt.write_text("#!/bin/sh\n" + script)
    apt.chmod(0o755)
    return folder


@pytest.fixture
def installing(monkeypatch, tmp_path):
    """ensure() as root with apt-get allowed; the apt-get it runs is the test's."""
    monkeypatch.setattr(tools, "_can_install", lambda: True)

    def use(script: str) -> Path:
        calls = tmp_path / "calls"
        folder = fake_apt_get(tmp_path / "bin", f'echo "$*" >> {calls}\n' + script)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        return calls

    return use


def test_a_held_dpkg_lock_is_in_the_message(installing):
    calls = installing(f'echo "Reading package lists..."\necho "{LOCK}" >&2\necho "{UNABLE}" >&2\nexit 100\n')
    with pytest.raises(MissingTool) as missing:
        tools.ensure((NOT_INSTALLED,), Progress(stream=io.StringIO()))
    message = str(missing.value)
    assert LOCK in message and UNABLE in message
    assert "exit 100" in message and "apt-get install -y -q pul-test-no-such-package" in message
    # What was there before is still said: which tool, and how to install it by hand.
    assert "pul-test-no-such-program" in message and "sudo apt-get install pul-test-no-such-package" in message
    # Install, then update and install again (a fresh machine may have no package lists).
    assert calls.read_text().splitlines() == ["install -y -q pul-test-no-such-package", "update -q",
                                              "install -y -q pul-test-no-such-package"]


def test_only_the_last_lines_of_a_long_apt_output_are_shown(installing):
    installing('i=0; while [ $i -lt 50 ]; do echo "W: noise $i" >&2; i=$((i+1)); done\n'
               f'echo "{LOCK}" >&2\nexit 100\n')
    with pytest.raises(MissingTool) as missing:
        tools.ensure((NOT_INSTALLED,), Progress(stream=io.StringIO()))
    message = str(missing.value)
    assert LOCK in message
    assert "W: noise 49" in message and "W: noise 10" not in message


def test_an_install_that_succeeds_but_leaves_the_tool_missing_says_nothing_of_apt_failing(installing):
    installing("exit 0\n")
    with pytest.raises(MissingTool) as missing:
        tools.ensure((NOT_INSTALLED,), Progress(stream=io.StringIO()))
    assert "failed (exit" not in str(missing.value)
    assert "sudo apt-get install pul-test-no-such-package" in str(missing.value)
