-- wrk script: POST a server count for one bot with its token, a different count each request.
--   wrk ... -s benches/stats_post.lua http://HOST/api/v1/bots/BOT_ID/stats -- TOKEN
local counter = 0

function init(args)
  token = args[1]
end

function request()
  counter = counter + 1
  local body = '{"server_count":' .. tostring(1000 + counter % 100000) .. '}'
  return wrk.format("POST", nil,
    { ["Content-Type"] = "application/json", ["Authorization"] = token }, body)
end
