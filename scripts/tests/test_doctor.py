"""`scripts/doctor` against simulated machines: stub programs on PATH, a fake /proc and /dev."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCTOR = [sys.executable, str(REPO / "scripts" / "doctor")]


def stub(bin_dir: Path, name: str, output: str, to_stderr: bool = False, code: int = 0) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    redirect = " >&2" if to_stderr else ""
    # printf is a shell builtin: the stub works with nothing else on PATH.
    path.write_text(f"#!/bin/sh\nprintf '%s\\n' '{output}'{redirect}\nexit {code}\n")
    path.chmod(0o755)


def fake_root(tmp_path: Path, cpu_flags: str, available_kib: int, kvm: bool) -> Path:
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "cpuinfo").write_text(f"processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu {cpu_flags}\n")
    (root / "proc" / "meminfo").write_text(f"MemTotal: 16000000 kB\nMemAvailable: {available_kib} kB\n")
    (root / "dev").mkdir()
    if kvm:
        (root / "dev" / "kvm").write_text("")
    return root


def doctor(tmp_path: Path, *args: str, bin_dir: Path, root: Path, extra_env: dict | None = None):
    env = {
        # Only the stubs: every real tool of this machine is invisible.
        "PATH": str(bin_dir),
        "HOME": str(tmp_path / "home"),
        "PUL_DOCTOR_ROOT": str(root),
        "PUL_CACHE_DIR": str(tmp_path / "cache"),
        "COURSIER_CACHE": str(tmp_path / "coursier"),
        "VAGRANT_HOME": str(tmp_path / "vagrant.d"),
        "PUL_WORKSHOP_KIT": str(tmp_path / "kit.tar"),
        "PUL_VAGRANTFILE": str(tmp_path / "Vagrantfile"),
        **(extra_env or {}),
    }
    return subprocess.run([*DOCTOR, *args], capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL)


def line(out: str, what: str) -> str:
    """The finding about `what`, with its fix line if it has one."""
    lines = out.splitlines()
    for index, text in enumerate(lines):
        if text.strip().split(" ", 1)[-1].strip().startswith(what + ":"):
            follow = lines[index + 1] if index + 1 < len(lines) and "fix:" in lines[index + 1] else ""
            return text + "\n" + follow
    raise AssertionError(f"no finding about {what!r} in:\n{out}")


def test_an_unprepared_host_gets_every_problem_with_its_fix(tmp_path):
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "vagrant", "Vagrant 2.3.4")
    root = fake_root(tmp_path, cpu_flags="sse2", available_kib=2_000_000, kvm=False)
    out = doctor(tmp_path, "host", "--offline", bin_dir=bin_dir, root=root)
    assert out.returncode == 1, out.stdout
    assert "FAIL" in line(out.stdout, "Vagrant") and "older than 2.4" in line(out.stdout, "Vagrant")
    assert "fix: install Vagrant 2.4" in line(out.stdout, "Vagrant")
    assert "FAIL" in line(out.stdout, "VM provider") and "virtualbox" in line(out.stdout, "VM provider")
    virt = line(out.stdout, "CPU virtualisation")
    assert "FAIL" in virt and "neither vmx nor svm" in virt and "fix:" in virt
    memory = line(out.stdout, "free memory")
    assert "FAIL" in memory and "1,953 MiB available" in memory and "fix:" in memory
    kit = line(out.stdout, "offline kit")
    assert "FAIL" in kit and str(tmp_path / "kit.tar") in kit
    assert "problem(s)" in out.stdout


def test_a_prepared_host_passes(tmp_path):
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "vagrant", "Vagrant 2.4.1")
    stub(bin_dir, "VBoxManage", "7.0.20r163906")
    root = fake_root(tmp_path, cpu_flags="vmx sse2", available_kib=12_000_000, kvm=True)
    (tmp_path / "kit.tar").write_text("kit")
    out = doctor(tmp_path, "host", bin_dir=bin_dir, root=root)
    assert out.returncode == 0, out.stdout
    assert "ok    Vagrant: version 2.4.1" in out.stdout
    assert "ok    VM provider: virtualbox" in out.stdout
    assert "ok    CPU virtualisation: vmx" in out.stdout
    assert "Ready: no problems" in out.stdout


def test_a_provider_without_its_vagrant_plugin_is_a_problem(tmp_path):
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "vagrant", "Vagrant 2.4.1")
    stub(bin_dir, "virsh", "9.0.0")
    (tmp_path / "Vagrantfile").write_text('config.vm.provider :libvirt do |lv|\n  lv.memory = 3072\nend\n')
    root = fake_root(tmp_path, cpu_flags="svm", available_kib=12_000_000, kvm=True)
    out = doctor(tmp_path, "host", bin_dir=bin_dir, root=root)
    provider = line(out.stdout, "VM provider")
    assert out.returncode == 1 and "FAIL" in provider and "vagrant plugin install vagrant-libvirt" in provider
    # The VM's memory comes from the Vagrantfile: 3072 + 1024 headroom.
    assert "4,096 MiB needed" in line(out.stdout, "free memory")


def test_a_forwarded_port_in_use_is_named(tmp_path):
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "vagrant", "Vagrant 2.4.1")
    stub(bin_dir, "VBoxManage", "7.0.20")
    root = fake_root(tmp_path, cpu_flags="vmx", available_kib=12_000_000, kvm=True)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        (tmp_path / "Vagrantfile").write_text(
            f'config.vm.network "forwarded_port", guest: 3000, host: {port}, host_ip: "127.0.0.1"\n')
        out = doctor(tmp_path, "host", bin_dir=bin_dir, root=root)
    assert out.returncode == 1
    finding = line(out.stdout, f"port {port}")
    assert "FAIL" in finding and "in use" in finding and "fix:" in finding


def test_a_lab_machine_without_tools_gets_install_commands(tmp_path):
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "java", 'openjdk version "11.0.22" 2024-01-16', to_stderr=True)
    stub(bin_dir, "apt-get", "")  # a Debian machine: fixes are apt-get commands
    root = fake_root(tmp_path, cpu_flags="vmx", available_kib=8_000_000, kvm=True)
    out = doctor(tmp_path, "labs", bin_dir=bin_dir, root=root)
    assert out.returncode == 1
    jdk = line(out.stdout, "JDK")
    assert "FAIL" in jdk and "Java 17" in jdk and "sudo apt-get install openjdk-17-jdk-headless" in jdk
    assert "sudo apt-get install apache2-utils" in line(out.stdout, "ab")
    assert "sudo apt-get install wrk" in line(out.stdout, "wrk")
    assert "sudo apt-get install postgresql" in line(out.stdout, "postgres")
    assert "sudo apt-get install gnuplot-nox" in line(out.stdout, "gnuplot")
    assert "warn" in line(out.stdout, "sbt launcher") and "fix:" in line(out.stdout, "sbt launcher")


def test_a_ready_lab_machine_passes(tmp_path):
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "java", 'openjdk version "17.0.15" 2025-04-15', to_stderr=True)
    for name in ("javac", "taskset", "curl", "git", "ab", "wrk", "gnuplot"):
        stub(bin_dir, name, f"{name} 1.0")
    stub(bin_dir, "mdbook", "mdbook v0.5.4")
    root = fake_root(tmp_path, cpu_flags="vmx", available_kib=8_000_000, kvm=True)
    pg_bin = root / "usr" / "lib" / "postgresql" / "15" / "bin"
    pg_bin.mkdir(parents=True)
    for name in ("postgres", "initdb"):
        (pg_bin / name).write_text("")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "sbt-launch-1.13.0.jar").write_text("jar")
    maven = tmp_path / "coursier" / "https" / "repo1.maven.org" / "maven2"
    (maven / "com" / "typesafe" / "play" / "play_2.13" / "2.9.11").mkdir(parents=True)
    (maven / "org" / "playframework" / "play_2.13" / "3.0.9").mkdir(parents=True)
    out = doctor(tmp_path, "labs", bin_dir=bin_dir, root=root)
    assert "ok    postgres: " + str(pg_bin / "postgres") in out.stdout
    if (os.cpu_count() or 1) >= 2:
        assert out.returncode == 0, out.stdout
        assert "Ready: no problems" in out.stdout


def test_cpu_limits_are_reported_with_what_the_jvm_counts_or_why_not(tmp_path):
    root = fake_root(tmp_path, cpu_flags="vmx", available_kib=8_000_000, kvm=True)
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "self" / "mountinfo").write_text("31 23 0:28 / /sys rw - sysfs sysfs rw\n")
    (root / "proc" / "self" / "cgroup").write_text("0::/\n")
    out = doctor(tmp_path, "labs", bin_dir=tmp_path / "bin", root=root)
    assert "info  CPU limits (--cpu-limit): not here: no cgroup cpu controller is mounted" in out.stdout, out.stdout


def test_this_machine_reports_truthfully():
    # No stubs: whatever this machine has. Exit code and the FAIL lines must agree.
    out = subprocess.run([*DOCTOR, "all"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode in (0, 1), out.stderr
    fails = [text for text in out.stdout.splitlines() if text.strip().startswith("FAIL")]
    assert (out.returncode == 1) == bool(fails)
    java = subprocess.run(["java", "-version"], capture_output=True, text=True) if os.path.exists("/usr/bin/java") else None
    if java is not None and java.returncode == 0:
        assert "ok    JDK:" in out.stdout


def test_bad_arguments_are_usage_errors():
    out = subprocess.run([*DOCTOR, "laptop"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_ports_and_memory_from_the_vagrantfile_environment_settings(tmp_path):
    # The project's Vagrantfile form: ports and memory from ENV.fetch with defaults; auto_correct
    # lets Vagrant move a busy port, so a busy one is a warning that says how to find the new one.
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "vagrant", "Vagrant 2.4.1")
    stub(bin_dir, "VBoxManage", "7.0.20")
    root = fake_root(tmp_path, cpu_flags="vmx", available_kib=12_000_000, kvm=True)
    (tmp_path / "kit.tar").write_text("kit")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        (tmp_path / "Vagrantfile").write_text(
            'MEMORY_MB = Integer(ENV.fetch("PUL_MEMORY", "4096"))\n'
            'FORWARDED_PORTS = {\n  3000 => Integer(ENV.fetch("PUL_HOST_PORT_BOOK", "3000")),\n}.freeze\n'
            'lab.vm.network "forwarded_port", guest: guest, host: host, auto_correct: true\n'
            '  vb.memory = MEMORY_MB\n')
        out = doctor(tmp_path, "host", bin_dir=bin_dir, root=root,
                     extra_env={"PUL_HOST_PORT_BOOK": str(port), "PUL_MEMORY": "6144"})
    finding = line(out.stdout, f"port {port}")
    assert "warn" in finding and "vagrant port" in finding
    assert "7,168 MiB needed" in line(out.stdout, "free memory")
    assert out.returncode == 0, out.stdout
