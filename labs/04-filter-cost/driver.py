"""Lab 04: what an HTTP filter costs (none, Play's defaults, chains of no-op filters, a timing filter).

Two ways to measure, the same set-ups and checks:
- default: one server offers every set-up side by side (-Dlab.setups), each request choosing its
  filter chain by its path (/setup/plain-x10/status, read by the app's SetupRequestHandler). The
  server warms up once, until its JIT goes quiet, then each set-up briefly; short runs, ab only.
  A workshop's few minutes.
- --thorough: one fresh server per set-up (-Dlab.filters, -Dlab.chain-length), each warmed up
  until its JIT goes quiet, longer runs, ab and wrk. The book's committed run; about 20 minutes.
The requests are nearly free, so the measurement is about CPU per request: keep-alive on,
fixed-time runs repeated, and the server's and the load generator's CPU recorded to say which of
them was the limit.
"""

from __future__ import annotations

import argparse
import json

from pul.errors import LabError, UsageError
from pul.lab import Lab, Prediction, Services, Step

# The load generator was the limit if it used this share of its core; otherwise the server was,
# if it used this share of its own (other programs on a shared machine may take the rest).
LOAD_SATURATED = 0.90
SERVER_SATURATED = 0.75
BASELINE = "none"
BASELINE_AGAIN = "none-again"
KINDS = ("plain", "essential", "java-plain", "java-essential")
NO_CSRF = "play-defaults-no-csrf"
CSRF_FILTER = "play.filters.csrf.CSRFFilter"
WARMUP_MIN_ROUNDS = 6
WARMUP_SETTLED = 0.05  # two rounds in a row this close
# The JIT may spend at most this share of the last warm-up round compiling. On the server's one
# core it compiles for 30-50 s before it goes quiet (measured with jstat, 2026-11-23), and the
# throughput climbs meanwhile: two rounds that agree by chance are not enough.
WARMUP_JIT_QUIET = 0.10
WARMUP_MAX_ROUNDS = 60  # 2 minutes; the committed run needed up to 31 rounds (plain-x10)
# On the shared server, after the first set-up's warm-up has compiled Play's and Akka's request path,
# each other set-up only brings its own filters' code: a few rounds, still until the JIT is quiet.
# A long Scala Filter chain's rate swings by more than 5% from round to round with the JIT quiet
# (measured: plain-x10 used up 15 rounds that way in two of four runs), so cap what agreement may cost.
# The interleaved runs and their calibration before the middle one absorb some of what is left of
# the drift: in a run where play-defaults and plain-x10 used all of 8 rounds, they measured 1.00 and
# 1.08 of their bound. 6 keeps the default run within 3 minutes with the baseline's extra runs.
WARMUP_NEXT_MIN_ROUNDS = 2
WARMUP_NEXT_MAX_ROUNDS = 6
# Every cost subtracts the baseline's time per request, so the baseline (both copies) gets this
# many runs more than the other set-ups: its median's noise is in every cost.
BASELINE_EXTRA_RUNS = 2
DEFAULT, THOROUGH = "default", "thorough"
# What --thorough changes when --repeat / --seconds are not given (the default mode's are in lab.toml).
THOROUGH_PARAMS = {"repeat": 5, "seconds": 2, "chain_lengths": "1,3,10", "java_chain_lengths": "1,3,10"}


def chain_name(variant: str) -> str:
    """The app's name of a variant's filter chain (lab.setups): the variant's, but for the repeat."""
    return BASELINE if variant == BASELINE_AGAIN else variant


def parse_lengths(text: str, option: str) -> tuple[int, ...]:
    try:
        lengths = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"{option} takes a comma-separated list of chain lengths, e.g. 1,10 (got {text!r})")
    if not lengths or any(n < 1 for n in lengths):
        raise UsageError(f"{option}: every chain length must be at least 1 (got {text!r})")
    return tuple(sorted(set(lengths)))


class FilterCost(Lab):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        super().add_arguments(parser)
        d = self.defaults
        for key, language in (("chain_lengths", "Scala"), ("java_chain_lengths", "Java")):
            parser.add_argument("--" + key.replace("_", "-"), default=None, metavar="N,N",
                                help=f"numbers of no-op {language} filters to chain (default {d[key]}, "
                                     f"{THOROUGH_PARAMS[key]} with --thorough)")
        parser.add_argument("--thorough", dest="mode", action="store_const", const=THOROUGH, default=d["mode"],
                            help="the book's run: a fresh server per set-up, each warmed up until its JIT is "
                                 f"quiet, ab and wrk, {THOROUGH_PARAMS['repeat']} runs of "
                                 f"{THOROUGH_PARAMS['seconds']} s each (about 20 minutes; default: one server for "
                                 "every set-up, ab only, a few minutes)")
        parser.add_argument("--repeat", type=int, default=None, metavar="N",
                            help=f"measured runs per set-up and load tool (default {d['repeat']}, "
                                 f"{THOROUGH_PARAMS['repeat']} with --thorough)")
        parser.add_argument("--seconds", type=int, default=None, metavar="S",
                            help=f"length of each run and warm-up round, in seconds (default {d['seconds']}, "
                                 f"{THOROUGH_PARAMS['seconds']} with --thorough)")

    def params(self, options: argparse.Namespace) -> dict:
        params = super().params(options)
        mode_defaults = THOROUGH_PARAMS if params["mode"] == THOROUGH else self.defaults
        for key in ("repeat", "seconds", "chain_lengths", "java_chain_lengths"):
            if params[key] is None:
                params[key] = mode_defaults[key]
            elif isinstance(params[key], int) and params[key] < 1:
                raise UsageError(f"--{key} must be at least 1 (got {params[key]})")
        parse_lengths(params["chain_lengths"], "--chain-lengths")
        parse_lengths(params["java_chain_lengths"], "--java-chain-lengths")
        return params

    def server_properties(self, params: dict) -> dict[str, str]:
        return {}  # every step carries its own set-up

    def setups(self, params: dict) -> list[tuple[str, str, int]]:
        """(variant, lab.filters set-up, chain length), in the order they are measured."""
        setups: list[tuple[str, str, int]] = [(BASELINE, "none", 1), ("play-defaults", "play-defaults", 1),
                                              (NO_CSRF, "play-defaults", 1)]
        for kind in ("plain", "essential"):
            setups += [(f"{kind}-x{n}", kind, n) for n in parse_lengths(params["chain_lengths"], "")]
        for kind in ("java-plain", "java-essential"):
            setups += [(f"{kind}-x{n}", kind, n) for n in parse_lengths(params["java_chain_lengths"], "")]
        # The baseline once more at the end: how far a repeat drifts (--thorough: on a fresh server).
        return setups + [("logging-plain", "logging-plain", 1), ("logging-essential", "logging-essential", 1),
                         (BASELINE_AGAIN, "none", 1)]

    def steps(self, params: dict) -> list[Step]:
        thorough = params.get("mode", DEFAULT) == THOROUGH
        setups = self.setups(params)
        # The default mode's one server offers every chain; each request names its own.
        shared = {"lab.setups": ",".join(dict.fromkeys(chain_name(name) for name, _, _ in setups))}
        steps = []
        for index, (name, filters, length) in enumerate(setups):
            first = index == 0 or thorough
            steps.append(Step(
                name=name, concurrency=params["concurrency"],
                # An upper bound only: each run lasts `seconds`.
                requests=1_000_000, seconds=params["seconds"],
                repeat=params["repeat"] + (BASELINE_EXTRA_RUNS if filters == "none" else 0),
                load_tools=("ab", "wrk") if thorough else ("ab",), keep_alive=True,
                # On the one server, run r of every chain before run r + 1 of any: a drift over the
                # run then weighs on every chain alike, and the baseline's two copies (the first
                # chain and the last) differ by the noise, not by how far the run drifted.
                interleave=not thorough,
                # Nearly free requests: the JIT's progress shows for tens of seconds, so a fresh server
                # warms up for at least WARMUP_MIN_ROUNDS rounds, until two agree within 5% and the JIT
                # has gone quiet. On the shared server, the later set-ups need only their own filters
                # compiled; the baseline's repeat, none at all (its chain is the first one's).
                warmup_requests=0 if name == BASELINE_AGAIN and not thorough else 1_000_000,
                warmup_settled=WARMUP_SETTLED, warmup_jit_quiet=WARMUP_JIT_QUIET,
                warmup_min_rounds=WARMUP_MIN_ROUNDS if first else WARMUP_NEXT_MIN_ROUNDS,
                warmup_max_rounds=WARMUP_MAX_ROUNDS if first else WARMUP_NEXT_MAX_ROUNDS,
                **({"endpoint": "status", "fresh_server": name == BASELINE_AGAIN,
                    "setup": {"lab.filters": filters, "lab.chain-length": str(length),
                              # Play's defaults minus CSRF: what the CSRF filter costs on its own.
                              **({"play.filters.disabled.0": CSRF_FILTER} if name == NO_CSRF else {})}}
                   if thorough else
                   {"endpoint": "setup", "setup": shared}),
                extra={"setup": filters, "chain_length": length if filters in KINDS else
                       (0 if filters == "none" else None),
                       "chain": chain_name(name), "server": "own" if thorough else "shared",
                       **({} if thorough else {"bench_env": {"SETUP": chain_name(name)}})}))
        return steps

    # -- checks -----------------------------------------------------------
    def inspect_server(self, server, services: Services) -> dict:
        # A new server: verify_step's request counts start again.
        self._counts = None
        return super().inspect_server(server, services)

    def verify_step(self, step: Step, server, record: dict, services: Services) -> None:
        """The running server applied exactly this set-up, and each of its filters saw every request."""
        body = server.get("/filters")
        if body is None:
            raise LabError(f"{step.name}: the server did not answer /filters")
        report_ = json.loads(body)
        sent = sum(run["complete"] for run in record["extra"].get("runs", [])) or record["complete"]
        if step.endpoint == "setup":
            chain = self._verify_shared(step, report_, sent)
        else:
            chain = report_["filters"]
            filters = step.setup["lab.filters"]
            if report_["setup"] != filters:
                raise LabError(f"{step.name}: the server ran set-up {report_['setup']!r}, not {filters!r}")
            for position, filter_ in enumerate(chain):
                if filter_["calls"] is not None and filter_["calls"] < sent:
                    raise LabError(f"{step.name}: filter {position} ({filter_['class']}) ran {filter_['calls']} "
                                   f"times but {sent} requests were measured: the set-up was not the one measured")
        expected_count = {"none": 0, "play-defaults": None, "logging-plain": 1,
                          "logging-essential": 1}.get(step.extra["setup"], step.extra["chain_length"])
        if expected_count is not None and len(chain) != expected_count:
            raise LabError(f"{step.name}: expected {expected_count} filters, the server has {len(chain)}")
        if step.name == NO_CSRF and (not chain or any(f["class"] == CSRF_FILTER for f in chain)):
            raise LabError(f"{step.name}: expected Play's defaults without {CSRF_FILTER}, got "
                           f"{[f['class'] for f in chain]}")
        record["extra"]["filters"] = [f["class"] for f in chain]

    def _verify_shared(self, step: Step, report_: dict, sent: int) -> list[dict]:
        """On the shared server: the step's requests went through its own chain, every filter of it
        saw each one, and no other chain served more than stragglers meanwhile. Returns the chain."""
        setups = report_.get("setups") or {}
        name = step.extra["chain"]
        if name not in setups:
            raise LabError(f"{step.name}: the server offers no chain {name!r} (it has: {', '.join(setups)})")
        counts = {n: (s["requests"], [f["calls"] for f in s["filters"]]) for n, s in setups.items()}
        # Since the last step's check: before it, every set-up's warm-up also counted.
        previous = getattr(self, "_counts", None)
        self._counts = counts
        requests, calls = counts[name]
        if previous is not None:
            requests -= previous[name][0]
            calls = [c if c is None else c - p for c, p in zip(calls, previous[name][1])]
        if requests < sent:
            raise LabError(f"{step.name}: the server applied chain {name!r} to {requests} requests, but {sent} "
                           "were measured: the requests did not all go where the step meant")
        for position, (filter_, ran) in enumerate(zip(setups[name]["filters"], calls)):
            if ran is not None and ran < sent:
                raise LabError(f"{step.name}: filter {position} ({filter_['class']}) of chain {name!r} ran {ran} "
                               f"times but {sent} requests were measured")
        if previous is not None:
            others = {n: c[0] - previous[n][0] for n, c in counts.items() if n != name and n in previous}
            # A run that ends on time leaves up to `concurrency` requests unanswered, which the server
            # may count after the last check.
            strays = {n: d for n, d in others.items() if d > step.concurrency}
            if strays:
                raise LabError(f"{step.name}: while it measured chain {name!r}, other chains served requests too "
                               f"({strays}): the measurement mixed set-ups")
        return setups[name]["filters"]

    # -- prediction -------------------------------------------------------
    def predict(self, step: Step, pools: dict, params: dict) -> Prediction:
        return Prediction(None, "see the chapter: cost per filter, not a pool bound")
