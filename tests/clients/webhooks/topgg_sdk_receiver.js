// npm @top-gg/sdk 3.x `Webhook` as a vote receiver, used unchanged.
//
// Env: SECRET (the Authorization value the helper expects). Listens on 127.0.0.1, a free port,
// and prints "LISTENING <port>", then one "VOTE {route, vote, headers}" line per vote the helper
// hands to user code. Three routes, the ways the SDK's README shows it being mounted:
//   /listener    wh.listener(fn)                   (raw body read by the helper itself)
//   /middleware  wh.middleware(), (req) => req.vote (deprecated form, still shipped)
//   /json        express.json(), wh.listener(fn)   (app already parses JSON bodies)
// What the helper checks (dist/structs/Webhook.js): `req.headers.authorization !== auth` -> 403
// {"error":"Unauthorized"}; body = req.body if a parser ran, else raw-body + JSON.parse (400 on bad
// JSON); no field is required; `query`, if a non-empty string, becomes an object. The listener
// answers 204 unless user code sent something; a throw in user code answers 500.
const express = require("express");
const { Webhook } = require("@top-gg/sdk");

const secret = process.env.SECRET;
if (!secret) { console.error("set SECRET"); process.exit(2); }
const wh = new Webhook(secret);
const app = express();

const record = (route, vote, req) => console.log("VOTE " + JSON.stringify({
  route, vote,
  headers: {
    "x-botlist-event": req.headers["x-botlist-event"],
    "x-botlist-delivery": req.headers["x-botlist-delivery"],
  },
}));

app.post("/listener", wh.listener((vote, req) => record("/listener", vote, req)));
app.post("/middleware", wh.middleware(), (req) => record("/middleware", req.vote, req));
app.post("/json", express.json(), wh.listener((vote, req) => record("/json", vote, req)));

const server = app.listen(0, "127.0.0.1", (err) => {
  if (err) { console.error(err); process.exit(2); }
  console.log("LISTENING " + server.address().port);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
