-- wrk script: POST a vote for a fresh user on every request (unique per thread and request).
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  bot = args[1]
  admin = args[2]
  -- An optional offset, so that successive runs against one bot vote with new users.
  offset = tonumber(args[3] or "0")
  thread_id = id
end

function request()
  counter = counter + 1
  local user = string.format("%d", offset + thread_id * 100000000 + counter)
  local body = '{"user_id":"' .. user .. '","username":"u' .. user .. '","avatar":null}'
  return wrk.format("POST", "/api/v1/admin/bots/" .. bot .. "/votes",
    { ["Content-Type"] = "application/json", ["Authorization"] = admin }, body)
end

function response(status, headers, body)
  if status ~= 201 then
    io.stderr:write("unexpected status " .. status .. "\n")
  end
end
