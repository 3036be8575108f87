-- wrk's requests for Benchmarks/run and Benchmarks/replicas, by WRK_SCRIPT:
--   bid        POST /auctions/{AUCTION}/bids with ever higher amounts: every bid is taken while the
--              connection's order holds (one wrk thread: a shared counter)
--   put        PUT /units/u{0..999}: every request a stored record and a published event
--   contended  every other request a bid on one of AUCTIONS (comma-separated; every client bids on all
--              of them, so replicas contend), the rest PUT /units over 1,000 ids of CLIENT's own. A bid's
--              amount is the clock's microseconds times 8 plus CLIENT (0-7): higher than any bid sent
--              before by any client, so one is refused (409) only when one sent after it was taken first.
-- With HERALD_TOKEN set, every request carries it as a bearer token (a server with --jwt-key).
local mode = os.getenv("WRK_SCRIPT") or "put"
local headers = { ["Content-Type"] = "application/json" }
local token = os.getenv("HERALD_TOKEN")
if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
local counter = 0
local auction = os.getenv("AUCTION") or "1"
local client = tonumber(os.getenv("CLIENT") or "0")
local auctions = {}
for id in string.gmatch(os.getenv("AUCTIONS") or "1", "[^,]+") do auctions[#auctions + 1] = id end
local now
if mode == "contended" then
  local ffi = require("ffi")
  ffi.cdef [[
    typedef struct { long tv_sec; long tv_usec; } herald_timeval;
    int gettimeofday(herald_timeval *tv, void *tz);
  ]]
  now = function()
    local tv = ffi.new("herald_timeval")
    ffi.C.gettimeofday(tv, nil)
    return (tonumber(tv.tv_sec) - 1700000000) * 1000000 + tonumber(tv.tv_usec)
  end
end

local function unit(prefix)
  local status = ({ "healthy", "wounded", "dead" })[counter % 3 + 1]
  return wrk.format("PUT", "/units/" .. prefix .. (counter % 1000), headers, '{"name":"unit ' .. counter .. '","status":"' .. status .. '"}')
end

request = function()
  counter = counter + 1
  if mode == "bid" then
    return wrk.format("POST", "/auctions/" .. auction .. "/bids", headers, '{"bidder":"wrk","amount":' .. counter .. '}')
  elseif mode == "contended" then
    if counter % 2 == 0 then
      local id = auctions[(counter / 2) % #auctions + 1]
      return wrk.format("POST", "/auctions/" .. id .. "/bids", headers,
        '{"bidder":"client ' .. client .. '","amount":' .. string.format("%d", now() * 8 + client) .. '}')
    end
    return unit("c" .. client .. "u")
  end
  return unit("u")
end

done = function(summary, latency, requests)
  io.write(string.format("requests: %d\n", summary.requests))
  io.write(string.format("non-2xx or errors: %d\n", summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
