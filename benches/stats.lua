-- wrk script: POST a bot's server count, a different count on every request.
local counter = 0

function init(args)
  bot = args[1]
  token = args[2]
end

function request()
  counter = counter + 1
  return wrk.format("POST", "/api/v1/bots/" .. bot .. "/stats",
    { ["Content-Type"] = "application/json", ["Authorization"] = token },
    '{"server_count":' .. counter .. '}')
end

function response(status, headers, body)
  if status ~= 200 then
    io.stderr:write("unexpected status " .. status .. "\n")
  end
end
