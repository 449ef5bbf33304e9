'use strict';
// dblapi.js 2.x (npm) against botlist's classic surface. Only change: base URL (see
// _redirect.js). Every method of DBLAPI that talks to the API is called and what it returns
// checked. POST /bots/stats is written with request.write, so it goes chunked.
const { env, results } = require('./_redirect');
const DBL = require('dblapi.js');

(async () => {
  const e = env();
  const r = results('dblapi.js');
  const dbl = new DBL(e.TOKEN);
  await r.call('postStats', () => dbl.postStats(e.SERVERS),
    (v) => [v && v.ok === true, `returned ${JSON.stringify(v)}`]);
  await r.call('postStats(shardId, shardCount)', () => dbl.postStats(e.SERVERS + 1, 0, 2),
    (v) => [v && v.ok === true, `returned ${JSON.stringify(v)}`]);
  await r.call('getStats', () => dbl.getStats(e.BOT_ID),
    (v) => [v && v.server_count === e.SERVERS + 1 && Array.isArray(v.shards), `returned ${JSON.stringify(v)}`]);
  await r.call('hasVoted(voter)', () => dbl.hasVoted(e.VOTER), (v) => [v === true, `${v} (want true)`]);
  await r.call('hasVoted(other)', () => dbl.hasVoted(e.OTHER), (v) => [v === false, `${v} (want false)`]);
  await r.call('getVotes', () => dbl.getVotes(),
    (v) => [Array.isArray(v) && v.some((u) => u.id === e.VOTER),
      Array.isArray(v) ? `${v.length} voters, first=${JSON.stringify(v[0])}` : `not an array: ${JSON.stringify(v).slice(0, 200)}`]);
  await r.call('isWeekend', () => dbl.isWeekend(),
    (v) => [v === e.WEEKEND, `${v} (want ${e.WEEKEND})`]);
  await r.call('getBot', () => dbl.getBot(e.BOT_ID),
    (v) => [v && v.id === e.BOT_ID && v.username === e.BOT_USERNAME && v.owners.includes(e.OWNER)
      && typeof v.shortdesc === 'string' && !Number.isNaN(Date.parse(v.date)) && v.points >= 1,
    `returned ${JSON.stringify(v).slice(0, 400)}`]);
  await r.call('getBots(search, fields)',
    () => dbl.getBots({ search: `username: ${e.BOT_USERNAME}`, sort: 'points', fields: 'id,username,points', limit: 3 }),
    (v) => [v && v.limit === 3 && v.results.some((b) => b.id === e.BOT_ID
      && JSON.stringify(Object.keys(b)) === '["id","username","points"]'),
    `returned ${JSON.stringify(v).slice(0, 400)}`]);
  await r.call('getUser', () => dbl.getUser(e.OWNER),
    (v) => [v && v.id === e.OWNER && v.username === e.OWNER_NAME && typeof v.admin === 'boolean',
      `returned ${JSON.stringify(v)}`]);
  process.exitCode = r.finish();
})();
