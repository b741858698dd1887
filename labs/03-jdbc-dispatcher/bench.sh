#!/usr/bin/env bash
# ApacheBench load for lab 03. `scripts/lab run 03` calls it for every variant;
# by hand, against a server you started yourself (with the pool sizes you chose):
#   BASE_URL=http://127.0.0.1:9000 KEEP_ALIVE=1 CONCURRENCY=64 REQUESTS=1500 ./bench.sh database-dispatcher
# (the driver keeps connections alive, as a proxy in front of the app would).
# With --thorough, the variants differ in the server's configuration (-Dlab.pool-size,
# -Dlab.dispatcher-size), not in the URL: only default-dispatcher calls another action.
# The default mode measures several dispatcher sizes on one server, one per request:
#   THREADS=16 [JITTER=0] ./bench.sh sized     (a server started with -Dlab.dispatcher-sizes=16)
set -euo pipefail
# shellcheck source=../../scripts/lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/bench.sh"

# ANCHOR: variants
declare -A PATHS=(
  [default-dispatcher]="/sales/default-dispatcher?region=3"
  [database-dispatcher]="/sales?region=3"
  [oversized-dispatcher]="/sales?region=3"
  [oversized-connections]="/sales?region=3"
  [sized]="/sales/sized?region=3&threads=${THREADS:-20}&jitter=${JITTER:--1}"
  [status]=/status
)
# ANCHOR_END: variants

bench_main "$@"
