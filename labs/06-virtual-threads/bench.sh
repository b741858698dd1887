#!/usr/bin/env bash
# ApacheBench load for lab 06. `scripts/lab run 06` calls it for every variant;
# by hand, against a server you started yourself (on Java 21 or later for the
# virtual-thread endpoints; with a database for the jdbc-* ones):
#   BASE_URL=http://127.0.0.1:9000 CONCURRENCY=200 REQUESTS=4000 ./bench.sh blocking-virtual
set -euo pipefail
# shellcheck source=../../scripts/lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/bench.sh"

# ANCHOR: variants
declare -A PATHS=(
  [blocking-default]=/blocking/default
  [blocking-pool]=/blocking/pool
  [blocking-per-request-pool]=/blocking/per-request-pool
  [blocking-virtual]=/blocking/virtual
  [scala-virtual]=/scala/virtual
  [virtual-synchronized]=/blocking/virtual-synchronized
  [jdbc-virtual]=/jdbc/virtual
  [jdbc-pool]=/jdbc/pool
  [status]=/status
)
# ANCHOR_END: variants

bench_main "$@"
