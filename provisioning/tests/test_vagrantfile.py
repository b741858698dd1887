"""The Vagrantfile, read the way Vagrant reads it (Ruby evaluates it against a
recording stand-in for Vagrant's config objects), without a box or hypervisor."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RECORDER = Path(__file__).with_name("vagrantfile_calls.rb")

pytestmark = pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby is needed (it comes with vagrant)")


def calls(**env: str) -> list[dict]:
    result = subprocess.run(["ruby", str(RECORDER), str(REPO / "Vagrantfile")], cwd=REPO,
                            env={**os.environ, **env}, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in result.stdout.splitlines()]


def forwarded_ports(recorded: list[dict]) -> list[dict]:
    return [c["kwargs"] for c in recorded
            if c["path"].endswith(".vm.network") and c["args"] and c["args"][0] == "forwarded_port"]


@pytest.mark.parametrize("env", [{}, {"PUL_LOAD_VM": "1"}, {"PUL_HOST_PORT_BOOK": "3300"}])
def test_every_forwarded_port_is_bound_to_loopback(env):
    ports = forwarded_ports(calls(**env))
    assert ports, "the Vagrantfile forwards no port at all (the book and the labs need some)"
    for port in ports:
        assert port.get("host_ip") == "127.0.0.1", f"forwarded port not bound to loopback only: {port}"


def test_port_override_changes_only_the_host_side():
    ports = forwarded_ports(calls(PUL_HOST_PORT_BOOK="3300"))
    assert {"guest": 3000, "host": 3300, "host_ip": "127.0.0.1", "auto_correct": True} in ports


def test_no_forwarded_port_line_lacks_a_loopback_host_ip():
    # A second, textual guard: a forwarded port added in a branch the recorder does not take.
    text = (REPO / "Vagrantfile").read_text()
    for line in text.splitlines():
        if "forwarded_port" in line and not line.lstrip().startswith("#"):
            assert 'host_ip: "127.0.0.1"' in line, line


def _assigned(recorded: list[dict], suffix: str) -> list:
    return [c["args"][0] for c in recorded if c["path"].endswith(suffix)]


def test_the_playbook_the_vagrantfile_names_exists():
    recorded = calls()
    [guest_dir] = _assigned(recorded, ".provisioning_path=")
    [playbook] = _assigned(recorded, ".playbook=")
    [config_file] = _assigned(recorded, ".config_file=")
    synced = [c for c in recorded if c["path"].endswith(".vm.synced_folder") and c["args"][0] == "."
              and not c["kwargs"].get("disabled")]
    guest_repo = synced[0]["args"][1]
    assert guest_dir.startswith(guest_repo + "/"), (guest_dir, guest_repo)
    host_dir = REPO / guest_dir[len(guest_repo) + 1:]
    assert (host_dir / playbook).is_file(), f"{host_dir / playbook} does not exist"
    assert (REPO / config_file[len(guest_repo) + 1:]).is_file()
    shell_scripts = [c["kwargs"]["path"] for c in recorded
                     if c["path"].endswith(".vm.provision") and c["kwargs"].get("type") == "shell"
                     and "path" in c["kwargs"]]
    for script in shell_scripts:
        assert os.access(REPO / script, os.X_OK), script


def test_the_vm_has_at_least_two_cpus_and_4_gib_by_default_and_env_overrides():
    recorded = calls()
    assert all(n >= 2 for n in _assigned(recorded, "(virtualbox)[0].cpus="))
    assert all(m >= 4096 for m in _assigned(recorded, "(libvirt)[0].memory="))
    assert _assigned(calls(PUL_CPUS="4"), "(parallels)[0].cpus=") == [4]
    vmware = _assigned(calls(PUL_MEMORY="6144"), '(vmware_desktop)[0].vmx["memsize"]=')
    assert vmware == ["6144"]


def test_box_architecture_follows_the_host_and_is_skipped_on_old_vagrant():
    arch = _assigned(calls(), ".vm.box_architecture=")
    assert arch in (["amd64"], ["arm64"])
    assert _assigned(calls(FAKE_VAGRANT_VERSION="2.3.4"), ".vm.box_architecture=") == []


def _load_as_old_vagrant(command: str) -> subprocess.CompletedProcess:
    stand_in = ("module Vagrant; VERSION = '2.3.4'; def self.configure(_v); end; end\n"
                f"ARGV.replace([{command!r}]); load {str(REPO / 'Vagrantfile')!r}\n")
    return subprocess.run(["ruby", "-e", stand_in], cwd=REPO, capture_output=True, text=True)


def test_old_vagrant_is_refused_for_up_with_a_clear_message():
    refused = _load_as_old_vagrant("up")
    assert refused.returncode != 0
    assert re.search(r"Vagrant 2\.3\.4 is too old .* needs 2\.4\.0", refused.stderr.replace("\n", " "))


def test_old_vagrant_may_still_validate():
    allowed = _load_as_old_vagrant("validate")
    assert allowed.returncode == 0, allowed.stderr
