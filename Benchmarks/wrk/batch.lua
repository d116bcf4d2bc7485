-- wrk script for Benchmarks/ingest.sh: POST /v1/events with generated v1 `delivered` events.
--
-- Settings come from the environment (the key stays off the command line):
--   INGEST_KEY      ingest API key (required)
--   INGEST_BATCH    events per request (default 100)
--   INGEST_TAG      0-4095, distinguishes the event ids of one run's phases (default 0)
--   INGEST_RATE     total requests/s to pace to over all threads; unset or 0 = as fast as possible
--   INGEST_THREADS  wrk's -t, needed to split INGEST_RATE between threads (default 2)
--   INGEST_IDS      time (default): time-ordered ids, as EngageClient makes them (UUIDv7 layout);
--                   random: ids that land all over the index, as client-made v4 UUIDs do
--
-- Event ids are unique without coordination: MMMMMMMM-MMMM-7TTT-8HHH-CCCCCCCCCCCC, where M is the
-- request's Unix time in milliseconds (with INGEST_IDS=random: RRRRRRRR-RRRR-4TTT-..., R random),
-- T the tag, H the wrk thread and C a per-thread counter. The rest of each event (about 330 bytes on the
-- wire) comes from 997 precomputed variants; Benchmarks/copy-rows.sql builds the \copy
-- baseline's rows from the same formulas.
--
-- done() prints one `wrk.result key=value ...` line (latencies in microseconds, as wrk keeps them).

local ffi_ok, ffi = pcall(require, "ffi")
if ffi_ok then
  ffi_ok = pcall(ffi.cdef, [[
    typedef struct { long tv_sec; long tv_nsec; } ingest_bench_timespec;
    int clock_gettime(int clock_id, ingest_bench_timespec *tp);
  ]])
end
local timespec = ffi_ok and ffi.new("ingest_bench_timespec") or nil

-- Seconds (with fraction) on the given clock: 0 wall clock, 1 monotonic.
local function clock(id)
  if timespec then
    ffi.C.clock_gettime(id, timespec)
    return tonumber(timespec.tv_sec) + tonumber(timespec.tv_nsec) / 1e9
  end
  return os.time()
end

local function env_number(name, default)
  local value = tonumber(os.getenv(name) or "")
  if value == nil then return default end
  return value
end

local batch = env_number("INGEST_BATCH", 100)
local tag = env_number("INGEST_TAG", 0) % 4096
local rate = env_number("INGEST_RATE", 0)
local threads_count = math.max(1, env_number("INGEST_THREADS", 2))
local key = os.getenv("INGEST_KEY") or ""
local random_ids = os.getenv("INGEST_IDS") == "random"

-- Main state: one entry per thread, so done() can add up their counters.
local threads = {}
local next_thread_id = 0

function setup(thread)
  thread:set("thread_id", next_thread_id)
  next_thread_id = next_thread_id + 1
  table.insert(threads, thread)
end

-- Thread state.
local thread_hex
local counter = 0
-- Globals, not locals: done() reads them through thread:get.
accepted, duplicates, non200, first_problem = 0, 0, 0, ""
local variants = {}
local interval, next_slot = 0, 0

function init(args)
  local id = thread_id or 0
  thread_hex = string.format("%03x", id % 4096)
  math.randomseed(1000003 * (id + 1) + tag)
  local categories = { "new_photo", "chat_message", "promo_sale", "breaking_news" }
  for v = 0, 996 do
    variants[v + 1] = {
      string.format('","device_id":"device-%d","category":"%s","occurred_at":"', (v * 7919) % 50000, categories[v % 4 + 1]),
      string.format('","attachment":{"kind":"image","format":"jpeg","bytes":%d,"source":"%s","download_ms":%d},'
        .. '"outcome":"attached","processing_ms":%d,"time_will_expire":false,"network":"%s","strategy":"full"}',
        150000 + (v * 89) % 90000, v % 5 == 0 and "cache" or "network", 300 + (v * 13) % 1700,
        350 + (v * 17) % 1800, v % 2 == 0 and "wifi" or "cellular"),
    }
  end
  wrk.method = "POST"
  wrk.path = "/v1/events"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. key
  if rate > 0 then interval = threads_count / rate end
end

-- Pacing for a fixed total rate: each request takes the thread's next free slot, so the thread's
-- connections together send `rate / threads` requests per second (never bursting to catch up).
function delay()
  if interval <= 0 then return 0 end
  local now = clock(1)
  if next_slot < now then next_slot = now end
  local wait = next_slot - now
  next_slot = next_slot + interval
  return math.floor(wait * 1000 + 0.5)
end

function request()
  local wall = clock(0)
  local seconds = math.floor(wall)
  local occurred = os.date("!%Y-%m-%dT%H:%M:%S", seconds) .. string.format(".%03dZ", math.floor((wall - seconds) * 1000))
  -- Milliseconds as two 24-bit halves: %x of a number past 2^31 is not portable across Luas.
  local milliseconds = math.floor(wall * 1000)
  local time_high = string.format("%06x", math.floor(milliseconds / 16777216))
  local time_low = string.format("%06x", milliseconds % 16777216)
  local time_prefix = string.sub(time_high, 1, 6) .. string.sub(time_low, 1, 2) .. "-" .. string.sub(time_low, 3, 6) .. "-7"
  local parts = { "[" }
  local n = 1
  for i = 1, batch do
    local c = string.format("%012x", counter)
    local variant = variants[counter % 997 + 1]
    counter = counter + 1
    local prefix = time_prefix
    if random_ids then prefix = string.format("%08x-%04x-4", math.random(0, 0x7fffffff), math.random(0, 0xffff)) end
    parts[n + 1] = string.format('{"event_id":"%s%03x-8%s-%s","type":"delivered","notification_id":"apns-%s%s',
      prefix, tag, thread_hex, c, thread_hex, c)
    parts[n + 2] = variant[1]
    parts[n + 3] = occurred
    parts[n + 4] = variant[2]
    n = n + 4
    if i < batch then n = n + 1; parts[n] = "," end
  end
  parts[n + 1] = "]"
  return wrk.format(nil, nil, nil, table.concat(parts))
end

function response(status, headers, body)
  if status == 200 then
    accepted = accepted + (tonumber(string.match(body, '"accepted":(%d+)')) or 0)
    duplicates = duplicates + (tonumber(string.match(body, '"duplicates":(%d+)')) or 0)
  else
    non200 = non200 + 1
    if first_problem == "" then first_problem = status .. " " .. string.sub(body or "", 1, 200) end
  end
end

function done(summary, latency, requests)
  local total_accepted, total_duplicates, total_non200, problem = 0, 0, 0, ""
  for _, thread in ipairs(threads) do
    total_accepted = total_accepted + (thread:get("accepted") or 0)
    total_duplicates = total_duplicates + (thread:get("duplicates") or 0)
    total_non200 = total_non200 + (thread:get("non200") or 0)
    if problem == "" then problem = thread:get("first_problem") or "" end
  end
  local e = summary.errors
  io.write(string.format(
    "wrk.result requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d mean_us=%.0f "
      .. "accepted=%d duplicates=%d non200=%d connect_errors=%d read_errors=%d write_errors=%d timeouts=%d clock=%s\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean, total_accepted, total_duplicates, total_non200,
    e.connect, e.read, e.write, e.timeout, timespec and "ffi" or "os.time"))
  if problem ~= "" then
    io.write("wrk.problem " .. string.gsub(problem, "%s+", " ") .. "\n")
  end
end
