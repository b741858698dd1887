#!/usr/bin/env bash
# Load for lab 04. Every filter set-up serves the same /status; the set-up is
# chosen when the server starts (-Dlab.filters=..., -Dlab.chain-length=N), so
# there is one variant. `scripts/lab run 04` calls it with ab and with wrk; by
# hand, against a server you started yourself:
#   KEEP_ALIVE=1 CONCURRENCY=50 REQUESTS=200000 TIME_LIMIT=5 ./bench.sh status
#   LOAD_TOOL=wrk CONCURRENCY=50 DURATION=5 ./bench.sh status
set -euo pipefail
# shellcheck source=../../scripts/lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/bench.sh"

# ANCHOR: variants
declare -A PATHS=(
  [status]=/status
)
# ANCHOR_END: variants

bench_main "$@"
