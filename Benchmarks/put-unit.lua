-- wrk script: every request is a mutation (PUT /units/{id} over 1,000 ids), so each one is a stored
-- record and a published event.  wrk -t1 -c16 -d10s -s Benchmarks/put-unit.lua http://127.0.0.1:8080
-- With HERALD_TOKEN set, every request carries it as a bearer token (a server with --jwt-key).
local counter = 0
local headers = { ["Content-Type"] = "application/json" }
local token = os.getenv("HERALD_TOKEN")
if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
request = function()
  counter = counter + 1
  local status = ({ "healthy", "wounded", "dead" })[counter % 3 + 1]
  return wrk.format("PUT", "/units/u" .. (counter % 1000), headers,
    '{"name":"unit ' .. counter .. '","status":"' .. status .. '"}')
end

done = function(summary, latency, requests)
  io.write(string.format("non-2xx or errors: %d\n", summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
