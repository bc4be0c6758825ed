-- wrk script for Benchmarks/ingest.sh.
--
--   wrk ... -s Benchmarks/ingest.lua URL -- MODE OUTDIR TAG [BATCH [TOKENS [AUTHORIZATION]]]
--
-- MODE healthz: GET /healthz, counts 200s.
-- MODE single:  POST /v1/messages, one message with a distinct token per request, counts 202s.
-- MODE single-v1: the same, FCM HTTP v1-shaped ({"message": {...}}) with the same content, counts 202s.
-- MODE batch:   POST /v1/messages/batch of BATCH messages (one distinct token each), counts 200s whose
--               body holds BATCH results of one delivery each and no error.
-- AUTHORIZATION, when given, is sent as the Authorization header of every POST ("Bearer <token>").
-- Every accepted answer body is appended to OUTDIR/MODE-TAG-THREAD.out (OUTDIR "-": none) so the caller can
-- check each acknowledged message id against the database. done() prints one "BENCH ..." line.
--
-- Tokens are 152 bytes like FCM registration tokens. TOKENS "random" (the default) starts them with a
-- scrambled counter, so inserts land all over the token index as real tokens would; "sequential" starts
-- them with the counter, so they append to it (a kinder, unrealistic case). The SQLite baseline in ingest.sh
-- builds the same tokens and must stay in step with token(), TOKEN_FILL, PREFIX and SUFFIX below.

local TOKEN_FILL = string.rep("x", 124)
-- The message around the token: ~200 bytes of data + notification, priority and TTL as a real app sends.
local PREFIX = '{"to":"'
local SUFFIX = '","priority":"high","time_to_live":3600,'
    .. '"data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87","event":"goal","team":"POR"},'
    .. '"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute.",'
    .. '"sound":"default"}}'
-- The same message as FCM HTTP v1 writes it: the same data and notification, priority and TTL under android.
local V1_PREFIX = '{"message":{"token":"'
local V1_SUFFIX = '","data":{"match_id":"m-20260611-por-den","score":"4x3","minute":"87","event":"goal","team":"POR"},'
    .. '"notification":{"title":"Portugal vs. Denmark","body":"Goal! Portugal lead 4-3 in the 87th minute."},'
    .. '"android":{"priority":"high","ttl":"3600s","notification":{"sound":"default"}}}}'
local HEADERS = { ["Content-Type"] = "application/json" }

local threads = {}
local thread_count = 0

function setup(thread)
    thread_count = thread_count + 1
    thread:set("tid", thread_count)
    table.insert(threads, thread)
end

-- (x * 2654435761) mod 2^32, exact in doubles for x < 2^32.
local function scramble(x)
    local lo = x % 65536
    local hi = (x - lo) / 65536
    return (lo * 2654435761 + ((hi * 2654435761) % 4294967296) * 65536) % 4294967296
end

local function token(n)
    if sequential then
        return string.format("%s%02d%010d%08x:APA91b", tag, tid, n, scramble(n)) .. TOKEN_FILL
    end
    return string.format("%08x%s%02d%010d:APA91b", scramble(n), tag, tid, n) .. TOKEN_FILL
end

function init(args)
    mode = args[1]
    local outdir = args[2] or "-"
    tag = args[3] or "x"
    batch = tonumber(args[4] or "500")
    sequential = args[5] == "sequential"
    if args[6] and args[6] ~= "" then HEADERS["Authorization"] = args[6] end
    acked, bad, n = 0, 0, 0
    bad_sample = ""
    if outdir ~= "-" then
        out = io.open(string.format("%s/%s-%s-%d.out", outdir, mode, tag, tid), "w")
        out:setvbuf("full", 1048576)
    end
    if mode == "healthz" then
        healthz_request = wrk.format("GET", "/healthz")
    elseif mode ~= "single" and mode ~= "single-v1" and mode ~= "batch" then
        error("mode must be healthz, single, single-v1 or batch")
    end
end

function request()
    if mode == "healthz" then
        return healthz_request
    elseif mode == "single" then
        n = n + 1
        return wrk.format("POST", "/v1/messages", HEADERS, PREFIX .. token(n) .. SUFFIX)
    elseif mode == "single-v1" then
        n = n + 1
        return wrk.format("POST", "/v1/messages", HEADERS, V1_PREFIX .. token(n) .. V1_SUFFIX)
    else
        local parts = {}
        for i = 1, batch do
            n = n + 1
            parts[i] = PREFIX .. token(n) .. SUFFIX
        end
        return wrk.format("POST", "/v1/messages/batch", HEADERS,
            '{"messages":[' .. table.concat(parts, ",") .. ']}')
    end
end

function response(status, headers, body)
    local ok
    if mode == "healthz" then
        ok = status == 200
    elseif mode == "single" or mode == "single-v1" then
        ok = status == 202
    else
        local _, results = body:gsub('"deliveries":1}', "")
        ok = status == 200 and results == batch and not body:find('"error"', 1, true)
    end
    if ok then
        acked = acked + 1
        if out then out:write(body, "\n") end
    else
        bad = bad + 1
        if bad_sample == "" then bad_sample = status .. " " .. body:sub(1, 400) end
    end
end

-- done(): the shared "BENCH ..." report, next to this script.
done = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "wrk_report.lua")(threads)
