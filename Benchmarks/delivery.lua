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

-- done(): the shared "BENCH ..." report, next to this script.
done = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "wrk_report.lua")(threads)
