// Webhook receivers built on the libraries' own verifiers, used unchanged, on 127.0.0.1:PORT:
//   POST /v1        @top-gg/sdk 4.0.0's `Webhook#listener` (express), secret V1_SECRET
//   POST /standard  npm `standardwebhooks`' `Webhook#verify`, secret STANDARD_SECRET (whsec_...)
// Each payload a library hands to user code is printed as one JSON line; a refusal is the
// library's own answer.
import express from "express";
import { pathToFileURL } from "node:url";
import { Webhook as StandardWebhook } from "standardwebhooks";

const { Webhook } = await import(pathToFileURL(`${process.env.SDK_DIR}/dist/index.js`).href);
const app = express();
const topgg = new Webhook(process.env.V1_SECRET);
app.post("/v1", topgg.listener((payload, req, res) => {
  const d = payload.data;
  console.log(JSON.stringify({ lib: "@top-gg/sdk", type: payload.type, user: d.user.platformId,
    project: d.project.platformId, weight: d.weight ?? null, trace: payload.trace ?? null }));
  res.sendStatus(204);
}));
const standard = new StandardWebhook(process.env.STANDARD_SECRET);
app.post("/standard", express.text({ type: "*/*" }), (req, res) => {
  try {
    const body = standard.verify(req.body, req.headers);
    console.log(JSON.stringify({ lib: "standardwebhooks (npm)", type: body.type,
      user: body.data?.user?.id ?? null, project: body.data?.bot?.platform_id ?? null }));
    res.sendStatus(204);
  } catch (err) {
    res.status(400).send(String(err));
  }
});
const server = app.listen(0, "127.0.0.1", () => console.error(`port ${server.address().port}`));
