-- Loaded by the wrk scripts of Benchmarks/ with dofile(): returns a function that, given the script's list of
-- wrk threads, makes its done(). done() sums the per-thread counters `acked`, `bad` and `bad_sample` and prints
-- one "BENCH ..." line (and a "BENCH_BAD_SAMPLE ..." line when a request was refused) for the shell script to read.

return function(threads) return function(summary, latency, requests)
    local ok, failed, sample = 0, 0, ""
    for _, thread in ipairs(threads) do
        ok = ok + thread:get("acked")
        failed = failed + thread:get("bad")
        local s = thread:get("bad_sample")
        if sample == "" and s ~= nil then sample = s end
    end
    local e = summary.errors
    io.write(string.format(
        "BENCH ok=%d bad=%d requests=%d duration_us=%d connect=%d read=%d write=%d status=%d timeout=%d "
            .. "p50_us=%d p99_us=%d\n",
        ok, failed, summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
        latency:percentile(50), latency:percentile(99)))
    if sample ~= "" then
        io.write("BENCH_BAD_SAMPLE ", (sample:gsub("[\r\n]", " ")), "\n")
    end
end end
