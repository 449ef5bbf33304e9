-- wrk script: POST a vote for a fresh user on every request. Arguments: bot, admin token, and a
-- run number that keeps the users of one run apart from those of the others (12-hour rule).
local counter = 0
local threads = {}

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  bot = args[1]
  admin = args[2]
  run = tonumber(args[3])
end

function request()
  counter = counter + 1
  local user = tostring(run * 1000000000000 + id * 1000000000 + counter)
  local body = '{"user_id":"' .. user .. '","username":"u' .. user .. '","avatar":null}'
  return wrk.format("POST", "/api/v1/admin/bots/" .. bot .. "/votes",
    { ["Content-Type"] = "application/json", ["Authorization"] = admin }, body)
end

function response(status, headers, body)
  if status ~= 201 then
    io.stderr:write("unexpected status " .. status .. "\n")
  end
end
