-- wrk's end-of-run hook for bench.sh (LOAD_TOOL=wrk): prints one summary line the
-- lab driver parses, and writes latency percentiles 0..100 in ab's -e CSV format
-- to $PERCENTILES_CSV when that is set.
done = function(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    "PUL-WRK requests=%d duration_us=%d non_2xx=%d connect_errors=%d read_errors=%d " ..
    "write_errors=%d timeouts=%d mean_latency_us=%.1f\n",
    summary.requests, summary.duration, errors.status, errors.connect, errors.read,
    errors.write, errors.timeout, latency.mean))
  local path = os.getenv("PERCENTILES_CSV")
  if path and path ~= "" then
    local file = assert(io.open(path, "w"))
    file:write("Percentage served,Time in ms\n")
    for p = 0, 100 do
      local micros = latency:percentile(p)
      if p == 0 then micros = latency.min elseif p == 100 then micros = latency.max end
      file:write(string.format("%d,%.3f\n", p, micros / 1000))
    end
    file:close()
  end
end
