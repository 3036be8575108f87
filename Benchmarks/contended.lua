-- wrk script for issue 30's writes across replicas: every other request is a bid on one of the same
-- auctions (AUCTIONS, comma-separated ids; every client bids on all of them, so replicas contend), the
-- rest are PUT /units/{id} over 1,000 ids of this client's own. A bid's amount is the microseconds of
-- the clock, times 8, plus CLIENT (0-7): higher than any bid sent earlier by any client, so a bid is
-- refused (409, too low) only when one sent after it was taken first.
--   AUCTIONS=1,2,3 CLIENT=0 wrk -t1 -c16 -d10s -s Benchmarks/contended.lua http://127.0.0.1:8080
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_usec; } herald_timeval;
  int gettimeofday(herald_timeval *tv, void *tz);
]]
local now = ffi.new("herald_timeval")
local client = tonumber(os.getenv("CLIENT") or "0")
local auctions = {}
for id in string.gmatch(os.getenv("AUCTIONS") or "1", "[^,]+") do auctions[#auctions + 1] = id end
local headers = { ["Content-Type"] = "application/json" }
local counter = 0

request = function()
  counter = counter + 1
  if counter % 2 == 0 then
    ffi.C.gettimeofday(now, nil)
    local micros = (tonumber(now.tv_sec) - 1700000000) * 1000000 + tonumber(now.tv_usec)
    local auction = auctions[(counter / 2) % #auctions + 1]
    return wrk.format("POST", "/auctions/" .. auction .. "/bids", headers,
      '{"bidder":"client ' .. client .. '","amount":' .. string.format("%d", micros * 8 + client) .. '}')
  end
  local status = ({ "healthy", "wounded", "dead" })[counter % 3 + 1]
  return wrk.format("PUT", "/units/c" .. client .. "u" .. (counter % 1000), headers,
    '{"name":"unit ' .. counter .. '","status":"' .. status .. '"}')
end

done = function(summary, latency, requests)
  io.write(string.format("requests: %d\n", summary.requests))
  io.write(string.format("non-2xx or errors: %d\n", summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
