#!/usr/bin/env bash
# Load for lab 05: POSTs a JSON payload file. `scripts/lab run 05` calls it for
# every step of its sweep; by hand, against a server you started yourself:
#   BASE_URL=http://127.0.0.1:9000 CONCURRENCY=8 REQUESTS=20000 ./bench.sh echo
#   PAYLOAD=large CONCURRENCY=64 ./bench.sh echo
# With RATE set, the load is open-loop instead (scripts/openload, not ab);
# ARRIVALS is poisson (random gaps, the default; SEED picks the draw) or even:
#   RATE=300 DURATION=10 ./bench.sh fixed
#   RATE=300 DURATION=10 ARRIVALS=even ./bench.sh fixed
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/lib/bench.sh
source "$here/../../scripts/lib/bench.sh"

# ANCHOR: variants
declare -A PATHS=(
  [echo]=/echo
  [fixed]=/echo/fixed
)
# ANCHOR_END: variants

payload="$here/payloads/${PAYLOAD:-small}.json"
if [[ ! -f $payload ]]; then
  echo "$(basename "$0"): no payload file $payload (PAYLOAD is small or large)" >&2
  exit 2
fi
if [[ $payload == *" "* ]]; then
  echo "$(basename "$0"): the payload path has a space in it, which ab's option list cannot carry: $payload" >&2
  exit 2
fi

if [[ -n ${RATE:-} ]]; then
  [[ $# -eq 1 && -n ${PATHS[${1:-}]+set} ]] || bench_usage
  # ANCHOR: open-loop
  # Open loop: requests leave on a schedule whether or not earlier ones have
  # been answered; latency counts from the scheduled moment. Poisson arrivals
  # come at random, like independent users (gaps averaging 1/RATE, drawn from
  # SEED: the same seed, the same schedule); even ones exactly 1/RATE apart.
  # CONCURRENCY is only a cap here: the most requests allowed in flight at once.
  args=(--rate "$RATE" --duration "${DURATION:-10}" --max-in-flight "${CONCURRENCY:-4000}"
    --arrivals "${ARRIVALS:-poisson}" --body "$payload" --content-type application/json)
  [[ -n ${SEED:-} ]] && args+=(--seed "$SEED")
  [[ -n ${PERCENTILES_CSV:-} ]] && args+=(--percentiles-csv "$PERCENTILES_CSV")
  # ANCHOR_END: open-loop
  exec "$here/../../scripts/openload" "${args[@]}" "${BASE_URL:-http://127.0.0.1:9000}${PATHS[$1]}"
fi

# ANCHOR: post
# Closed loop with ab: POST the payload file as application/json, like the
# write-up's `ab -p echoPayload.json -T application/json`.
# -s 120: wait up to two minutes for a response. At 10,000 in flight a request
# can queue for many seconds, and ab aborts the whole run (printing no report)
# when no socket moves for -s seconds.
export AB_EXTRA="-p $payload -T application/json -s 120 ${AB_EXTRA:-}"
# ANCHOR_END: post
bench_main "$@"
