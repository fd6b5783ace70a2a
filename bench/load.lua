-- wrk script of bench/run: POSTs one JSON-RPC request per call, each with its own id (a 2025-era
-- session must never see an id twice), checks every reply, stops each thread after its share of
-- the request budget, and prints one JSON line ("BENCHJSON {...}") with the figures.
--
-- Environment (set by bench/run):
--   BENCH_BODY    the request body, with __ID__ where the request id goes
--   BENCH_EXPECT  text every good reply contains (replies without it count as failed)
--   BENCH_LIMIT   requests per thread at most (the count bound; -d is the time bound)
--   BENCH_THREAD_BASE  first id prefix (so two runs in one session never share ids)

local threads = {}
local next_thread = tonumber(os.getenv("BENCH_THREAD_BASE") or "0")

function setup(thread)
  thread:set("tid", next_thread)
  next_thread = next_thread + 1
  table.insert(threads, thread)
end

local prefix, suffix, expect, limit
counter, seen, failed = 0, 0, 0  -- globals: done() reads them with thread:get
first_failure = nil

function init(args)
  local body = os.getenv("BENCH_BODY")
  local at = body:find("__ID__", 1, true)
  prefix, suffix = body:sub(1, at - 1), body:sub(at + 6)
  expect = os.getenv("BENCH_EXPECT")
  limit = tonumber(os.getenv("BENCH_LIMIT") or "0")
  wrk.method = "POST"
end

function request()
  counter = counter + 1
  return wrk.format(nil, nil, nil, prefix .. tostring(tid * 1000000000 + counter) .. suffix)
end

function response(status, headers, body)
  seen = seen + 1
  if status ~= 200 or not body or not body:find(expect, 1, true) then
    failed = failed + 1
    if not first_failure then
      first_failure = tostring(status) .. " " .. string.sub(body or "", 1, 160)
    end
  end
  if limit > 0 and seen >= limit then
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local bad, why = 0, nil
  for _, thread in ipairs(threads) do
    bad = bad + (thread:get("failed") or 0)
    why = why or thread:get("first_failure")
  end
  if why then
    io.write("FIRSTFAILURE " .. why:gsub("[\r\n]", " ") .. "\n")
  end
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"failed":%d,"socket_errors":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, bad, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
