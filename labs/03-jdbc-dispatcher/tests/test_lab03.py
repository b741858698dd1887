"""Smoke tests of lab 03 against a real, throwaway PostgreSQL.

The sweep runs database-dispatcher at 64 requests in flight with 4, 16, 32
and 64 connections, then 16 again with every wait identical (lockstep), in
the default mode that students run: one server, a dispatcher per size.
Little's law says 4 connections allow 4 / (wait + work) requests a second; 32
would allow eight times that, but each request's CPU in PostgreSQL (measured
by the driver at start-up) keeps its one core busy long before, so 32 and 64
should both sit on a plateau at that core's limit. Bounds are loose: the
machine has two cores and other work on it.

Every test also checks that no PostgreSQL process and no temporary cluster is
left behind: after success, after a failure, and after Ctrl-C.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[3]
LAB = [sys.executable, str(REPO / "scripts" / "lab")]
WITH_POSTGRES = str(REPO / "scripts" / "with-postgres")
sys.path.insert(0, str(REPO / "scripts"))
from pul import timeline  # noqa: E402
from pul.model import mean_value_analysis  # noqa: E402
from pul.procs import processes_with_run_id  # noqa: E402
from pul.testing import given_results, within  # noqa: E402

# A measured run of the real lab (minutes): its lab's part of scripts/test runs it.
pytestmark = pytest.mark.slow

POOLS = (4, 16, 32, 64)
# Lockstep costs most near the corner (chapter 3, exercise 4): about 16 connections on the
# machines seen so far (3-5 ms of PostgreSQL CPU per request); further past it, the convoy
# costs less (at 32, 69% of the varied waits here but 90% on a slower CI machine).
LOCKSTEP_POOL = 16


@pytest.fixture
def isolated():
    """A run id and a TMPDIR of this test's own, to find anything left behind.

    The TMPDIR is world-readable because PostgreSQL runs as another user when we are root."""
    tmp = Path(tempfile.mkdtemp(prefix="pul-lab03-test-", dir="/tmp"))
    tmp.chmod(0o755)
    token = "lab03-" + uuid.uuid4().hex[:10]
    env = {**os.environ, "PUL_RUN_ID": token, "TMPDIR": str(tmp)}
    env.pop("DATABASE_URL", None)
    yield env, tmp
    left = processes_with_run_id(token)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    clusters = list(tmp.glob("pul-postgres-*"))
    subprocess.run(["rm", "-rf", str(tmp)], check=False)
    assert not left, f"processes left behind: {left}"
    assert not clusters, f"temporary clusters left behind: {clusters}"


def _nothing_left(env: dict, tmp: Path) -> None:
    assert processes_with_run_id(env["PUL_RUN_ID"]) == []
    assert list(tmp.glob("pul-postgres-*")) == []


@pytest.mark.slow
def test_sweep_rises_to_postgresql_cpu_limit_then_stops(isolated, tmp_path):
    data = given_results("03")
    if data is None:
        env, tmp = isolated
        results_dir = tmp_path / "results"
        out = subprocess.run([*LAB, "run", "03", "--sweep", "--pools", ",".join(map(str, POOLS)),
                              "--lockstep-pool", str(LOCKSTEP_POOL),
                              "--wide-jitter-pool", "0", "--results-dir", str(results_dir), "--quiet"],
                             capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        _nothing_left(env, tmp)
        data = json.loads((results_dir / "latest.json").read_text())
    check_the_sweep(data)


def check_the_sweep(data: dict) -> None:
    """The lesson of the sweep: a rise with the pool, the corner, PostgreSQL's CPU plateau, the
    lockstep convoy, each against the bound the model names (a smoke run's pools, or a default
    run's, which has these and more)."""
    assert data["params"]["mode"] == "default"
    jsonschema.validate(data, json.loads((REPO / "scripts" / "results.schema.json").read_text()))
    by_pool = {v["extra"]["pool_size"]: v for v in data["variants"] if v["name"].startswith("pool=")}
    assert set(by_pool) >= set(POOLS)
    lockstep_pool = data["params"]["lockstep_pool"]
    assert data["params"]["database"] == "throwaway"
    assert data["pools"]["postgresql"]["version"].startswith("PostgreSQL")
    rate = {n: by_pool[n]["requests_per_sec"] for n in POOLS}
    littles = {n: by_pool[n]["extra"]["littles_law_requests_per_sec"] for n in POOLS}
    # PostgreSQL's core, as the model bounds each step: calibrated in the round just before it
    # (PostgreSQL's and ab's CPU per request on that core). The query timed alone at start-up
    # (postgres_ceiling_requests_per_sec) is one short reading of a core whose speed drifts: it
    # put the ceiling at 182, 228, 301 and 463 req/s in four runs whose plateaus were 170-320.
    database = {n: by_pool[n]["bounds"]["database CPU"] for n in POOLS}
    lockstep = [v for v in data["variants"] if v["name"] == f"lockstep-pool={lockstep_pool}"]
    summary = {n: (rate[n], littles[n], database[n], by_pool[n]["predicted_requests_per_sec"]) for n in POOLS}
    summary["lockstep"] = [v["requests_per_sec"] for v in lockstep]
    # A string, so that pytest shows all of it when an assertion fails (it cuts long reprs).
    summary = json.dumps(summary)
    print("measured (pool: rate, Little's law, database CPU bound, prediction):", summary)  # shown by -rP

    # Every step of the sweep answered (a default run's oversized-dispatcher step times requests
    # out on purpose: the chapter's connection-timeout lesson).
    for v in [*by_pool.values(), *lockstep]:
        assert v["failed"] == 0 and v["non_2xx"] == 0, summary
    # The biggest pool is bound by PostgreSQL's core, far below Little's law alone.
    assert by_pool[64]["bound_by"] == "database CPU", summary
    within("pool=64 Little's law over the database bound", littles[64] / database[64], 1.5, context=summary)
    # Below the limit, throughput follows the pool (Little's law within 20%).
    within("pool=4 req/s over Little's law", rate[4] / littles[4], 0.8, 1.1, context=summary)
    # It rises with the pool, by as much as the model predicts: pool=4 bound by its threads, pool=32
    # by PostgreSQL's core as calibrated just before it. That core's speed drifts, so the predicted
    # rise does too. A fresh CI machine's core served 152, 122 and 238 req/s in the rounds before
    # pool=16, 32 and 64: a predicted rise of 2.8x, measured 2.54x (0.90 of it). In 25 census runs
    # here the rise was 3.5-6.9x, 0.79-1.19 of the predicted one. The clear rise is the lesson; its size
    # is the model's.
    predicted = {n: by_pool[n]["predicted_requests_per_sec"] for n in POOLS}
    within("pool=32 req/s over pool=4's", rate[32] / rate[4], 1.5, context=summary)
    within("pool=32's rise over pool=4 against the predicted rise",
           (rate[32] / rate[4]) / (predicted[32] / predicted[4]), 0.6, 1.5, context=summary)
    # ...onto a plateau at PostgreSQL's CPU limit, the bound for both 32 and 64 connections (or
    # below it near the corner, where the queries queue). Measured 0.69-1.23 of it on CI and
    # here: ab shares the core, the queries still bunch up a little, and the bound comes from a
    # round of a second or two on a core whose speed drifts by about 15% within a minute. Far
    # from Little's law alone (3x the bound at 64) and from a thread-bound collapse.
    for n in (32, 64):
        within(f"pool={n} req/s over the database bound", rate[n] / database[n], 0.5, 1.35, context=summary)
    # ...so twice the connections gain only what PostgreSQL's core gives, not the doubling of
    # Little's law alone. On a steady core 64 and 32 share one bound (64/32 measured 0.95-1.23 in
    # 15 runs here); on the CI machine above the core sped up from 122 to 238 req/s between them,
    # and 64 served 2.1x what 32 did: the core's doing, as the prediction's 1.95x says. So 64's
    # gain is checked against the predicted one: 0.79-1.40 of it in 25 census runs (each step's
    # rate over its bound moves on its own, 0.74-1.15 here), 1.08 on CI; a doubling on a steady
    # core (predicted gain 1) fails, as does a step above its database bound (above).
    within("pool=64's gain over pool=32 against the predicted gain",
           (rate[64] / rate[32]) / (predicted[64] / predicted[32]), 0.6, 1.6, context=summary)
    # PostgreSQL's core is busy at the plateau, and barely at 4 connections.
    pg32 = by_pool[32]["extra"].get("postgres_cpu_utilization")
    pg4 = by_pool[4]["extra"].get("postgres_cpu_utilization")
    assert pg32 is not None and pg4 is not None, (pg4, pg32)
    within("PostgreSQL's CPU use at pool=32 over pool=4's", pg32 / pg4, 2.5)
    # Its core (PostgreSQL's and ab's) is busy on the plateau proper: at 64, 0.83-0.85 in five
    # default-mode runs here, 0.79 in a clean-clone smoke run that measured 0.81 of its bound.
    # At 32, just past the corner, it was 0.77-0.85 in six, too close to the line to test. A
    # thread-bound step keeps it far less busy (pool 4: the check on pg4 above).
    within("pool=64 shared core busy", by_pool[64]["load_cores_busy"], 0.7)
    # Identical waits put the connections in lockstep: the same pool serves clearly less than
    # smoothly arriving queries would. The smooth model (mean-value analysis) at the lockstep
    # step's own calibration says how much: its measurement reached 0.53-0.72 of it in 15 runs.
    # Against the varied waits' own step, each is taken as a share of its own prediction, since
    # the two steps are two moments of a host whose speed drifts: once, the varied step's rate
    # was 0.92 of the lockstep one's where the shared core's CPU per request was 4.3 ms before the
    # lockstep step and about 5.6 ms before the varied one. Lockstep's share over the varied
    # step's was 0.61-0.84 in 23 census runs (the raw rates' ratio 0.59-0.78 in 15).
    assert len(lockstep) == 1, summary
    [lock] = lockstep
    shared_ms = lock["calibration"]["load_cores_cpu_ms"]
    smooth = mean_value_analysis(lockstep_pool, data["params"]["query_ms"] + shared_ms, shared_ms,
                                 lock["extra"]["postgres_cores"])
    within(f"{lock['name']} req/s over the smooth model", lock["requests_per_sec"] / smooth, high=0.85,
           context=summary)
    within(f"{lock['name']}'s share of the smooth model over pool={lockstep_pool}'s of its prediction",
           lock["requests_per_sec"] / smooth / by_pool[lockstep_pool]["measured_over_predicted"], high=0.95,
           context=summary)
    # The model predicts lockstep as a range (pul.model.CONVOY): at worst the perfect convoy, every
    # connection back at the same moment, N / (wait + N x CPU per request / cores), the prediction's
    # lower end; any drift between the queries (wake-ups, the network) raises it, up to the smooth
    # prediction, the upper end. A model that missed the convoy would predict the smooth plateau
    # alone, 1.5-3x the floor, and the check above catches the step far below it.
    assert lock["bound_by"] == "database CPU" and "in lockstep" in lock["prediction"], lock
    upper = lock.get("predicted_upper_requests_per_sec")
    assert upper and upper == pytest.approx(lock["extra"]["convoy"]["smooth_requests_per_sec"]), lock
    within(f"{lock['name']} over the convoy floor", lock["measured_over_predicted"], 0.85)
    within(f"{lock['name']} over the smooth upper end", lock["requests_per_sec"] / upper, high=1.10)
    # The model's band (0.85-1.10) where it names the bound: the pools well below the corner by
    # their threads. Near the corner (the threads' bound would keep PostgreSQL's core more than
    # half busy) the queries start to queue for that core, and a threads-bound step lands below its
    # bound: pool=16 measured 0.77 on a fresh CI machine, with PostgreSQL's CPU per request 4.75 ms
    # against the 3.55 ms its calibration found. There the bound holds from above only.
    for v in [by_pool[n] for n in POOLS if by_pool[n]["bound_by"] == "threads"]:
        bound_busy = v["predicted_requests_per_sec"] * v["extra"]["postgres_cpu_ms_per_query"] / 1000 \
            / v["extra"]["postgres_cores"]
        within(f"{v['name']} measured/predicted", v["measured_over_predicted"], 0.85 if bound_busy <= 0.5 else 0.0,
               1.10, context=(round(bound_busy, 2), v["bounds"], v["requests_per_sec"]))
    assert by_pool[4]["bound_by"] == "threads", by_pool[4]["bounds"]
    # The timeline shows that bound: the 4 threads of its dispatcher busy in most samples.
    four = by_pool[4]["timeline"]["pools"][by_pool[4]["pool"]]
    within("pool=4 share of samples with every thread busy", timeline.share_at(four["busy"], 4), 0.8)


@pytest.mark.lifecycle
def test_with_postgres_passes_the_database_and_the_exit_code(isolated):
    env, tmp = isolated
    out = subprocess.run([WITH_POSTGRES, "sh", "-c", 'test -n "$JDBC_DATABASE_URL" && '
                          'test -n "$JDBC_DATABASE_PASSWORD" && echo "$JDBC_DATABASE_URL"; exit 3'],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 3, out.stderr
    assert out.stdout.startswith("jdbc:postgresql://127.0.0.1:"), out.stdout
    _nothing_left(env, tmp)


@pytest.mark.lifecycle
def test_ctrl_c_stops_postgresql_and_removes_the_cluster(isolated):
    env, tmp = isolated
    child = subprocess.Popen([WITH_POSTGRES, "sleep", "120"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp.glob("pul-postgres-*/data/postmaster.pid")):
            assert time.monotonic() < deadline and child.poll() is None, "PostgreSQL did not start"
            time.sleep(0.2)
        time.sleep(1)
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130, output
    _nothing_left(env, tmp)


@pytest.mark.slow
@pytest.mark.lifecycle
def test_a_server_that_fails_leaves_no_database_behind(isolated, tmp_path):
    env, tmp = isolated
    # A JDBC driver class that does not exist (through JAVA_OPTS, which the staged start script
    # reads): Play fails to start, after PostgreSQL did.
    env = {**env, "JAVA_OPTS": "-Ddb.default.driver=org.example.NoSuchDriver"}
    out = subprocess.run([*LAB, "run", "03", "--sweep", "--pools", "4", "--results-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert out.returncode == 5, out.stdout + out.stderr
    assert "starting PostgreSQL" in out.stderr
    _nothing_left(env, tmp)


@pytest.mark.slow
@pytest.mark.lifecycle
def test_ctrl_c_during_a_run_leaves_nothing(isolated, tmp_path):
    env, tmp = isolated
    child = subprocess.Popen([*LAB, "run", "03", "--sweep", "--pools", "4", "--results-dir", str(tmp_path)],
                             cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        deadline = time.monotonic() + 300
        for line in child.stdout:
            seen.append(line)
            if "warm-up round" in line:
                break
            assert time.monotonic() < deadline, "".join(seen)
        child.send_signal(signal.SIGINT)
        rest, _ = child.communicate(timeout=90)
    finally:
        child.kill()
    assert child.returncode == 130, "".join(seen) + (rest or "")
    _nothing_left(env, tmp)


def test_database_url_is_honoured_and_checked():
    sys.path.insert(0, str(REPO / "scripts"))
    from pul import postgres
    from pul.errors import UsageError

    db = postgres.from_url("postgresql://app:s%40cret@db.example:6543/shop?sslmode=disable")
    assert db.jdbc_url == "jdbc:postgresql://db.example:6543/shop?sslmode=disable"
    assert (db.username, db.password) == ("app", "s@cret")
    assert "s@cret" not in db.description and "s%40cret" not in db.description
    assert postgres.from_url("jdbc:postgresql://h/d?user=u").username == "u"
    with pytest.raises(UsageError):
        postgres.from_url("mysql://u:p@h/d")
