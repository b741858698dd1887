"""The one table of tools (scripts/tools.json) and its readers agree: the driver (pul.tools),
scripts/doctor, scripts/test, the provisioning roles and the Vagrantfile."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pul import tools

REPO = Path(__file__).resolve().parents[2]
TEST_SCRIPT = REPO / "scripts" / "test"
LAB_DIRS = sorted(p for p in (REPO / "labs").glob("[0-9][0-9]-*") if (p / "lab.toml").exists())
TEST_KEYS = {"description": str, "tools": list, "show_margins": bool}


def packages_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pul.tools", "packages", *args], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO / "scripts"), **(env or {})},
                          capture_output=True, text=True)


# -- the table itself --------------------------------------------------------------

def test_every_group_is_used_and_every_row_has_one():
    used = {group for row in tools.TABLE for group in row.groups}
    assert set(tools.GROUPS) - used == set(), "groups no row is in"
    lab_tools = {c for lab in LAB_DIRS for c in lab_toml(lab).get("tools", [])}
    for row in tools.TABLE:
        # A row nobody installs or checks is dead, unless a lab.toml names it.
        assert row.groups or row.command in lab_tools, row


def test_the_driver_keeps_its_names():
    assert (tools.AB.command, tools.WRK.command, tools.GNUPLOT.command, tools.TASKSET.command) == \
        ("ab", "wrk", "gnuplot", "taskset")
    assert (tools.JAVA.command, tools.CURL.command, tools.INITDB.command, tools.POSTGRES.command) == \
        ("java", "curl", "initdb", "postgres")
    assert tools.BASE_TOOLS == (tools.JAVA, tools.CURL, tools.AB, tools.TASKSET)
    assert tools.named(["ab", "gnuplot"]) == (tools.AB, tools.GNUPLOT)
    assert tools.POSTGRES.search_globs == ("/usr/lib/postgresql/*/bin/postgres",)


def test_a_broken_row_is_refused(tmp_path):
    table = json.loads(tools.TABLE_FILE.read_text())
    table["tools"].append({"command": "ab", "package": "x", "why": "twice", "groups": []})
    (tmp_path / "twice.json").write_text(json.dumps(table))
    with pytest.raises(tools.LabError, match="more than one row for ab"):
        tools.load_table(tmp_path / "twice.json")
    table["tools"][-1] = {"command": "y", "package": "y", "why": "", "groups": ["nowhere"]}
    (tmp_path / "group.json").write_text(json.dumps(table))
    with pytest.raises(tools.LabError, match="unknown group"):
        tools.load_table(tmp_path / "group.json")


def test_packages_command_prints_a_group_or_the_packages_of_commands(tmp_path):
    assert packages_cli("test:book").stdout.split() == ["gnuplot-nox"]
    assert packages_cli("initdb", "postgres", "ab").stdout.split() == ["postgresql", "apache2-utils"]
    unknown = packages_cli("no-such-thing")
    assert unknown.returncode == 2 and "neither a group nor a command" in unknown.stderr
    # --missing: only what is not found here (an `ab` on PATH, no wrk).
    (tmp_path / "ab").write_text("#!/bin/sh\n")
    (tmp_path / "ab").chmod(0o755)
    missing = packages_cli("--missing", "ab", "wrk", env={"PATH": str(tmp_path)})
    assert missing.returncode == 0 and missing.stdout.split() == ["wrk"]


# -- the labs ----------------------------------------------------------------------

def lab_toml(lab: Path) -> dict:
    return tomllib.loads((lab / "lab.toml").read_text())


@pytest.mark.parametrize("lab", LAB_DIRS, ids=lambda p: p.name)
def test_every_tool_a_lab_names_is_in_the_table(lab):
    meta = lab_toml(lab)
    named = [*meta.get("tools", []), *meta.get("test", {}).get("tools", [])]
    assert tools.named(named), f"{lab}/lab.toml names no tool"


@pytest.mark.parametrize("lab", LAB_DIRS, ids=lambda p: p.name)
def test_a_labs_test_table_has_only_known_keys(lab):
    test = lab_toml(lab).get("test", {})
    for key, value in test.items():
        assert key in TEST_KEYS, f"{lab}/lab.toml [test]: unknown key {key!r}"
        assert isinstance(value, TEST_KEYS[key]), f"{lab}/lab.toml [test] {key} must be a {TEST_KEYS[key]}"
    if (lab / "tests").is_dir():
        assert test.get("description"), f"{lab}/lab.toml: [test] description says what scripts/test checks"


# -- scripts/test --------------------------------------------------------------------

def test_scripts_test_lists_one_part_per_lab_with_tests_in_order():
    listed = subprocess.run([str(TEST_SCRIPT), "--list"], capture_output=True, text=True, check=True).stdout
    parts = [line.split(" ", 1)[0] for line in listed.splitlines()]
    labs = [f"lab{lab.name[:2]}" for lab in LAB_DIRS if (lab / "tests").is_dir()]
    assert parts[:5] == ["scripts", "book", "browser", "labs", "lifecycle"]
    assert parts[5:5 + len(labs)] == labs
    assert parts[5 + len(labs):] == ["two-machines", "workshop", "provisioning", "provisioning-chroot",
                                     "provisioning-vm", "other-params"]
    for lab in LAB_DIRS:
        if (lab / "tests").is_dir():
            assert f"lab{lab.name[:2]}".ljust(19) + " " + lab_toml(lab)["test"]["description"] in listed


def test_scripts_test_names_no_package_and_only_groups_of_the_table():
    text = TEST_SCRIPT.read_text()
    calls = re.findall(r"^\s*(?:apt_install|apt_install_bare)\s+(.*)$", text, re.M)
    for args in calls:
        assert all(arg.startswith('"$') for arg in args.split()), f"a package named in scripts/test: {args}"
    groups = set(re.findall(r"install_tools apt_install(?:_bare)? (test:[\w-]+)", text))
    own = {g for g in tools.GROUPS if g.startswith("test:")} - set(OTHER_INSTALLERS)
    assert own <= groups <= own | set(OTHER_INSTALLERS)


def test_a_background_parts_packages_come_from_its_own_installer():
    """The browser part goes to the background, so scripts/test installs its packages first (no
    two parts run apt-get at once), by asking browser-test, which alone chooses them."""
    body = re.search(r"^packages_browser\(\) \{\n(.*?)^\}", TEST_SCRIPT.read_text(), re.M | re.S).group(1)
    assert '"$repo/scripts/browser-test" --packages' in body
    assert "test:browser" not in body


# Groups installed by a script of their own rather than by scripts/test.
OTHER_INSTALLERS = {"test:browser": "scripts/browser-test", "test:browser-node": "scripts/browser-test",
                    "book:pdf": "scripts/book"}


@pytest.mark.parametrize("group, script", OTHER_INSTALLERS.items())
def test_the_other_installers_name_no_package_and_read_their_group(group, script):
    text = (REPO / script).read_text()
    assert f"packages {group})" in text
    for row in tools.TABLE:
        if group in row.groups:
            assert not re.search(rf"(apt-get install|need_packages)[^\n]*\b{re.escape(row.debian_package)}\b", text), \
                f"{script} names the package {row.debian_package}"


# -- scripts/doctor and the driver ---------------------------------------------------

@pytest.mark.parametrize("path", ["scripts/pul/doctor.py", "scripts/pul/tools.py"])
def test_no_package_is_named_in_python(path):
    text = (REPO / path).read_text()
    for row in tools.TABLE:
        # (doctor names the Vagrant plugin vagrant-libvirt, not its Debian package: rows with a command.)
        if row.command and row.debian_package != row.command:
            assert f'"{row.debian_package}"' not in text, f"{path} names {row.debian_package}"


# -- provisioning ----------------------------------------------------------------------

def test_the_roles_package_lists_are_generated_from_the_table():
    check = subprocess.run([sys.executable, str(REPO / "provisioning" / "update-packages"), "--check"],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_the_roles_lists_hold_the_roles_groups():
    # A second, independent reading of the generated YAML (plain lists, no YAML library needed).
    for role, variable in (("base", "base_packages"), ("load_tools", "load_tools_packages")):
        text = (REPO / "provisioning" / "roles" / role / "defaults" / "main.yml").read_text()
        listed = re.search(rf"^{variable}:\n((?:  - .*\n)+)", text, re.M).group(1)
        assert sorted(re.findall(r"  - (\S+)", listed)) == \
            sorted(tools.package_names(tools.in_group(f"role:{role}")))
    jdk = (REPO / "provisioning" / "roles" / "jdk" / "defaults" / "main.yml").read_text()
    assert f"jdk_package: {tools.JAVA.debian_package}\n" in jdk


def test_the_vagrantfile_names_no_package():
    text = (REPO / "Vagrantfile").read_text()
    assert "scripts/tools.json" in text
    for line in text.splitlines():
        if "apt-get install" in line:
            for row in tools.TABLE:
                assert not re.search(rf"(?<![\w.-]){re.escape(row.debian_package)}(?![\w.-])", line), line


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby reads the Vagrantfile (scripts/test provisioning has it)")
def test_the_load_vm_installs_the_tables_load_group():
    recorder = REPO / "provisioning" / "tests" / "vagrantfile_calls.rb"
    out = subprocess.run(["ruby", str(recorder), str(REPO / "Vagrantfile")], cwd=REPO, capture_output=True,
                         text=True, check=True, env={**os.environ, "PUL_LOAD_VM": "1"}).stdout
    calls = [json.loads(line) for line in out.splitlines()]
    [inline] = [c["kwargs"]["inline"] for c in calls
                if c["path"].endswith(".vm.provision") and c["args"] == ["load-tools"]]
    installed = inline.split("apt-get install -y -q ", 1)[1].split()
    assert installed == tools.package_names(tools.in_group("vm:load"))
