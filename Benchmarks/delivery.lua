-- wrk script for the bare-HTTP baselines of Benchmarks/delivery.sh.
--
--   wrk ... -s Benchmarks/delivery.lua URL -- BODYFILE PATH SERVERKEY
--
-- POSTs the body in BODYFILE (the request Herald sends to FCM) to PATH of the FCM stand-in with Herald's headers,
-- as fast as the connections allow; counts 200s. done() prints one "BENCH ..." line like ingest.lua's.

local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

local function read_file(path)
    local file = assert(io.open(path, "rb"))
    local text = file:read("*a")
    file:close()
    return text
end

function init(args)
    acked, bad = 0, 0
    bad_sample = ""
    fcm_request = wrk.format("POST", args[2], {
        ["Content-Type"] = "application/json",
        ["Authorization"] = "key=" .. (args[3] or "bench"),
    }, read_file(args[1]))
end

function request()
    return fcm_request
end

function response(status, headers, body)
    if status == 200 then
        acked = acked + 1
    else
        bad = bad + 1
        if bad_sample == "" then bad_sample = status .. " " .. body:sub(1, 200) end
    end
end

function done(summary, latency, requests)
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
end
