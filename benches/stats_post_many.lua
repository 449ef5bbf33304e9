-- wrk script: POST a server count to a different bot on every request, each with its own
-- token, over the bots made by benches/profile_voters.py: the stats post of a directory whose
-- bots post at once (their actors spread over the workers), beside stats_post.lua's one bot.
--   wrk ... -s benches/stats_post_many.lua http://HOST -- BOTS_FILE BOT_TOKENS_FILE
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

local function lines(path)
  local out = {}
  for line in io.lines(path) do
    if #line > 0 then table.insert(out, line) end
  end
  return out
end

function init(args)
  bots = lines(args[1])
  tokens = lines(args[2])
  -- The two threads take alternate bots.
  next_bot = id
  counter = 0
end

function request()
  local b = next_bot % #bots
  next_bot = next_bot + 2
  counter = counter + 1
  local body = '{"server_count":' .. tostring(1000 + counter % 100000) .. '}'
  return wrk.format("POST", "/api/v1/bots/" .. bots[b + 1] .. "/stats",
    { ["Content-Type"] = "application/json", ["Authorization"] = tokens[b + 1] }, body)
end

function response(status, headers, body)
  if status ~= 200 then
    io.stderr:write("unexpected status " .. status .. "\n")
  end
end
