"""A lab is its folder: a copy under a new number is a new lab, with no edit outside it.

Each test works in a scratch checkout (the driver and one lab, copied to a temporary
directory), so the repository's own labs and book are never touched.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = sorted((REPO / "labs").glob("[0-9][0-9]-*/lab.toml"))[-1].parent
IGNORED = shutil.ignore_patterns("target", "project", "__pycache__", ".bsp", "results")


def scratch_checkout(tmp_path: Path) -> Path:
    """The driver (scripts/) and the highest-numbered lab, as a fresh checkout would have them."""
    shutil.copytree(REPO / "scripts", tmp_path / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SOURCE, tmp_path / "labs" / SOURCE.name, ignore=IGNORED)
    return tmp_path


def lab(checkout: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(checkout / "scripts" / "lab"), *args], cwd=checkout,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def copy_lab(checkout: Path, number: str, title: str) -> Path:
    """`cp -r labs/NN-x labs/MM-copy` and a new title in its lab.toml: the whole recipe's first step."""
    new = checkout / "labs" / f"{number}-copy"
    shutil.copytree(checkout / "labs" / SOURCE.name, new)
    toml = new / "lab.toml"
    lines = toml.read_text().splitlines()
    assert any(line.startswith("title = ") for line in lines), "lab.toml has no title line"
    toml.write_text("\n".join(f'title = "{title}"' if line.startswith("title = ") else line
                              for line in lines) + "\n")
    return new


def test_a_copied_lab_is_listed_and_runnable(tmp_path):
    checkout = scratch_checkout(tmp_path)
    copy_lab(checkout, "97", "A copied lab")
    listed = lab(checkout, "list")
    assert listed.returncode == 0, listed.stderr
    assert "97-copy" in listed.stdout and "A copied lab" in listed.stdout
    assert "no driver support" not in listed.stdout
    helped = lab(checkout, "run", "97", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "A copied lab" in helped.stdout and "scripts/lab run 97" in helped.stdout
    # The original is still there, unchanged.
    assert SOURCE.name in listed.stdout


def test_the_copy_loads_its_own_code(tmp_path):
    """The copy's driver is the copy's file, not the original's: an edit to it shows."""
    checkout = scratch_checkout(tmp_path)
    new = copy_lab(checkout, "97", "A copied lab")
    driver = new / "driver.py"
    driver.write_text(driver.read_text() + "\nraise RuntimeError('the copy of driver.py ran')\n")
    out = lab(checkout, "list")
    assert out.returncode != 0 and "the copy of driver.py ran" in out.stderr


@pytest.mark.parametrize("mistake, message", [
    (lambda d: (d / "driver.py").unlink(), "no driver.py"),
    (lambda d: (d / "lab.toml").write_text('title = "x"\n'), "missing 'summary'"),
    (lambda d: (d / "lab.toml").write_text((d / "lab.toml").read_text() + "colour = 'red'\n"),
     "unknown key 'colour'"),
    (lambda d: (d / "lab.toml").write_text("title = \n"), "lab.toml"),
])
def test_a_broken_lab_folder_is_named_with_what_is_wrong(tmp_path, mistake, message):
    checkout = scratch_checkout(tmp_path)
    new = copy_lab(checkout, "97", "A copied lab")
    mistake(new)
    out = lab(checkout, "list")
    assert out.returncode != 0
    assert message in out.stderr and "97-copy" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_folder_without_lab_toml_is_listed_as_not_a_lab_yet(tmp_path):
    checkout = scratch_checkout(tmp_path)
    (checkout / "labs" / "98-draft").mkdir()
    out = lab(checkout, "list")
    assert out.returncode == 0
    assert "98-draft" in out.stdout and "no lab.toml" in out.stdout
    run = lab(checkout, "run", "98")
    assert run.returncode == 2 and "no lab.toml" in run.stderr
