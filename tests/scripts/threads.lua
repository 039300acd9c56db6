-- pelt's tests: setup() numbers the threads, init(args) sets the path from the script's
-- arguments, and done() reads every thread's values and the run's figures.

local threads = {}

function setup(thread)
   table.insert(threads, thread)
   thread:set("id", #threads)
   thread:set("tags", { "a", "b" })
end

function init(args)
   wrk.path = "/" .. args[1]
   wrk.headers["X-Args"] = #args
   started = id * 10
end

done = function(summary, latency, requests)
   for _, t in ipairs(threads) do
      io.write(string.format("thread %d started %d tags %s\n",
         t:get("id"), t:get("started"), table.concat(t:get("tags"), ",")))
   end
   io.write(string.format("requests %d\n", summary.requests))
   io.write(string.format("errors %d %d %d %d %d\n", summary.errors.connect,
      summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout))
   io.write(string.format("ordered %s\n", tostring(latency.min <= latency.mean and
      latency.mean <= latency.max and latency:percentile(50) <= latency.max)))
   local n = 0
   for i = 1, #latency do
      local _, count = latency(i)
      n = n + count
   end
   io.write(string.format("counted %d\n", n))
   io.write(string.format("rates %s\n", tostring(#requests > 0 and requests.min <= requests.max)))
end
