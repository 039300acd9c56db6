-- pelt's guide and tests: request() takes the request pelt would send in its place
-- (pelt.next(): the --targets entry, its templates rendered), signs it, and names the step
-- it plays (request()'s second value), so each step has its own figures.

local secret = "s3cret"

-- djb2, a stand-in for the HMAC a real API would ask for.
local function checksum(text)
   local h = 5381
   for i = 1, #text do
      h = bit.band(h * 33 + text:byte(i), 0x7fffffff)
   end
   return string.format("%08x", h)
end

function request()
   local r = pelt.next()
   r.headers["X-Signature"] = checksum(secret .. r.method .. r.path .. (r.body or ""))
   return wrk.format(r.method, r.path, r.headers, r.body), r.name
end
