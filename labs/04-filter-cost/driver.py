"""Lab 04: what an HTTP filter costs (none, Play's defaults, chains of no-op filters, a timing filter).

Every set-up is a server configuration of its own (-Dlab.filters, -Dlab.chain-length), so the
driver starts one server per step. The requests are nearly free, so the measurement is about
CPU per request: keep-alive on, fixed-time runs repeated, ab and wrk both, and the server's and
the load generator's CPU recorded to say which of them was the limit.
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
        parser.add_argument("--chain-lengths", default=d["chain_lengths"], metavar="N,N",
                            help=f"numbers of no-op Scala filters to chain (default {d['chain_lengths']})")
        parser.add_argument("--java-chain-lengths", default=d["java_chain_lengths"], metavar="N,N",
                            help=f"numbers of no-op Java filters to chain (default {d['java_chain_lengths']})")
        parser.add_argument("--repeat", type=int, default=d["repeat"], metavar="N",
                            help=f"measured runs per set-up and load tool (default {d['repeat']})")
        parser.add_argument("--seconds", type=int, default=d["seconds"], metavar="S",
                            help=f"length of each run and warm-up round, in seconds (default {d['seconds']})")

    def params(self, options: argparse.Namespace) -> dict:
        params = super().params(options)
        parse_lengths(params["chain_lengths"], "--chain-lengths")
        parse_lengths(params["java_chain_lengths"], "--java-chain-lengths")
        return params

    def server_properties(self, params: dict) -> dict[str, str]:
        return {}  # every step carries its own set-up

    def steps(self, params: dict) -> list[Step]:
        setups: list[tuple[str, str, int]] = [(BASELINE, "none", 1), ("play-defaults", "play-defaults", 1),
                                              (NO_CSRF, "play-defaults", 1)]
        for kind in ("plain", "essential"):
            setups += [(f"{kind}-x{n}", kind, n) for n in parse_lengths(params["chain_lengths"], "")]
        for kind in ("java-plain", "java-essential"):
            setups += [(f"{kind}-x{n}", kind, n) for n in parse_lengths(params["java_chain_lengths"], "")]
        setups += [("logging-plain", "logging-plain", 1), ("logging-essential", "logging-essential", 1),
                   # The baseline once more, on a fresh server at the end: how far a repeat run drifts.
                   (BASELINE_AGAIN, "none", 1)]
        return [Step(name=name, endpoint="status", concurrency=params["concurrency"],
                     # An upper bound only: each run lasts `seconds`.
                     requests=1_000_000, seconds=params["seconds"], repeat=params["repeat"],
                     load_tools=("ab", "wrk"), keep_alive=True, warmup_requests=1_000_000,
                     # Nearly free requests: the JIT's progress shows for tens of seconds, so warm
                     # up for at least WARMUP_MIN_ROUNDS rounds, until two agree within 5% and the
                     # JIT has gone quiet.
                     warmup_settled=WARMUP_SETTLED, warmup_min_rounds=WARMUP_MIN_ROUNDS,
                     warmup_max_rounds=WARMUP_MAX_ROUNDS, warmup_jit_quiet=WARMUP_JIT_QUIET,
                     setup={"lab.filters": filters, "lab.chain-length": str(length),
                            # Play's defaults minus CSRF: what the CSRF filter costs on its own.
                            **({"play.filters.disabled.0": CSRF_FILTER} if name == NO_CSRF else {})},
                     fresh_server=name == BASELINE_AGAIN,
                     extra={"setup": filters, "chain_length": length if filters in KINDS else
                            (0 if filters == "none" else None)})
                for name, filters, length in setups]

    # -- checks -----------------------------------------------------------
    def verify_step(self, step: Step, server, record: dict, services: Services) -> None:
        """The running server applied exactly this set-up, and each of its filters saw every request."""
        body = server.get("/filters")
        if body is None:
            raise LabError(f"{step.name}: the server did not answer /filters")
        report_ = json.loads(body)
        filters, length = step.setup["lab.filters"], int(step.setup["lab.chain-length"])
        if report_["setup"] != filters:
            raise LabError(f"{step.name}: the server ran set-up {report_['setup']!r}, not {filters!r}")
        expected_count = {"none": 0, "play-defaults": None, "logging-plain": 1, "logging-essential": 1}.get(filters, length)
        chain = report_["filters"]
        if expected_count is not None and len(chain) != expected_count:
            raise LabError(f"{step.name}: expected {expected_count} filters, the server has {len(chain)}")
        if step.name == NO_CSRF and (not chain or any(f["class"] == CSRF_FILTER for f in chain)):
            raise LabError(f"{step.name}: expected Play's defaults without {CSRF_FILTER}, got "
                           f"{[f['class'] for f in chain]}")
        sent = sum(run["complete"] for run in record["extra"].get("runs", [])) or record["complete"]
        for position, filter_ in enumerate(chain):
            if filter_["calls"] is not None and filter_["calls"] < sent:
                raise LabError(f"{step.name}: filter {position} ({filter_['class']}) ran {filter_['calls']} times "
                               f"but {sent} requests were measured: the set-up was not the one measured")
        record["extra"]["filters"] = [f["class"] for f in chain]

    # -- prediction -------------------------------------------------------
    def predict(self, step: Step, pools: dict, params: dict) -> Prediction:
        return Prediction(None, "see the chapter: cost per filter, not a pool bound")
