// Every method of @top-gg/sdk 4.0.0's `Api` against botlist's project API, values checked.
// Run by run.sh with `node --import ./redirect.mjs` (the base-URL change) and NODE_PATH-free
// import of the built library from SDK_DIR.
import assert from "node:assert/strict";
import { pathToFileURL } from "node:url";

const { Api } = await import(pathToFileURL(`${process.env.SDK_DIR}/dist/index.js`).href);
const { BASE, TOKEN, BOT_ID, BOT_NAME, VOTER, OTHER } = process.env;
const api = new Api(TOKEN);
const raw = async (path) => {
  const r = await fetch(BASE + path, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(r.status, 200, `GET ${path}`);
  return r.json();
};
let failed = 0;
const step = async (name, fn) => {
  try {
    await fn();
    console.log(`  ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`  FAIL ${name}: ${err.stack || err}`);
  }
};

await step("getSelf", async () => {
  const p = await api.getSelf();
  assert.equal(p.id, BOT_ID);
  assert.equal(p.name, BOT_NAME);
  assert.equal(p.platform, "discord");
  assert.equal(p.type, "bot");
  assert.ok(p.tags.includes("utility"), JSON.stringify(p.tags));
  assert.ok(p.votes.current >= 1 && p.votes.total >= p.votes.current, JSON.stringify(p.votes));
  assert.deepEqual(p.review, { score: 4, count: 1 });
});
await step("editSelf", async () => {
  await api.editSelf({ headline: { en: "Edited by @top-gg/sdk 4.0.0" }, content: { en: "A page written by the 2026 Node library, long enough." } });
  assert.equal((await api.getSelf()).headline, "Edited by @top-gg/sdk 4.0.0");
});
await step("postCommands (PUT)", async () => {
  const commands = [{ name: "ping", description: "Answers pong", type: 1 }];
  await api.postCommands(commands);
  assert.deepEqual(await raw("/projects/@me/commands"), commands);
});
await step("postAnnouncement", async () => {
  const a = await api.postAnnouncement("Version 2", "Shards now restart on their own.", "new_feature");
  assert.equal(a.title, "Version 2");
  assert.equal(a.content, "Shards now restart on their own.");
  assert.ok(Math.abs(Date.parse(a.createdAt) - Date.now()) < 60_000, a.createdAt);
});
await step("postMetrics (single)", async () => {
  await api.postMetrics({ serverCount: 4321, shardCount: 2 });
  const stats = await raw(`/bots/${BOT_ID}/stats`);
  assert.equal(stats.server_count, 4321);
});
await step("postMetrics (batch)", async () => {
  const now = Date.now();
  await api.postMetrics([
    { serverCount: 4300, timestamp: new Date(now - 7_200_000).toISOString() },
    // Newer than the single post just made, so it becomes the count (an older entry goes into
    // the history only).
    { serverCount: 4333, timestamp: new Date(now + 2_000).toISOString() },
  ]);
  const stats = await raw(`/bots/${BOT_ID}/stats`);
  assert.equal(stats.server_count, 4333);
});
await step("getVote (a voter)", async () => {
  const v = await api.getVote(VOTER);
  assert.ok(v, "a vote");
  assert.ok(Math.abs(v.votedAt.getTime() - Date.now()) < 600_000, String(v.votedAt));
  assert.equal(v.expiresAt.getTime() - v.votedAt.getTime(), 12 * 3_600_000);
  assert.equal(v.weight, 1);
});
await step("getVote (source topgg, not a voter: null)", async () => {
  assert.equal(await api.getVote(OTHER, "topgg"), null);
});
await step("getVotes and next", async () => {
  const page = await api.getVotes(new Date(Date.now() - 86_400_000));
  const mine = page.votes.find((v) => v.voterId === VOTER);
  assert.ok(mine, JSON.stringify(page.votes));
  assert.equal(mine.platformId, VOTER);
  assert.equal(mine.weight, 1);
  assert.equal(mine.expiresAt.getTime() - mine.votedAt.getTime(), 12 * 3_600_000);
  const after = await page.next();
  assert.deepEqual(after.votes, []);
});
await step("a wrong token: TopGGAPIError 401 with a problem", async () => {
  await assert.rejects(new Api("blt_wrong").getSelf(), (err) => {
    assert.equal(err.name, "TopGGAPIError");
    assert.equal(err.response.status, 401);
    assert.match(err.response.headers.get("content-type"), /application\/problem\+json/);
    return true;
  });
});
console.log(failed ? "FAIL @top-gg/sdk 4.0.0" : "PASS @top-gg/sdk 4.0.0");
process.exit(failed ? 1 : 0);
