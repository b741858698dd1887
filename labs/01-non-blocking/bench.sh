#!/usr/bin/env bash
# ApacheBench load for lab 01. `scripts/lab run 01` calls it for every variant;
# by hand, against a server you started yourself:
#   BASE_URL=http://127.0.0.1:9000 CONCURRENCY=50 REQUESTS=2000 ./bench.sh java-blocking
set -euo pipefail
# shellcheck source=../../scripts/lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/bench.sh"

# ANCHOR: variants
declare -A PATHS=(
  [java-blocking]=/java/blocking
  [java-offloaded]=/java/offloaded
  [scala-blocking]=/scala/blocking
  [scala-offloaded]=/scala/offloaded
  [status]=/status
)
# ANCHOR_END: variants

bench_main "$@"
