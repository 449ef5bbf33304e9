-- wrk script: fill an empty directory through the admin API with bots that look like the demo's
-- (an adjective, a noun and a number as the name; one to four of 24 tags; one of 15 languages or
-- none; a sentence of description), then vote for each bot it listed: a skewed number of
-- votes per bot (most get none or a few, VOTES_PER_BOT on average), each from a fresh user.
-- Each thread stops once it has had QUOTA bots answered 201 (QUOTA is per thread) and every
-- vote it owes answered, and writes DONE_PREFIX.<thread> ("bots votes refused").
--   wrk -t2 -c32 -d600s -s benches/fill_directory.lua http://HOST/api/v1 -- ADMIN QUOTA VOTES_PER_BOT DONE_PREFIX
local threads = {}
local counter = 0
local created = 0
local voted = 0
local refused = 0
local pending = {}
local finished = false
local seed = 0

local ADJECTIVES = { "Groovy", "Swift", "Mighty", "Cozy", "Lunar", "Pixel", "Turbo", "Silent",
  "Cosmic", "Rusty", "Happy", "Shadow", "Crystal", "Neon", "Atomic", "Golden", "Tiny", "Wild",
  "Clever", "Frosty" }
local NOUNS = { "Melody", "Guardian", "Otter", "Moderator", "Dragon", "Quiz", "Butler", "Radio",
  "Ranger", "Wizard", "Panda", "Sentinel", "Jukebox", "Helper", "Falcon", "Bard", "Scribe",
  "Golem", "Kitsune", "Robot" }
local TAGS = { "music", "moderation", "fun", "games", "economy", "utility", "social", "anime",
  "memes", "leveling", "logging", "roleplay", "fortnite", "minecraft", "pokemon", "trivia",
  "giveaways", "tickets", "welcome", "reaction-roles", "stream", "crypto", "nsfw", "esports" }
local LANGS = { "en", "de", "fr", "es", "pt", "ru", "ja", "ko", "zh", "it", "nl", "pl", "tr",
  "sv", "uk" }
local BLURBS = { "plays music from every platform with a queue that never skips",
  "keeps your server tidy with auto-moderation and logs",
  "runs quizzes, trivia nights and leaderboards",
  "an economy with shops, jobs and a stock market",
  "levels, ranks and role rewards for active members",
  "welcomes new members and hands out reaction roles" }

-- A small deterministic generator per thread (no math.random: the same fill every run).
local function rand(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  -- The high bits: the low bits of a power-of-two LCG repeat with short periods, which would
  -- tie a bot's noun to its tags.
  return math.floor(seed / 65536) % n
end

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  admin = args[1]
  thread_id = id
  quota = tonumber(args[2])
  per_bot = tonumber(args[3])
  done_prefix = args[4]
  seed = thread_id * 7919
end

local function new_bot()
  counter = counter + 1
  local n = thread_id * 10000000 + counter
  local tags = {}
  for _ = 1, 1 + rand(4) do
    tags[#tags + 1] = '"' .. TAGS[1 + rand(#TAGS)] .. '"'
  end
  local lang = ""
  if rand(10) > 0 then
    lang = '"language_code":"' .. LANGS[1 + rand(#LANGS)] .. '",'
  end
  local name = ADJECTIVES[1 + rand(#ADJECTIVES)] .. " " .. NOUNS[1 + rand(#NOUNS)] .. " " .. n
  local body = '{"platform_id":"' .. "80000000" .. string.format("%010d", n) .. '",' ..
    '"name":"' .. name .. '","username":"bot-' .. n .. '",' .. lang ..
    '"tags":[' .. table.concat(tags, ",") .. '],' ..
    '"short_description":"' .. name .. ' ' .. BLURBS[1 + rand(#BLURBS)] .. '.",' ..
    '"invite_url":"https://discord.example/oauth2/authorize?client_id=' .. n .. '"}'
  return wrk.format("POST", wrk.path .. "/admin/bots",
    { ["Content-Type"] = "application/json", ["Authorization"] = admin }, body)
end

local function vote(bot)
  counter = counter + 1
  local user = string.format("%d", thread_id * 100000000 + counter)
  local body = '{"user_id":"' .. user .. '","username":"u' .. user .. '","avatar":null}'
  return wrk.format("POST", wrk.path .. "/admin/bots/" .. bot .. "/votes",
    { ["Content-Type"] = "application/json", ["Authorization"] = admin }, body)
end

function request()
  local bot = table.remove(pending)
  if bot then
    return vote(bot)
  end
  -- (Up to a connection's worth of listings in flight may take a thread past its quota.)
  if created >= quota then
    -- Nothing left to list: a cheap read while the last answers come in.
    return wrk.format("GET", wrk.path .. "/bots?limit=0")
  end
  return new_bot()
end

function response(status, headers, body)
  if status == 201 then
    local bot = string.match(body, '^{"bot":{"id":"([0-9a-f-]+)"')
    if bot then
      created = created + 1
      -- Skewed: the cube of a uniform draw, scaled so the mean is per_bot.
      local u = rand(1000) / 1000
      for _ = 1, math.floor(u * u * u * 4 * per_bot + 0.5) do
        pending[#pending + 1] = bot
      end
    else
      voted = voted + 1
    end
  elseif status ~= 200 then
    refused = refused + 1
  end
  if not finished and created >= quota and #pending == 0 then
    finished = true
    local f = io.open(done_prefix .. "." .. thread_id, "w")
    f:write(created .. " " .. voted .. " " .. refused .. "\n")
    f:close()
    wrk.thread:stop()
  end
end
