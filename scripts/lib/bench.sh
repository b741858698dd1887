# shellcheck shell=bash
# Shared by every lab's bench.sh: runs ApacheBench against one variant's URL.
#
# A lab's bench.sh declares PATHS (variant name -> URL path) and calls
# bench_main "$@". Settings come from the environment, so the same script
# serves a reader typing it by hand and the lab driver:
#   BASE_URL         server to load (default http://127.0.0.1:9000)
#   CONCURRENCY      requests in flight at once (ab -c, default 50)
#   REQUESTS         requests in all (ab -n, default 2000)
#   TIME_LIMIT       seconds at most, whatever REQUESTS says (ab -t, default 120)
#   PERCENTILES_CSV  file for ab's latency percentiles (ab -e), optional
#   KEEP_ALIVE       1 to reuse connections (ab -k), default 0
#   AB_EXTRA         more ab options, split on spaces (e.g. "-p body.json -T application/json")
#   LOAD_TOOL        ab (default) or wrk: wrk runs for DURATION seconds instead of
#                    REQUESTS requests, always keeps connections alive, and prints a
#                    "PUL-WRK ..." summary line (scripts/lib/wrk-report.lua)
#   DURATION         seconds of load for wrk (wrk -d, default 10)
#   WRK_THREADS      wrk threads (wrk -t, default 2)

bench_usage() {
  echo "usage: $(basename "$0") VARIANT    (variants: ${!PATHS[*]})" >&2
  echo "       BASE_URL, CONCURRENCY, REQUESTS, TIME_LIMIT, PERCENTILES_CSV, KEEP_ALIVE, AB_EXTRA: see scripts/lib/bench.sh" >&2
  exit 2
}

bench_wrk() {
  # wrk has no request count: it runs for a time. Its Lua hook writes the same
  # percentile file as ab -e, so both tools are read alike.
  local script_dir
  script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  local args=(-t "${WRK_THREADS:-2}" -c "${CONCURRENCY:-50}" -d "${DURATION:-10}s" --timeout 30s
    -s "$script_dir/wrk-report.lua")
  printf '$ wrk %s %s\n' "${args[*]}" "$1"
  exec wrk "${args[@]}" "$1"
}

bench_main() {
  if [[ ${1:-} == --list ]]; then
    printf '%s\n' "${!PATHS[@]}" | sort
    return 0
  fi
  [[ $# -eq 1 && -n ${PATHS[${1:-}]+set} ]] || bench_usage
  local url="${BASE_URL:-http://127.0.0.1:9000}${PATHS[$1]}"
  if [[ ${LOAD_TOOL:-ab} == wrk ]]; then
    bench_wrk "$url"
  elif [[ ${LOAD_TOOL:-ab} != ab ]]; then
    echo "$(basename "$0"): LOAD_TOOL must be ab or wrk (got '${LOAD_TOOL}')" >&2
    exit 2
  fi
  # -t before -n: ab's -t alone implies 50,000 requests; -n after it sets our count.
  local args=(-l -r -s 30 -t "${TIME_LIMIT:-120}" -n "${REQUESTS:-2000}" -c "${CONCURRENCY:-50}")
  [[ ${KEEP_ALIVE:-0} == 1 ]] && args+=(-k)
  [[ -n ${PERCENTILES_CSV:-} ]] && args+=(-e "$PERCENTILES_CSV")
  # shellcheck disable=SC2206  # AB_EXTRA is a list of words on purpose
  [[ -n ${AB_EXTRA:-} ]] && args+=(${AB_EXTRA})
  printf '$ ab %s %s\n' "${args[*]}" "$url"
  exec ab "${args[@]}" "$url"
}
