-- wrk script: list bots through the admin API, a unique platform id per request, until each
-- thread has had QUOTA bots answered 201 (QUOTA is per thread); it then writes
-- DONE_PREFIX.<thread> (its 201 and other counts) and stops. wrk itself runs until its -d or a
-- SIGINT: the caller watches for the files and times the fill itself.
--   wrk -t2 ... -s benches/admin_bots.lua http://HOST/api/v1/admin/bots -- ADMIN QUOTA DONE_PREFIX
local threads = {}
local counter = 0
local created = 0
local refused = 0
local finished = false

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  admin = args[1]
  thread_id = id
  quota = tonumber(args[2])
  done_prefix = args[3]
end

function request()
  counter = counter + 1
  local n = thread_id * 10000000 + counter
  local body = '{"platform_id":"' .. "80000000" .. string.format("%010d", n) .. '",' ..
    '"name":"Load Bot ' .. n .. '","username":"load-bot-' .. n .. '",' ..
    '"short_description":"Load Bot ' .. n .. ' lists itself for the load benchmark."}'
  return wrk.format("POST", nil,
    { ["Content-Type"] = "application/json", ["Authorization"] = admin }, body)
end

function response(status, headers, body)
  if status == 201 then
    created = created + 1
  else
    refused = refused + 1
  end
  if not finished and created >= quota then
    finished = true
    local f = io.open(done_prefix .. "." .. thread_id, "w")
    f:write(created .. " " .. refused .. "\n")
    f:close()
    wrk.thread:stop()
  end
end
