-- wrk script: POST /auctions/{id}/bids with ever higher amounts, so every bid is accepted while the
-- connection's order holds (one thread: a shared counter).  Set the auction with AUCTION=…
local auction = os.getenv("AUCTION") or "1"
local amount = 0
request = function()
  amount = amount + 1
  return wrk.format("POST", "/auctions/" .. auction .. "/bids", { ["Content-Type"] = "application/json" },
    '{"bidder":"wrk","amount":' .. amount .. '}')
end

done = function(summary, latency, requests)
  io.write(string.format("non-2xx or errors: %d\n", summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
