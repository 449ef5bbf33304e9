'use strict';
// @top-gg/sdk 3.x (npm) against botlist. Only change: base URL (see _redirect.js).
// Routes it uses: POST /bots/stats, GET /bots/check?userId=, GET /bots/votes, GET /bots/{id}/stats,
// GET /weekend.
const { installUndici, env, results } = require('./_redirect');
installUndici(require('undici'));
const Topgg = require('@top-gg/sdk');

(async () => {
  const e = env();
  const r = results('@top-gg/sdk');
  const api = new Topgg.Api(e.TOKEN);
  await r.call('postStats', () => api.postStats({ serverCount: e.SERVERS }),
    (v) => [v && v.serverCount === e.SERVERS, `returned ${JSON.stringify(v)}`]);
  await r.call('postStats(shards)', () => api.postStats({ serverCount: e.SERVERS + 1, shardCount: 2, shardId: 0 }),
    (v) => [v && v.serverCount === e.SERVERS + 1, `returned ${JSON.stringify(v)}`]);
  await r.call('getStats', () => api.getStats(e.BOT_ID),
    (v) => [v && v.serverCount === e.SERVERS + 1, `returned ${JSON.stringify(v)}`]);
  await r.call('hasVoted(voter)', () => api.hasVoted(e.VOTER), (v) => [v === true, `${v} (want true)`]);
  await r.call('hasVoted(other)', () => api.hasVoted(e.OTHER), (v) => [v === false, `${v} (want false)`]);
  await r.call('getVotes', () => api.getVotes(),
    (v) => [Array.isArray(v) && v.some((u) => u.id === e.VOTER),
      Array.isArray(v) ? `${v.length} voters, first=${JSON.stringify(v[0])}` : `not an array: ${JSON.stringify(v).slice(0, 200)}`]);
  // GET /weekend (public; the SDK sends its token anyway)
  await r.call('isWeekend', () => api.isWeekend(),
    (v) => [v === e.WEEKEND, `${v} (want ${e.WEEKEND})`]);
  process.exitCode = r.finish();
  setTimeout(() => process.exit(process.exitCode), 100);
})();
