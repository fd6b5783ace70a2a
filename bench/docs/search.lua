-- wrk script of bench/docs/speed.py: `search_docs` calls over HTTP (2026-07-28 stateless requests),
-- each with its own id, cycling through a list of queries; every reply must be HTTP 200 with hits.
-- Prints one line "BENCHJSON {...}" as bench/load.lua does.
--
-- Environment:
--   BENCH_QUERIES  the queries, separated by "|"
--   BENCH_LIMIT    requests per thread at most (the count bound; -d is the time bound)

local threads = {}
local next_thread = 0

function setup(thread)
  thread:set("tid", next_thread)
  next_thread = next_thread + 1
  table.insert(threads, thread)
end

local queries, limit = {}, 0
counter, seen, failed = 0, 0, 0
first_failure = nil

function init(args)
  for q in string.gmatch(os.getenv("BENCH_QUERIES"), "[^|]+") do
    table.insert(queries, q)
  end
  limit = tonumber(os.getenv("BENCH_LIMIT") or "0")
  wrk.method = "POST"
end

function request()
  counter = counter + 1
  local query = queries[(counter + tid) % #queries + 1]
  local body = '{"jsonrpc":"2.0","id":' .. tostring(tid * 1000000000 + counter) ..
    ',"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"' .. query ..
    '","limit":10},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
    '"io.modelcontextprotocol/clientCapabilities":{}}}}'
  return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
  seen = seen + 1
  if status ~= 200 or not body or not body:find('"snippet"', 1, true) then
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
