#!/usr/bin/env bash
# Load for lab 04. Every filter set-up serves the same /status action.
#   status  /status through the server's own chain, chosen when it starts
#           (-Dlab.filters=..., -Dlab.chain-length=N): `--thorough` runs
#   setup   /setup/$SETUP/status through the chain SETUP names, one of the
#           server's lab.setups (default none): one server for every set-up
# `scripts/lab run 04` calls it with ab (and wrk, with --thorough); by hand,
# against a server you started yourself:
#   KEEP_ALIVE=1 CONCURRENCY=50 REQUESTS=200000 TIME_LIMIT=5 ./bench.sh status
#   SETUP=plain-x10 KEEP_ALIVE=1 REQUESTS=200000 TIME_LIMIT=5 ./bench.sh setup
#   LOAD_TOOL=wrk CONCURRENCY=50 DURATION=5 ./bench.sh status
set -euo pipefail
# shellcheck source=../../scripts/lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/bench.sh"

# ANCHOR: variants
declare -A PATHS=(
  [status]=/status
  [setup]=/setup/${SETUP:-none}/status
)
# ANCHOR_END: variants

bench_main "$@"
