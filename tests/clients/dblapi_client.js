'use strict';
// dblapi.js 2.x (npm) against botlist. Only change: base URL (see _redirect.js).
// Routes it uses: POST /bots/stats (body written with request.write -> chunked),
// GET /bots/check?userId=, GET /bots/votes, GET /bots/{id}/stats.
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
    (v) => [v && v.server_count === e.SERVERS + 1, `returned ${JSON.stringify(v)}`]);
  await r.call('hasVoted(voter)', () => dbl.hasVoted(e.VOTER), (v) => [v === true, `${v} (want true)`]);
  await r.call('hasVoted(other)', () => dbl.hasVoted(e.OTHER), (v) => [v === false, `${v} (want false)`]);
  await r.call('getVotes', () => dbl.getVotes(),
    (v) => [Array.isArray(v) && v.some((u) => u.id === e.VOTER),
      Array.isArray(v) ? `${v.length} voters, first=${JSON.stringify(v[0])}` : `not an array: ${JSON.stringify(v).slice(0, 200)}`]);
  process.exitCode = r.finish();
})();
