"""Fast tests of the lab driver: command line, failure paths that need no build, parsing, schema."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from pul import ab, lab, results
from pul.run import group_by_server, pinning, RunOptions, select_steps
from pul.lab import Step

REPO = Path(__file__).resolve().parents[2]
LAB = [sys.executable, str(REPO / "scripts" / "lab")]


def run_lab(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*LAB, *args], capture_output=True, text=True, timeout=120, cwd=REPO, **kwargs)


def test_list_names_every_lab_directory():
    out = run_lab("list")
    assert out.returncode == 0
    for lab_dir in (REPO / "labs").glob("[0-9][0-9]-*"):
        assert lab_dir.name in out.stdout


def test_unknown_lab_lists_the_valid_ones():
    out = run_lab("run", "99-nope")
    assert out.returncode == 2
    assert "unknown lab '99-nope'" in out.stderr
    assert "01-non-blocking" in out.stderr


@pytest.mark.parametrize("name", ["01", "1", "01-non-blocking", "labs/01-non-blocking/"])
def test_a_lab_can_be_named_several_ways(name):
    assert lab.resolve(name).name == "01-non-blocking"


def test_unknown_variant_is_a_usage_error():
    out = run_lab("run", "01", "--variant", "java-nonsense")
    assert out.returncode == 2
    assert "java-nonsense" in out.stderr and "java-blocking" in out.stderr


def test_bad_numbers_are_usage_errors():
    assert run_lab("run", "01", "--concurrency", "0").returncode == 2
    assert run_lab("run", "01", "--port", "70000").returncode == 2
    assert run_lab("run", "01", "--requests", "many").returncode == 2


def test_unknown_command_is_a_usage_error():
    out = run_lab("frobnicate")
    assert out.returncode == 2 and "unknown command" in out.stderr


def test_busy_port_is_reported_with_its_holder():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        out = run_lab("run", "01", "--port", str(port))
    assert out.returncode == 4
    assert f"port {port}" in out.stderr
    # ss names the process holding it: this very test process.
    assert f"(PID {os.getpid()})" in out.stderr


def test_missing_tool_says_how_to_get_it(tmp_path):
    # A PATH without ab, and no permission to install: the message names the package.
    env = {"PATH": "/nonexistent", "PUL_NO_INSTALL": "1", "HOME": os.environ.get("HOME", "/root")}
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "lab"), "run", "01"], capture_output=True,
                         text=True, env=env, timeout=60, cwd=REPO)
    assert out.returncode == 3
    assert "apache2-utils" in out.stderr and "apt-get install" in out.stderr


def test_steps_with_the_same_server_properties_share_a_server():
    steps = [Step("a", "a", 1, 1), Step("b", "b", 1, 1), Step("c", "c", 1, 1, setup={"x": "1"}),
             Step("d", "d", 1, 1, setup={"x": "1"}), Step("e", "e", 1, 1)]
    groups = group_by_server(steps)
    assert [[s.name for s in g] for _, g in groups] == [["a", "b"], ["c", "d"], ["e"]]


def test_a_fresh_server_step_never_shares_the_previous_server():
    steps = [Step("a", "a", 1, 1), Step("a-again", "a", 1, 1, fresh_server=True), Step("b", "b", 1, 1)]
    assert [[s.name for s in g] for _, g in group_by_server(steps)] == [["a"], ["a-again", "b"]]


def test_chosen_variants_run_in_the_order_given():
    from pul.errors import UsageError
    from pul.lab import resolve

    LAB04 = resolve("04")

    chosen = ("none", "none-again", "plain-x1", "none")
    thorough = {**LAB04.defaults, "chain_lengths": "1", "mode": "thorough"}
    steps = select_steps(LAB04, thorough, chosen)
    assert [s.name for s in steps] == ["none", "none-again", "plain-x1"]
    # ... and with --thorough, the repeat gets a server of its own, although its set-up is the baseline's.
    assert [[s.name for s in g] for _, g in group_by_server(steps)] == [["none"], ["none-again"], ["plain-x1"]]
    with pytest.raises(UsageError, match="unknown variant"):
        select_steps(LAB04, thorough, ("nonesuch",))


def test_a_named_only_variant_runs_only_when_named():
    from pul.lab import resolve

    LAB06 = resolve("06")
    params = dict(LAB06.defaults)
    by_default = [s.name for s in select_steps(LAB06, params, ())]
    assert "scala-virtual" not in by_default and "virtual" in by_default
    assert [s.name for s in select_steps(LAB06, params, ("scala-virtual",))] == ["scala-virtual"]
    # Listed for --help with what a default run does with it.
    assert "scala-virtual (only when named)" in LAB06.variants_listed()
    assert "scala-virtual" in LAB06.variants()


def test_a_step_counting_on_earlier_ones_warms_up_as_any_step_when_first_on_its_server():
    from pul.run import _warmup_of

    after_others = Step("a", "a", 1, 1, warmup_max_rounds=1, warmup_max_rounds_first=8)
    assert _warmup_of(after_others, first=False) is after_others
    first = _warmup_of(after_others, first=True)
    assert (first.warmup_max_rounds, first.warmup_min_rounds) == (8, 2)
    plain = Step("b", "b", 1, 1)
    assert _warmup_of(plain, first=True) is plain


def test_pinning_puts_server_and_load_on_different_cores():
    pin = pinning(RunOptions())
    if (os.cpu_count() or 1) >= 2:
        assert pin["server_cpus"] != pin["load_cpus"]
    assert pinning(RunOptions(pin=False))["server_cpus"] is None


def test_little_law_prediction_uses_the_reported_pool():
    pools = {"pools": {"default": {"threads": 8}, "offload": {"threads": 100}}}
    blocking = Step("b", "b", 50, 100, pool="default", service_ms=30)
    offloaded = Step("o", "o", 50, 100, pool="offload", service_ms=30)
    lab01 = lab.resolve("01")
    assert lab01.predict(blocking, pools, {}).requests_per_sec == pytest.approx(8 / 0.030, rel=1e-3)
    # 50 in flight < 100 threads: concurrency is the bound.
    assert lab01.predict(offloaded, pools, {}).requests_per_sec == pytest.approx(50 / 0.030, rel=1e-3)


def committed_results() -> list[Path]:
    return sorted(p for p in (REPO / "labs").glob("*/results/*.json"))


def test_there_are_committed_results():
    assert committed_results(), "no labs/*/results/*.json committed"


@pytest.mark.parametrize("path", committed_results(), ids=lambda p: str(p.relative_to(REPO)))
def test_committed_results_match_the_schema(path):
    schema = json.loads(results.SCHEMA.read_text())
    jsonschema.validate(json.loads(path.read_text()), schema)


@pytest.mark.parametrize("path", committed_results(), ids=lambda p: str(p.relative_to(REPO)))
def test_committed_raw_ab_output_parses_to_the_stored_numbers(path):
    data = json.loads(path.read_text())
    for variant in data["variants"]:
        raw = path.parent / variant["ab_output"]
        if not raw.exists():
            continue  # older runs may keep only the JSON
        csv = raw.with_suffix(".percentiles.csv")
        parsed = ab.parse(raw.read_text(), csv.read_text())
        assert parsed.requests_per_sec == variant["requests_per_sec"]
        assert parsed.pct(99) == variant["p99_ms"]
        assert parsed.failed == variant["failed"]


def test_parser_reads_failures_and_non_2xx():
    output = "\n".join([
        "$ ab -l -n 10 -c 2 http://127.0.0.1:1/x",
        "Complete requests:      10",
        "Failed requests:        3",
        "Non-2xx responses:      4",
        "Time taken for tests:   0.500 seconds",
        "Requests per second:    20.00 [#/sec] (mean)",
        "Time per request:       100.000 [ms] (mean)",
        "apr_socket_recv: Connection reset by peer (104)",
    ])
    csv = "Percentage served,Time in ms\n" + "\n".join(f"{i},{i / 10:.3f}" for i in range(101))
    parsed = ab.parse(output, csv)
    assert (parsed.complete, parsed.failed, parsed.non_2xx) == (10, 3, 4)
    assert parsed.errors == ["apr_socket_recv: Connection reset by peer (104)"]
    # Linear quantiles from 0 to 10 ms integrate to a mean of 5 ms.
    assert parsed.mean_ms == pytest.approx(5.0)


def test_parser_rejects_output_without_a_report():
    with pytest.raises(Exception, match="did not print a report"):
        ab.parse("apr_socket_connect(): Connection refused (111)\n", "")


def test_set_needs_key_equals_value():
    out = run_lab("run", "01", "--set", "no-equals-sign")
    assert out.returncode == 2 and "--set takes KEY=VALUE" in out.stderr
