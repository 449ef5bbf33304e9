-- wrk script: a vote by a profile token (POST /api/v1/bots/:id/votes, no body) on every request,
-- each a (profile, bot) pair not used before in this run, so every vote is stored (201), never
-- the 12-hour refusal. args: a file of tokens and a file of bot ids (one a line, made by
-- benches/profile_voters.py), and an offset into the pairs for successive rounds.
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
  tokens = lines(args[1])
  bots = lines(args[2])
  -- Each thread takes its own pairs: pair n of thread t is pairs[offset + n * 2 + t].
  pair = tonumber(args[3] or "0") + id
  step = 2
end

function request()
  local t = pair % #tokens
  local b = math.floor(pair / #tokens) % #bots
  pair = pair + step
  return wrk.format("POST", "/api/v1/bots/" .. bots[b + 1] .. "/votes",
    { ["Authorization"] = tokens[t + 1] }, nil)
end

function response(status, headers, body)
  if status ~= 201 then
    io.stderr:write("unexpected status " .. status .. "\n")
  end
end
