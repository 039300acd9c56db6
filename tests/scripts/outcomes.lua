-- pelt's own figures from a script: responses counted by class and each body's size recorded,
-- in every worker thread's state; the result's `script` section adds them up, and done()
-- reads the totals.
local ok, failed = pelt.counter("2xx"), pelt.counter("5xx")
local sizes = pelt.histogram("body_bytes")

function response(status, headers, body)
   if status < 300 then
      ok:add()
   elseif status >= 500 then
      failed:add()
   end
   sizes:record(#body)
end

function done(summary)
   local share = 100 * pelt.counter("5xx"):value() / summary.requests
   print(string.format("5xx: %.2f%% of %d responses", share, summary.requests))
end
