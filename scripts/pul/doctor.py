"""`scripts/doctor`: is this machine ready for the workshop? Every problem comes with its fix.

Two kinds of machine, two sets of checks:
  host  the laptop that runs the workshop VM: Vagrant, a provider, CPU virtualisation,
        free memory and disk, the ports the VM forwards, the offline kit;
  labs  the machine the labs run on (inside the VM, or a Linux machine without one):
        JDK, the sbt and Coursier caches, ab, wrk, PostgreSQL, gnuplot, mdBook, cores.

Written for Python 3.9+ and the standard library only, so it runs before anything else
is installed. Which programs it looks for, and the package each comes from, is the
"doctor" group of scripts/tools.json (read through pul.tools). For the tests, a few environment variables stand in for the machine:
PUL_DOCTOR_ROOT (a directory holding fake /proc, /dev, /usr/lib files), PUL_CACHE_DIR,
COURSIER_CACHE, PUL_WORKSHOP_KIT and PUL_VAGRANTFILE.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import cpulimit, playline, profile, runtimes, tools

REPO = Path(__file__).resolve().parents[2]

OK, WARN, FAIL, INFO = "ok", "warn", "FAIL", "info"

VAGRANT_MIN = (2, 4)
JDK_MIN = 17
PYTHON_MIN = (3, 9)
# The VM's memory when no Vagrantfile says otherwise, and what the host needs on top.
DEFAULT_VM_MIB = 4096
HOST_HEADROOM_MIB = 1024
HOST_DISK_GIB = 10      # the box, the VM's disk as it fills with caches, snapshots
LABS_DISK_GIB = 3       # dependency caches (~300 MB), builds, results
LABS_MEMORY_MIB = 3072  # sbt (~1 GiB) + the server's 1 GiB heap + ab, PostgreSQL


@dataclass
class Finding:
    status: str
    what: str
    detail: str = ""
    fix: str = ""


# -- the machine, with the overrides the tests use -------------------------------

def root() -> Path:
    return Path(os.environ.get("PUL_DOCTOR_ROOT", "/"))


def system_file(path: str) -> Path:
    return root() / path.lstrip("/")


def read(path: str) -> str:
    try:
        return system_file(path).read_text()
    except OSError:
        return ""


def cache_dir() -> Path:
    return runtimes.cache_dir()


def coursier_dir() -> Path:
    return Path(os.environ.get("COURSIER_CACHE") or
                Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "coursier")


def output(command: list[str], timeout: float = 20) -> str | None:
    """stdout+stderr of a command, or None when it cannot run at all."""
    if not shutil.which(command[0]):
        return None
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout + result.stderr


def version_tuple(text: str | None, pattern: str) -> tuple[int, ...] | None:
    match = re.search(pattern, text or "")
    return tuple(int(x) for x in match.group(1).split(".")) if match else None


def system() -> str:
    return platform.system()  # Linux, Darwin, Windows


def debian() -> bool:
    return shutil.which("apt-get") is not None


def install_hint(debian_package: str, brew: str | None = None, other: str = "") -> str:
    if system() == "Darwin":
        return f"brew install {brew or debian_package}" if brew else other
    if debian():
        return f"sudo apt-get install {debian_package}"
    return other or f"install {debian_package} with your package manager"


def free_memory_mib() -> int | None:
    match = re.search(r"^MemAvailable:\s*(\d+) kB", read("/proc/meminfo"), re.M)
    if match:
        return int(match.group(1)) // 1024
    if system() == "Darwin":
        total = output(["sysctl", "-n", "hw.memsize"])
        stats = output(["vm_stat"])
        if stats:
            page = int((re.search(r"page size of (\d+)", stats) or [0, 4096])[1])
            pages = sum(int(n) for n in re.findall(r"Pages (?:free|inactive|speculative):\s+(\d+)", stats))
            return pages * page // 2**20
        if total and total.strip().isdigit():
            return int(total) // 2**20
    return None


def vagrantfile() -> Path | None:
    override = os.environ.get("PUL_VAGRANTFILE")
    if override:
        return Path(override) if Path(override).exists() else None
    for candidate in (REPO / "Vagrantfile", REPO / "provisioning" / "Vagrantfile"):
        if candidate.exists():
            return candidate
    return None


# -- host checks -----------------------------------------------------------------

def check_vagrant() -> Finding:
    text = output(["vagrant", "--version"])
    fix = ("install Vagrant 2.4 or newer from https://developer.hashicorp.com/vagrant/install "
           "(Debian 12's own package is 2.3, too old)")
    if text is None:
        return Finding(FAIL, "Vagrant", "not found on PATH", fix)
    version = version_tuple(text, r"Vagrant (\d+\.\d+(?:\.\d+)?)")
    if version is None:
        return Finding(FAIL, "Vagrant", f"`vagrant --version` said {text.strip()[:80]!r}", fix)
    shown = ".".join(map(str, version))
    if version[:2] < VAGRANT_MIN:
        return Finding(FAIL, "Vagrant", f"version {shown} is older than 2.4", fix)
    return Finding(OK, "Vagrant", f"version {shown}")


PROVIDERS = {
    # name: (command that proves it is installed, Vagrant plugin it needs or None, how to get it)
    "virtualbox": (["VBoxManage", "--version"], None, "VirtualBox 7: https://www.virtualbox.org/wiki/Downloads"),
    "libvirt": (["virsh", "--version"], "vagrant-libvirt",
                "sudo apt-get install libvirt-daemon-system && vagrant plugin install vagrant-libvirt"),
    "vmware_desktop": (["vmrun"], "vagrant-vmware-desktop",
                       "VMware Workstation/Fusion, the Vagrant VMware Utility, then "
                       "`vagrant plugin install vagrant-vmware-desktop`"),
    "parallels": (["prlctl", "--version"], "vagrant-parallels",
                  "Parallels Desktop Pro, then `vagrant plugin install vagrant-parallels`"),
}


def providers_in_vagrantfile() -> list[str]:
    path = vagrantfile()
    if path is None:
        return []
    found = re.findall(r"\.provider\s*[\(\s]\s*[\"':]+(\w+)", path.read_text())
    return [name for name in dict.fromkeys(found) if name in PROVIDERS]


def check_provider() -> Finding:
    supported = providers_in_vagrantfile() or list(PROVIDERS)
    plugins = output(["vagrant", "plugin", "list"], timeout=60) or ""
    usable, half = [], []
    for name in supported:
        command, plugin, _ = PROVIDERS[name]
        if output(command) is None:
            continue
        if plugin and plugin not in plugins:
            half.append(f"{name} (but the Vagrant plugin {plugin} is missing: vagrant plugin install {plugin})")
        else:
            usable.append(name)
    if usable:
        return Finding(OK, "VM provider", ", ".join(usable))
    fixes = "; or ".join(PROVIDERS[name][2] for name in supported)
    detail = "none of " + ", ".join(supported) + " is installed"
    if half:
        detail = "found " + "; ".join(half)
        fixes = "install the plugin named above"
    return Finding(FAIL, "VM provider", detail, fixes)


def check_virtualisation() -> list[Finding]:
    if system() == "Darwin":
        supported = (output(["sysctl", "-n", "kern.hv_support"]) or "").strip() == "1"
        return [Finding(OK if supported else FAIL, "CPU virtualisation",
                        "Hypervisor.framework available" if supported else "kern.hv_support is not 1",
                        "" if supported else "this Mac cannot run VMs: use a machine that can, or do the "
                                             "labs natively (`scripts/doctor labs`)")]
    if system() != "Linux":
        return [Finding(WARN, "CPU virtualisation", f"cannot check on {system()}",
                        "Windows: Task Manager > Performance > CPU must say 'Virtualization: Enabled'; "
                        "if not, enable Intel VT-x / AMD-V in the firmware (BIOS/UEFI) settings")]
    cpuinfo = read("/proc/cpuinfo")
    flags = set(" ".join(re.findall(r"^flags\s*:\s*(.*)$", cpuinfo, re.M)).split())
    findings = []
    if flags & {"vmx", "svm"}:
        findings.append(Finding(OK, "CPU virtualisation", "vmx (Intel VT-x)" if "vmx" in flags else "svm (AMD-V)"))
    else:
        findings.append(Finding(FAIL, "CPU virtualisation", "the CPU flags have neither vmx nor svm",
                                "enable Intel VT-x / AMD-V in the firmware (BIOS/UEFI) settings; inside a VM, "
                                "enable nested virtualisation for it, or do the labs natively "
                                "(`scripts/doctor labs`)"))
    kvm = system_file("/dev/kvm")
    if not kvm.exists():
        findings.append(Finding(WARN, "/dev/kvm", "missing (needed by libvirt, not by VirtualBox)",
                                "sudo modprobe kvm_intel (or kvm_amd); if that fails, virtualisation is off "
                                "in the firmware"))
    elif not os.access(kvm, os.R_OK | os.W_OK):
        findings.append(Finding(WARN, "/dev/kvm", "present, but this user may not open it (libvirt needs it)",
                                "sudo usermod -aG kvm,libvirt $USER, then log out and in again"))
    else:
        findings.append(Finding(OK, "/dev/kvm", "present and usable"))
    return findings


def _ruby_setting(text: str, pattern: str) -> int | None:
    """A number from the Vagrantfile: a literal, or ENV.fetch("NAME", "default") honouring NAME."""
    match = re.search(pattern + r"\s*(?:=\s*)?(\d+)", text)
    if match:
        return int(match.group(1))
    match = re.search(pattern + r'\s*=\s*Integer\(ENV\.fetch\("(\w+)",\s*"(\d+)"\)\)', text)
    if match:
        return int(os.environ.get(match.group(1)) or match.group(2))
    return None


def vm_memory_mib() -> int:
    path = vagrantfile()
    if path:
        text = path.read_text()
        value = _ruby_setting(text, r"\.memory\s*=") or _ruby_setting(text, r"MEMORY_MB")
        if value:
            return value
    return DEFAULT_VM_MIB


def check_memory(needed_mib: int, what: str) -> Finding:
    free = free_memory_mib()
    if free is None:
        return Finding(WARN, "free memory", "could not be read on this system", f"make sure {needed_mib} MiB are free")
    detail = f"{free:,} MiB available; {needed_mib:,} MiB needed for {what}"
    if free < needed_mib:
        return Finding(FAIL, "free memory", detail,
                       "close programs (browsers, IDEs, other VMs) or use a machine with more memory")
    return Finding(OK, "free memory", detail)


def check_disk(path: Path, needed_gib: int, what: str) -> Finding:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free_gib = shutil.disk_usage(probe).free / 2**30
    detail = f"{free_gib:,.1f} GiB free in {probe}; {needed_gib} GiB needed for {what}"
    if free_gib < needed_gib:
        return Finding(FAIL, "free disk", detail, f"free at least {needed_gib - free_gib:.1f} GiB more on that disk")
    return Finding(OK, "free disk", detail)


def forwarded_ports() -> tuple[list[int], bool]:
    """Host ports the VM forwards, and whether Vagrant may move them (auto_correct)."""
    path = vagrantfile()
    if path is None:
        return [], False
    text = path.read_text()
    ports = [int(p) for p in re.findall(r"forwarded_port.*?host:\s*(\d+)", text)]
    # FORWARDED_PORTS = { 3000 => Integer(ENV.fetch("PUL_HOST_PORT_BOOK", "3000")), ... }
    for name, default in re.findall(r'=>\s*Integer\(ENV\.fetch\("(\w+)",\s*"(\d+)"\)\)', text):
        ports.append(int(os.environ.get(name) or default))
    return sorted(set(ports)), "auto_correct: true" in text


def port_holder(port: int) -> str:
    text = output(["ss", "-Htlnp", f"sport = :{port}"])
    if text and "users:" in text:
        return text.split("users:", 1)[1].strip()
    return "another program"


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def check_ports(ports: list[int], movable: bool) -> list[Finding]:
    findings = []
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
        findings.append(Finding(OK, "loopback", "127.0.0.1 accepts servers on free ports (the labs pick their own)"))
    except OSError as error:
        findings.append(Finding(FAIL, "loopback", f"cannot bind 127.0.0.1: {error}",
                                "the labs' servers listen on 127.0.0.1: check the firewall / network set-up"))
    for port in ports:
        if port_free(port):
            findings.append(Finding(OK, f"port {port}", "free"))
        else:
            findings.append(Finding(WARN if movable else FAIL, f"port {port}", f"in use by {port_holder(port)}",
                                    "stop that program before the workshop" +
                                    (" (or Vagrant forwards another port: `vagrant port` shows which)"
                                     if movable else "")))
    return findings


KIT_NAME = "play-under-load-kit"  # what scripts/workshop-kit pack writes (KIT.tar, or unpacked)


def kit_locations() -> list[Path]:
    override = os.environ.get("PUL_WORKSHOP_KIT")
    if override:
        return [Path(override)]
    places = [REPO, REPO.parent, Path.home(), Path.home() / "Downloads"]
    return [place / f"{KIT_NAME}{suffix}" for place in places for suffix in (".tar", "")]


def check_kit(offline: bool) -> Finding:
    found = [p for p in kit_locations() if p.exists()]
    if found:
        return Finding(OK, "offline kit", f"{found[0]} (check it with: scripts/workshop-kit verify {found[0]})"
                       if found[0].is_file() else str(found[0]))
    where = os.environ.get("PUL_WORKSHOP_KIT") or f"{REPO.parent / KIT_NAME}.tar"
    fix = (f"copy the kit your trainer gives you (USB stick or download) to {where}; a trainer makes it "
           "on a machine with internet with `scripts/workshop-kit pack`")
    if offline:
        return Finding(FAIL, "offline kit", "not found, and the room has no network (--offline)", fix)
    return Finding(WARN, "offline kit", "not found (fine if the room has network: the first build downloads "
                                       "~300 MB)", fix)


def host_checks(offline: bool) -> list[Finding]:
    findings = [check_vagrant(), check_provider(), *check_virtualisation()]
    needed = vm_memory_mib() + HOST_HEADROOM_MIB
    findings.append(check_memory(needed, f"the VM ({vm_memory_mib():,} MiB) plus headroom"))
    vagrant_home = Path(os.environ.get("VAGRANT_HOME") or Path.home() / ".vagrant.d")
    findings.append(check_disk(vagrant_home, HOST_DISK_GIB, "the VM's box and disk"))
    path = vagrantfile()
    ports, movable = forwarded_ports()
    if path is None:
        findings.append(Finding(INFO, "Vagrantfile", "none in this checkout; forwarded ports not checked"))
    findings.extend(check_ports(ports, movable))
    findings.append(check_kit(offline))
    return findings


# -- lab machine checks ----------------------------------------------------------

def python_fix() -> str:
    python = tools.BY_COMMAND["python3"]
    return install_hint(python.debian_package, python.brew)


def check_python() -> Finding:
    version = sys.version_info[:3]
    shown = ".".join(map(str, version))
    if version[:2] < PYTHON_MIN:
        return Finding(FAIL, "Python", f"{shown} is older than 3.9", python_fix())
    if version[:2] < (3, 11):
        return Finding(WARN, "Python", f"{shown}: the labs run, `scripts/lab check` needs 3.11 (tomllib)",
                       python_fix())
    return Finding(OK, "Python", shown)


def check_jdk() -> list[Finding]:
    text = output(["java", "-version"])
    fix = install_hint(tools.JAVA.debian_package, tools.JAVA.brew)
    if text is None:
        return [Finding(FAIL, "JDK", "java not found on PATH", fix)]
    major = version_tuple(text, r'version "(\d+)')
    if major is None or major[0] < JDK_MIN:
        shown = text.strip().splitlines()[0] if text.strip() else "no version"
        return [Finding(FAIL, "JDK", f"{shown}: the labs need Java 17 or newer", fix)]
    findings = [Finding(OK, "JDK", f"Java {major[0]}")]
    if output(["javac", "-version"]) is None:
        findings.append(Finding(FAIL, "javac", "java is a runtime only; sbt needs the compiler too", fix))
    return findings


def check_runtimes() -> list[Finding]:
    """The Java runtimes newer than the JDK that some labs' servers run on (pul.runtimes)."""
    findings = []
    for runtime in runtimes.RUNTIMES.values():
        what = f"Java {runtime.feature} runtime"
        home = runtimes.installed(runtime)
        if home:
            findings.append(Finding(OK, what, f"{runtime.requirement} in {home.parents[1]}"))
        else:
            findings.append(Finding(WARN, what, f"not installed ({runtime.why.split(':')[0]} needs it; its first "
                                    f"run installs {runtime.requirement} from PyPI, about 40 MB)",
                                    "scripts/lab runtimes install (now, while the network is there)"))
    return findings


def check_flame_graphs() -> Finding:
    """What draws `scripts/lab run --profile`'s flame graphs: inferno, or cargo to install it."""
    what = "flame graphs (--profile)"
    binary = profile.inferno_installed()
    if binary:
        return Finding(OK, what, f"inferno {profile.INFERNO_VERSION} in {binary.parents[1]}")
    cargo = profile.cargo()
    if cargo:
        return Finding(INFO, what, f"inferno not installed yet: the first --profile run installs it with {cargo} "
                                   "(about 30 s, from crates.io)")
    return Finding(INFO, what, f"no inferno and no cargo: every lab runs, but --profile cannot draw its flame "
                               f"graphs (inferno {profile.INFERNO_VERSION} needs Rust 1.71 or newer)",
                   "install Rust (https://rustup.rs), then run --profile once while the network is there")


def sbt_launch_version() -> str | None:
    match = re.search(r"SBT_LAUNCH_VERSION=([\d.]+)", (REPO / "scripts" / "sbt").read_text()) \
        if (REPO / "scripts" / "sbt").exists() else None
    return match.group(1) if match else None


def check_sbt_cache() -> Finding:
    version = sbt_launch_version()
    jar = cache_dir() / f"sbt-launch-{version}.jar"
    if jar.exists():
        return Finding(OK, "sbt launcher", str(jar))
    return Finding(WARN, "sbt launcher", f"not cached yet ({jar})",
                   "the first `scripts/sbt` downloads it from Maven Central (needs network); offline: "
                   "scripts/offline-cache import KIT.tar")


def check_coursier() -> Finding:
    status_script = REPO / "scripts" / "offline-cache"
    if status_script.exists():
        text = output([str(status_script), "status"], timeout=60) or ""
        states = re.findall(r"^(\d\d-\S+)\s+(prefetched|NOT prefetched)", text, re.M)
        missing = [name for name, state in states if state != "prefetched"]
        labs = [name for name, _ in states]
        if labs and not missing:
            return Finding(OK, "dependency caches", f"every lab's dependencies are cached ({len(labs)} labs)")
        if labs:
            return Finding(WARN, "dependency caches", f"not cached for {', '.join(missing)}",
                           "while online: scripts/offline-cache prefetch (a few minutes); offline: "
                           "scripts/offline-cache import KIT.tar")
    # Each Play line's core module, at the version the labs pin (labs/sbt/plugin/PlayPlugin.scala).
    versions = playline.plugin_versions()
    missing = [f"Play {version}" for line, version in sorted(versions.items())
               if not list(coursier_dir().glob(f"**/{playline.GROUPS[line].replace('.', '/')}/play_2.13/{version}"))]
    if not missing:
        return Finding(OK, "Coursier cache", f"{' and '.join(f'Play {v}' for _, v in sorted(versions.items()))} "
                                             f"are in {coursier_dir()}")
    return Finding(WARN, "Coursier cache", f"{' and '.join(missing)} not in {coursier_dir()}",
                   "build once while online (`scripts/offline-cache prefetch`), or import the kit: "
                   "scripts/offline-cache import KIT.tar")


def find_program(name: str, globs: tuple[str, ...] = ()) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for pattern in globs:
        matches = sorted(root().glob(pattern.lstrip("/")))
        if matches:
            return str(matches[-1])
    return None


def check_tool(tool: tools.Tool, required: bool = True) -> Finding:
    """A row of scripts/tools.json: found on PATH (or where Debian keeps it), or how to get it."""
    path = find_program(tool.command, tool.search_globs)
    if path:
        return Finding(OK, tool.command, path)
    return Finding(FAIL if required else WARN, tool.command, f"missing ({tool.why})",
                   install_hint(tool.debian_package, tool.brew))


def check_mdbook() -> Finding:
    pinned = "0.5.4"
    on_path = output(["mdbook", "--version"])
    if on_path and pinned in on_path:
        return Finding(OK, "mdBook", f"{pinned} on PATH")
    cached = cache_dir() / f"mdbook-{pinned}" / "bin" / "mdbook"
    if cached.exists():
        return Finding(OK, "mdBook", str(cached))
    return Finding(WARN, "mdBook", f"{pinned} not installed (needed only to build the book yourself)",
                   "scripts/book build installs it (needs cargo and crates.io, ~3 minutes); "
                   "or read the book online")


def check_cores() -> Finding:
    cores = os.cpu_count() or 1
    if cores < 2:
        return Finding(WARN, "CPU cores", "1: the server and the load generator will share it, so the "
                                          "numbers will differ from the book's",
                       "give the VM 2 CPUs (the Vagrantfile does) or use a machine with 2+ cores")
    return Finding(OK, "CPU cores", f"{cores} (server and load generator get one each)")


def check_cpu_limits() -> Finding:
    """Whether `scripts/lab run --cpu-limit` can limit a server here, and what the JVM counts then."""
    what = "CPU limits (--cpu-limit)"
    try:
        hierarchy = cpulimit.find_hierarchy(system_file("/proc/self/mountinfo"), system_file("/proc/self/cgroup"))
    except (cpulimit.LimitUnavailable, OSError, ValueError) as error:
        return Finding(INFO, what, f"not here: {error}")
    how = ("cgroup v1, a group under " + str(hierarchy.root) if hierarchy.kind == "v1"
           else "cgroup v2, a systemd scope")
    try:
        counted = cpulimit.probe_processors(cpulimit.Limit(0.5), hierarchy=hierarchy)
    except (cpulimit.LimitUnavailable, OSError, subprocess.SubprocessError) as error:
        return Finding(WARN, what, f"{how}, but a JVM could not be started under a limit: {error}")
    return Finding(OK, what, f"{how}; a JVM under 0.5 CPU counts {counted} processor(s)")


def labs_checks() -> list[Finding]:
    findings = [check_python(), *check_jdk(), check_cores()]
    # The programs scripts/tools.json puts in its "doctor" group, in the table's order.
    findings += [check_tool(tool) for tool in tools.in_group("doctor")
                 if system() == "Linux" or not tool.linux_only]
    findings += [
        check_sbt_cache(),
        check_coursier(),
        check_mdbook(),
        *check_runtimes(),
        check_flame_graphs(),
        *([check_cpu_limits()] if system() == "Linux" else []),
        check_memory(LABS_MEMORY_MIB, "a lab (sbt, the server, the load generator)"),
        check_disk(cache_dir(), LABS_DISK_GIB, "the caches and builds"),
    ]
    return findings


# -- the command -----------------------------------------------------------------

def print_findings(title: str, findings: list[Finding]) -> None:
    print(f"\n{title}")
    for finding in findings:
        print(f"  {finding.status:4}  {finding.what}: {finding.detail}")
        if finding.fix and finding.status in (FAIL, WARN):
            print(f"        fix: {finding.fix}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/doctor",
        description="Checks that this machine is ready for the Play Under Load workshop and says how to "
                    "fix what is not. Exit code 0: ready (warnings allowed); 1: at least one problem.")
    parser.add_argument("where", nargs="?", choices=("host", "labs", "all"), default="host",
                        help="host: the laptop that runs the workshop VM (default); labs: the machine the "
                             "labs run on (inside the VM, or Linux without a VM); all: both")
    parser.add_argument("--offline", action="store_true",
                        help="the room has no network: a missing offline kit or cache is a problem, not a warning")
    options = parser.parse_args(argv)
    print(f"Play Under Load pre-flight check on {platform.node() or 'this machine'} "
          f"({system()} {platform.machine()})")
    findings: list[Finding] = []
    if options.where in ("host", "all"):
        part = host_checks(options.offline)
        print_findings("The host (runs the workshop VM):", part)
        findings += part
    if options.where in ("labs", "all"):
        part = labs_checks()
        if options.offline:
            for finding in part:
                if finding.status == WARN and finding.what in ("sbt launcher", "dependency caches", "Coursier cache"):
                    finding.status = FAIL
        print_findings("The lab machine (runs sbt, the Play server and the load generators):", part)
        findings += part
    problems = sum(f.status == FAIL for f in findings)
    warnings = sum(f.status == WARN for f in findings)
    print()
    if problems:
        print(f"{problems} problem(s), {warnings} warning(s): fix the problems above before the workshop, "
              "then run scripts/doctor again.")
    else:
        print(f"Ready: no problems, {warnings} warning(s).")
    if options.where == "host":
        print("Doing the labs without the VM? Run `scripts/doctor labs` too.")
    return 1 if problems else 0
