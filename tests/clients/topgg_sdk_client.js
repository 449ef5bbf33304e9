'use strict';
// @top-gg/sdk 3.x (npm) against botlist's classic surface. Only change: base URL (see
// _redirect.js). Every method of its Api class is called and what it returns checked.
const { installUndici, env, results } = require('./_redirect');
installUndici(require('undici'));
const Topgg = require('@top-gg/sdk');

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

(async () => {
  const e = env();
  const r = results('@top-gg/sdk');
  const api = new Topgg.Api(e.TOKEN);
  // POST /bots/stats
  await r.call('postStats', () => api.postStats({ serverCount: e.SERVERS }),
    (v) => [v && v.serverCount === e.SERVERS, `returned ${JSON.stringify(v)}`]);
  await r.call('postStats(shards)', () => api.postStats({ serverCount: e.SERVERS + 1, shardCount: 2, shardId: 0 }),
    (v) => [v && v.serverCount === e.SERVERS + 1, `returned ${JSON.stringify(v)}`]);
  // GET /bots/{id}/stats
  await r.call('getStats', () => api.getStats(e.BOT_ID),
    (v) => [v && v.serverCount === e.SERVERS + 1 && same(v.shards, []), `returned ${JSON.stringify(v)}`]);
  // GET /bots/check?userId=
  await r.call('hasVoted(voter)', () => api.hasVoted(e.VOTER), (v) => [v === true, `${v} (want true)`]);
  await r.call('hasVoted(other)', () => api.hasVoted(e.OTHER), (v) => [v === false, `${v} (want false)`]);
  // GET /bots/votes
  await r.call('getVotes', () => api.getVotes(),
    (v) => [Array.isArray(v) && v.some((u) => u.id === e.VOTER && typeof u.username === 'string'),
      Array.isArray(v) ? `${v.length} voters, first=${JSON.stringify(v[0])}` : `not an array: ${JSON.stringify(v).slice(0, 200)}`]);
  // GET /weekend
  await r.call('isWeekend', () => api.isWeekend(),
    (v) => [v === e.WEEKEND, `${v} (want ${e.WEEKEND})`]);
  // GET /bots/{id}: the BotInfo typing's fields and types
  await r.call('getBot', () => api.getBot(e.BOT_ID),
    (v) => [v && v.id === e.BOT_ID && v.username === e.BOT_USERNAME && typeof v.discriminator === 'string'
      && typeof v.defAvatar === 'string' && Array.isArray(v.tags) && Array.isArray(v.guilds)
      && Array.isArray(v.owners) && v.owners.includes(e.OWNER) && !Number.isNaN(Date.parse(v.date))
      && typeof v.certifiedBot === 'boolean' && v.points >= 1 && typeof v.monthlyPoints === 'number',
    `returned ${JSON.stringify(v).slice(0, 400)}`]);
  // GET /bots?search=username: X&fields=id, username&limit=5
  await r.call('getBots(search object, fields array)',
    () => api.getBots({ search: { username: e.BOT_USERNAME }, fields: ['id', 'username'], limit: 5, offset: 0, sort: '-points' }),
    (v) => [v && v.limit === 5 && v.offset === 0 && v.count === v.results.length
      && v.results.some((b) => same(b, { id: e.BOT_ID, username: e.BOT_USERNAME })),
    `returned ${JSON.stringify(v).slice(0, 400)}`]);
  await r.call('getBots()', () => api.getBots(),
    (v) => [v && v.limit === 50 && v.results.length >= 1 && v.total >= v.count,
      `count=${v && v.count} total=${v && v.total}`]);
  // GET /users/{id}
  await r.call('getUser', () => api.getUser(e.OWNER),
    (v) => [v && v.id === e.OWNER && v.username === e.OWNER_NAME && typeof v.social === 'object'
      && typeof v.supporter === 'boolean' && typeof v.webMod === 'boolean',
    `returned ${JSON.stringify(v)}`]);
  process.exitCode = r.finish();
  setTimeout(() => process.exit(process.exitCode), 100);
})();
