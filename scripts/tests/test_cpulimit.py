"""A server under a CPU limit (pul.cpulimit): where the limit is made on each kind of machine, what a
bad limit says, the group's statistics, and its removal after a driver that was killed. On a
machine with a writable cgroup v1 cpu controller (the CI machine kind, as root) the group is real."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pul import cpulimit, procs, watchdog
from pul.cpulimit import Group, Hierarchy, Limit, LimitUnavailable
from pul.errors import UsageError

V1_MOUNTS = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / {root} rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V2_MOUNTS = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def files(tmp_path, mounts: str, cgroup: str) -> dict:
    (tmp_path / "mountinfo").write_text(mounts)
    (tmp_path / "cgroup").write_text(cgroup)
    return {"mountinfo": tmp_path / "mountinfo", "cgroup_file": tmp_path / "cgroup"}


# -- the limit -------------------------------------------------------------------------

def test_a_limit_is_a_quota_per_period_and_the_processors_the_jvm_counts():
    half = Limit(0.5)
    assert (half.quota_us, half.period_us, half.processors) == (50_000, 100_000, 1)
    assert Limit(1.5, 20_000).quota_us == 30_000 and Limit(1.5).processors == 2
    assert half.describe() == "0.5 CPU (50 ms of CPU every 100 ms)"


@pytest.mark.parametrize("cpus, period_us, says", [
    (0, 100_000, "above 0"),
    (-1, 100_000, "above 0"),
    (float("nan"), 100_000, "above 0"),
    (1, 500, "between 1 and 1000"),
    (1, 2_000_000, "between 1 and 1000"),
    (0.005, 100_000, "hundredths of a CPU"),
    (1 / 3, 100_000, "hundredths of a CPU"),
    (0.01, 50_000, "below the kernel's smallest quota"),
])
def test_a_bad_limit_is_a_usage_error_that_says_why(cpus, period_us, says):
    with pytest.raises(UsageError, match=says):
        Limit(cpus, period_us)


# -- where it is made --------------------------------------------------------------------

def test_cgroup_v1_makes_the_group_under_the_cpu_controller_where_this_process_is(tmp_path):
    root = tmp_path / "cpu"
    (root / "inner").mkdir(parents=True)
    found = cpulimit.find_hierarchy(**files(tmp_path, V1_MOUNTS.format(root=root), "1:cpu:/inner\n0::/\n"))
    assert found == Hierarchy("v1", root / "inner")


def test_in_a_container_the_mounts_root_is_its_own_group(tmp_path):
    # Docker on cgroup v1 without a cgroup namespace: /proc/self/cgroup and the mount's root both
    # name /docker/ID; the group is the mount point itself.
    root = tmp_path / "cpu"
    root.mkdir()
    mounts = f"32 31 0:29 /docker/abc {root} rw,relatime - cgroup cgroup rw,cpu\n"
    found = cpulimit.find_hierarchy(**files(tmp_path, mounts, "1:cpu:/docker/abc\n"))
    assert found == Hierarchy("v1", root)


@pytest.mark.parametrize("mount_options, make, says", [
    ("ro,relatime", True, "mounted read-only"),
    ("rw,relatime", False, "is not there"),
])
def test_a_read_only_or_missing_hierarchy_says_which(tmp_path, mount_options, make, says):
    root = tmp_path / "cpu"
    if make:
        root.mkdir()
    mounts = f"32 31 0:29 / {root} {mount_options} - cgroup cgroup rw,cpu\n"
    with pytest.raises(LimitUnavailable, match=says):
        cpulimit.find_hierarchy(**files(tmp_path, mounts, "1:cpu:/\n"))


def test_cgroup_v1_not_writable_asks_for_root(tmp_path, monkeypatch):
    root = tmp_path / "cpu"
    root.mkdir()
    monkeypatch.setattr(os, "access", lambda *_: False)
    with pytest.raises(LimitUnavailable, match="needs root"):
        cpulimit.find_hierarchy(**files(tmp_path, V1_MOUNTS.format(root=root), "1:cpu:/\n"))


def test_cgroup_v2_with_systemd_asks_systemd_for_a_scope(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    found = cpulimit.find_hierarchy(**files(tmp_path, V2_MOUNTS, "0::/user.slice\n"),
                                    systemd_run="/usr/bin/systemd-run", systemd_running=True)
    assert found == Hierarchy("v2", Path("/sys/fs/cgroup"))
    command = Group(Limit(0.5, 20_000), found, tag="12:34:0").command(["java", "-version"])
    assert command == ["systemd-run", "--scope", "--quiet", "--collect", "--unit=pul-cpu-12-34-0-0",
                       "-p", "CPUQuota=50%", "-p", "CPUQuotaPeriodSec=20000us", "--", "java", "-version"]


@pytest.mark.parametrize("systemd_run, systemd_running, says", [
    ("", True, "no systemd"),
    ("/usr/bin/systemd-run", False, "no systemd"),
])
def test_cgroup_v2_without_systemd_says_where_to_run_instead(tmp_path, systemd_run, systemd_running, says):
    with pytest.raises(LimitUnavailable, match=says):
        cpulimit.find_hierarchy(**files(tmp_path, V2_MOUNTS, "0::/\n"), systemd_run=systemd_run,
                                systemd_running=systemd_running)


def test_no_cpu_controller_at_all_is_said(tmp_path):
    with pytest.raises(LimitUnavailable, match="no cgroup cpu controller"):
        cpulimit.find_hierarchy(**files(tmp_path, "31 23 0:28 / /sys rw - sysfs sysfs rw\n", "0::/\n"))


def test_a_groups_name_carries_its_drivers_tag_and_server_and_only_ours_are_read_back():
    assert cpulimit.group_name("123:456:0", 2) == "pul-cpu-123-456-0-2"
    assert cpulimit.tag_of("pul-cpu-123-456-0-2") == "123:456:0"
    assert cpulimit.tag_of("pul-cpu-123-456-0-0.scope") == "123:456:0"
    for other in ("docker", "pul-cpu-1-2-3", "pul-cpu-a-b-c-d", "pul-postgres-1-2-3-4"):
        assert cpulimit.tag_of(other) is None
    # Each server of a run in a group of its own.
    hierarchy = Hierarchy("v1", Path("/x"))
    assert Group(Limit(1), hierarchy, "1:2:0", serial=0).name != Group(Limit(1), hierarchy, "1:2:0", serial=1).name


# -- statistics ------------------------------------------------------------------------------

def test_cpu_stat_reads_the_same_on_v1_and_v2(tmp_path):
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    v1.write_text("nr_periods 10\nnr_throttled 4\nthrottled_time 250000000\nnr_bursts 0\n")
    v2.write_text("usage_usec 900\nnr_periods 10\nnr_throttled 4\nthrottled_usec 250000\n")
    assert cpulimit.read_stats(v1) == cpulimit.read_stats(v2) == \
        {"periods": 10, "throttled_periods": 4, "throttled_seconds": 0.25}
    later = {"periods": 30, "throttled_periods": 9, "throttled_seconds": 0.75}
    assert cpulimit.difference(cpulimit.read_stats(v1), later) == \
        {"periods": 20, "throttled_periods": 5, "throttled_seconds": 0.5, "throttled_share": 0.25}


# -- a real group (cgroup v1, root) --------------------------------------------------------

def real_v1() -> Hierarchy:
    try:
        hierarchy = cpulimit.find_hierarchy()
    except (LimitUnavailable, OSError) as error:
        pytest.skip(f"no CPU limit here: {error}")
    if hierarchy.kind != "v1":
        pytest.skip("a v2 machine's limits are systemd's scopes (tested in the lab VM)")
    return hierarchy


def test_a_process_started_in_the_group_is_throttled_to_the_limit_and_the_group_goes_after_it():
    group = Group(Limit(0.2, 10_000), real_v1())
    group.make()
    try:
        before = cpulimit.read_stats(group.stat_file())
        # Half a second of spinning: 0.2 CPU lets it run 2 ms in every 10 ms period.
        spin = "import time\nend = time.monotonic() + 0.5\nwhile time.monotonic() < end: pass\n" \
               "print(open('/proc/self/cgroup').read())"
        done = subprocess.run(group.command([sys.executable, "-c", spin]), capture_output=True, text=True,
                              timeout=30)
        assert done.returncode == 0, done.stderr
        assert f":cpu:/{group.path.relative_to(group.hierarchy.root)}" in done.stdout.replace("cpu,cpuacct", "cpu")
        used = cpulimit.difference(before, cpulimit.read_stats(group.stat_file()))
        # ~50 periods, nearly all of them throttled.
        assert used["periods"] >= 20 and used["throttled_share"] >= 0.5, used
    finally:
        assert group.remove()
    assert not group.path.exists()


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH")
def test_the_jvm_counts_the_processors_the_limit_allows():
    real_v1()
    assert cpulimit.probe_processors(Limit(0.5)) == 1
    if (os.cpu_count() or 1) >= 2:
        assert cpulimit.probe_processors(Limit(1.5)) == 2


def test_a_killed_drivers_group_is_removed_by_the_next_clean_up():
    hierarchy = real_v1()
    # A driver that is gone: a child that exited, its tag kept.
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    start = procs.start_time(child.pid)
    child.wait()
    tag = f"{child.pid}:{start}:{os.geteuid()}"
    group = Group(Limit(0.5), hierarchy, tag=tag)
    group.make()
    mine = Group(Limit(0.5), hierarchy)  # this process's, whose driver runs
    mine.make()
    try:
        # Only this test's dead driver and this process: other tests' processes are theirs to stop.
        done = watchdog.clean_up_after(lambda driver: driver in (tag, procs.driver_tag()) and
                                       watchdog.dead_run_of_this_user(driver))
        assert done == [str(group.path)] and not group.path.exists()
        assert mine.path.exists()
    finally:
        group.remove()
        mine.remove()


def test_a_group_with_a_process_in_it_is_not_removed():
    group = Group(Limit(0.5), real_v1())
    group.make()
    sleeper = subprocess.Popen(group.command(["sleep", "30"]))
    try:
        deadline = time.monotonic() + 5
        while not (group.path / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not group.remove() and group.path.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
        deadline = time.monotonic() + 5
        while not group.remove() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert not group.path.exists()


# -- the driver's options and the server under a limit ----------------------------------------

REPO = Path(__file__).resolve().parents[2]


def run_lab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "lab"), *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


@pytest.mark.parametrize("args, says", [
    (("--cpu-limit", "0"), "--cpu-limit must be a number of CPUs above 0"),
    (("--cpu-limit", "1", "--cpu-period-ms", "2000"), "--cpu-period-ms must be between 1 and 1000"),
    (("--cpu-period-ms", "50"), "--cpu-period-ms is the period of a --cpu-limit"),
    (("--cpu-limit", "0.5", "--target", "http://192.0.2.1:9000"), "--cpu-limit is about the server"),
])
def test_a_bad_cpu_limit_is_a_usage_error_before_any_build(args, says):
    done = run_lab("run", "01", *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert "sbt" not in done.stderr


def test_a_machine_that_cannot_limit_says_so_before_the_build(monkeypatch, tmp_path):
    from pul import run as driver, server
    from pul.cli import run_parser
    from pul.lab import resolve

    def unavailable():
        raise LimitUnavailable("no cgroup cpu controller is mounted on this machine")

    def no_build(*_args, **_kwargs):
        raise AssertionError("built before saying the limit cannot be set")

    monkeypatch.setattr(cpulimit, "find_hierarchy", unavailable)
    monkeypatch.setattr(server, "build", no_build)
    monkeypatch.setattr(driver, "build", no_build)
    lab = resolve("01")
    params = lab.params(run_parser(lab).parse_args(["01"]))
    options = driver.RunOptions(results_dir=tmp_path, write_report=False, quiet=True, cpu_limit=Limit(0.5))
    with pytest.raises(LimitUnavailable, match="no cgroup cpu controller"):
        driver.run(lab, params, options, ["run", "01", "--cpu-limit", "0.5"])


def test_the_server_starts_inside_its_group(tmp_path):
    from pul.server import Server

    group = Group(Limit(0.5), Hierarchy("v1", tmp_path), tag="1:2:0")
    server = Server(tmp_path / "bin" / "lab", 9999, tmp_path / "server.log", "0", {}, cpu_group=group)
    command = server.command()
    assert command[:4] == ["sh", "-c", 'echo $$ >"$0/cgroup.procs" && exec "$@"', str(tmp_path / "pul-cpu-1-2-0-0")]
    assert command[4:6] == ["taskset", "-c"] and str(tmp_path / "bin" / "lab") in command
    # The JVM counts its processors from the quota, as in a container: no count of the driver's.
    assert not any("ActiveProcessorCount" in arg for arg in command)
    unlimited = Server(tmp_path / "bin" / "lab", 9999, tmp_path / "server.log", "0", {})
    assert "-J-XX:ActiveProcessorCount=1" in unlimited.command()


def test_the_throttling_meter_counts_the_measured_runs_only(tmp_path):
    from pul.run import ThrottlingMeter

    group = Group(Limit(0.5), Hierarchy("v1", tmp_path), tag="1:2:0")
    group.path.mkdir()
    stat = group.path / "cpu.stat"
    stat.write_text("nr_periods 100\nnr_throttled 10\nthrottled_time 1000000000\n")
    meter = ThrottlingMeter(group, group.stat_file())
    stat.write_text("nr_periods 150\nnr_throttled 40\nthrottled_time 1500000000\n")
    assert meter.finish() == {"cpus": 0.5, "period_us": 100_000, "quota_us": 50_000, "periods": 50,
                              "throttled_periods": 30, "throttled_seconds": 0.5, "throttled_share": 0.6}


def test_a_throttling_meter_whose_group_is_gone_leaves_no_record_and_no_thread(tmp_path):
    from pul.run import ThrottlingMeter

    group = Group(Limit(0.5), Hierarchy("v1", tmp_path), tag="1:2:0")
    group.path.mkdir()
    (group.path / "cpu.stat").write_text("nr_periods 1\nnr_throttled 0\nthrottled_time 0\n")
    meter = ThrottlingMeter(group, group.stat_file(), hz=50)
    (group.path / "cpu.stat").unlink()
    assert meter.finish() is None
    assert not meter.sampler.sampling.thread.is_alive()


def test_a_limited_record_is_one_the_results_schema_takes():
    """calibration.server_cores is a share of a core under a limit, and the variant's cpu_limit."""
    import json

    from pul import schema

    committed = json.loads((REPO / "labs" / "01-non-blocking" / "results" / "latest.json").read_text())
    variant = committed["variants"][0]
    variant["calibration"] = {**variant["calibration"], "server_cores": 0.5, "cpu_limit": 0.5}
    variant["cpu_limit"] = {"cpus": 0.5, "period_us": 100_000, "quota_us": 50_000, "periods": 43,
                            "throttled_periods": 8, "throttled_seconds": 0.22, "throttled_share": 0.186,
                            "timeline": {"t_s": [0.1], "throttled_share": [0.0], "throttled_periods": [0]}}
    committed["cpu_limit"] = {"cpus": 0.5, "period_us": 100_000, "quota_us": 50_000, "processors": 1,
                              "cgroup": "v1"}
    assert schema.errors(committed, schema.load(REPO / "scripts" / "results.schema.json")) == []


def test_the_throttling_timeline_gives_each_intervals_throttled_periods_and_their_share():
    def stat(periods, throttled, seconds):
        return {"periods": periods, "throttled_periods": throttled, "throttled_seconds": seconds}

    samples = [(0.0, stat(0, 0, 0.0)), (0.1, stat(2, 1, 0.05)), (0.2, stat(3, 1, 0.05)), (0.3, stat(5, 2, 0.13))]
    assert cpulimit.throttling_series(samples, 240) == {
        "t_s": [0.1, 0.2, 0.3], "throttled_share": [0.5, 0.0, 0.5], "throttled_periods": [1, 0, 1]}
    # Shrunk to fewer points, neighbouring intervals averaged.
    assert cpulimit.throttling_series(samples, 1)["throttled_share"] == [0.333]


def test_the_sampler_reads_cpu_stat_from_outside_the_group(tmp_path):
    stat = tmp_path / "cpu.stat"

    def write(text):
        # Whole, as the kernel's file reads: never a half-written one.
        (tmp_path / "next").write_text(text)
        os.replace(tmp_path / "next", stat)

    write("nr_periods 0\nnr_throttled 0\nthrottled_time 0\n")
    sampler = cpulimit.Sampler(stat, hz=50).start()
    time.sleep(0.1)
    write("nr_periods 5\nnr_throttled 5\nthrottled_time 100000000\n")
    time.sleep(0.1)
    series = sampler.finish(240)
    assert len(series["t_s"]) >= 5 and sum(series["throttled_periods"]) == 5
    assert max(series["throttled_share"]) > 0


def test_steps_under_different_limits_or_jvm_options_get_servers_of_their_own():
    from pul.lab import Step
    from pul.run import group_by_server

    def step(name, **kwargs):
        return Step(name=name, endpoint="/x", concurrency=1, requests=10, **kwargs)

    steps = [step("a", cpu_limit=Limit(0.5)), step("b", cpu_limit=Limit(0.5)), step("c", cpu_limit=Limit(1)),
             step("d", cpu_limit=Limit(1, 20_000)), step("e", cpu_limit=Limit(1, 20_000), jvm_options=("-XX:ActiveProcessorCount=2",)),
             step("f")]
    assert [[s.name for s in group] for _, group in group_by_server(steps)] == [["a", "b"], ["c"], ["d"], ["e"], ["f"]]


def test_the_runs_limit_overrides_a_steps_own():
    from types import SimpleNamespace

    from pul.lab import Step
    from pul.run import RunOptions, cpu_limit_of

    own = Step(name="a", endpoint="/x", concurrency=1, requests=10, cpu_limit=Limit(0.5))
    assert cpu_limit_of(SimpleNamespace(options=RunOptions()), own) == Limit(0.5)
    assert cpu_limit_of(SimpleNamespace(options=RunOptions(cpu_limit=Limit(2))), own) == Limit(2)
