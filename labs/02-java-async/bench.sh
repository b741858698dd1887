#!/usr/bin/env bash
# ApacheBench load for lab 02. `scripts/lab run 02` calls it for every variant;
# by hand, against a server you started yourself:
#   BASE_URL=http://127.0.0.1:9000 CONCURRENCY=50 REQUESTS=2000 ./bench.sh commonpool
set -euo pipefail
# shellcheck source=../../scripts/lib/bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/bench.sh"

# ANCHOR: variants
declare -A PATHS=(
  [blocking]=/blocking
  [commonpool]=/commonpool
  [default-ec]=/default-ec
  [custom-ec]=/custom-ec
  [ws]=/ws
  [status]=/status
)
# ANCHOR_END: variants

bench_main "$@"
