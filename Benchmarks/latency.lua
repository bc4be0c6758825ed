-- wrk script for the latency figures of Benchmarks/delivery.sh and Benchmarks/v1.sh: a paced load of single-token
-- messages.
--
--   wrk -t N -c N ... -s Benchmarks/latency.lua URL -- RATE OUTDIR N [SHAPE]
--
-- SHAPE is `legacy` (the default: {"to": TOKEN, ...}) or `v1` ({"message": {"token": TOKEN, ...}}, the same content
-- as FCM HTTP v1 writes it, as ingest.lua's single-v1 mode).
-- POSTs /v1/messages to Herald, one single-token message per request, RATE messages per second in all, spread
-- evenly over the N wrk threads. Run it with exactly one connection per thread (-t N -c N): answers on one
-- keep-alive connection come back in request order, so the k-th answer is the k-th message. Each acknowledged
-- message is written to OUTDIR/ack-THREAD.txt as "TOKEN ACK_US" (wall-clock microseconds when wrk had read the
-- 202), for delivery.sh to join with the stand-in's arrival times. done() prints one "BENCH ..." line.
-- (A separate file from delivery.lua because wrk waits on a timer before every request of a script that defines
-- delay(), which would slow the bare-HTTP baseline.)

local ffi = require("ffi")
ffi.cdef [[
    typedef struct { long tv_sec; long tv_nsec; } herald_timespec;
    int clock_gettime(int clock, herald_timespec *spec);
]]
local CLOCK_REALTIME = 0
local spec = ffi.new("herald_timespec")
local function now_us()
    ffi.C.clock_gettime(CLOCK_REALTIME, spec)
    return tonumber(spec.tv_sec) * 1000000 + math.floor(tonumber(spec.tv_nsec) / 1000)
end

-- The message of ingest.lua (152-byte token, ~200 bytes of data + notification, priority, TTL).
local TOKEN_FILL = string.rep("x", 124)
local PREFIX = '{"to":"'
local SUFFIX = '","priority":"high","time_to_live":3600,'
    .. '"data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87","event":"goal","team":"POR"},'
    .. '"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute.",'
    .. '"sound":"default"}}'
local V1_PREFIX = '{"message":{"token":"'
local V1_SUFFIX = '","data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87","event":"goal","team":"POR"},'
    .. '"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute."},'
    .. '"android":{"priority":"high","ttl":"3600s","notification":{"sound":"default"}}}}'
local HEADERS = { ["Content-Type"] = "application/json" }
prefix, suffix = PREFIX, SUFFIX -- init() may change them; a state that never ran init() sends the legacy shape

local threads = {}
local thread_count = 0

function setup(thread)
    thread_count = thread_count + 1
    thread:set("tid", thread_count)
    table.insert(threads, thread)
end

function init(args)
    rate = tonumber(args[1])
    out = assert(io.open(string.format("%s/ack-%d.txt", args[2], tid), "w"))
    out:setvbuf("line") -- wrk never closes a thread's Lua state: nothing may wait in a buffer at the end
    thread_total = tonumber(args[3])
    local shape = args[4] or "legacy"
    if shape == "v1" then
        prefix, suffix = V1_PREFIX, V1_SUFFIX
    elseif shape == "legacy" then
        prefix, suffix = PREFIX, SUFFIX
    else
        error("SHAPE must be legacy or v1")
    end
    acked, bad, n = 0, 0, 0
    bad_sample = ""
    sent = {}      -- tokens sent on this thread's one connection, oldest first
    first = 1
    start_us = nil -- this thread's first slot
end

-- This thread's k-th message is due at start + k * N / RATE. wrk calls delay() before each request and waits that
-- many milliseconds; a late answer makes the next message leave at once (delay 0).
function delay()
    local t = now_us()
    if start_us == nil then
        -- The threads' schedules are staggered so that, together, they send evenly.
        start_us = t + 200000 + (tid - 1) * 1000000 / rate
    end
    local due = start_us + n * 1000000 * thread_total / rate
    local wait = (due - t) / 1000
    if wait < 0 then return 0 end
    return math.floor(wait + 0.5)
end

local function token(k)
    return string.format("%08xlat%02d%010d:APA91b", (k * 2654435761 + tid * 40503) % 4294967296, tid, k) .. TOKEN_FILL
end

function request()
    if start_us == nil then
        -- wrk calls request() once on the first thread's state to check the script; that request is never sent.
        -- Real requests always come after a delay() call.
        return wrk.format("POST", "/v1/messages", HEADERS, prefix .. token(0) .. suffix)
    end
    n = n + 1
    local t = token(n)
    sent[n] = t
    return wrk.format("POST", "/v1/messages", HEADERS, prefix .. t .. suffix)
end

function response(status, headers, body)
    local at = now_us()
    local t = sent[first]
    sent[first] = nil
    first = first + 1
    if status == 202 and t ~= nil then
        acked = acked + 1
        out:write(t, " ", string.format("%.0f", at), "\n")
    else
        bad = bad + 1
        if bad_sample == "" then bad_sample = status .. " " .. body:sub(1, 200) end
    end
end

-- done(): the shared "BENCH ..." report, next to this script.
done = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "wrk_report.lua")(threads)
