// @top-gg/sdk 4.0.0 hard-codes `https://top.gg/api/v1` and calls the global fetch: this module,
// loaded with `node --import`, is its base-URL change. It rewrites that prefix to BASE and
// refuses any other destination, so nothing leaves 127.0.0.1; method, headers and body go
// through as the library made them.
const BASE = process.env.BASE.replace(/\/+$/, "");
const { hostname, protocol } = new URL(BASE);
if (protocol !== "http:" || !["127.0.0.1", "localhost", "[::1]"].includes(hostname)) {
  throw new Error(`refusing non-local BASE ${BASE}`);
}
const PREFIX = "https://top.gg/api/v1";
const fetchItself = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = String(input);
  if (url.startsWith(PREFIX)) return fetchItself(BASE + url.slice(PREFIX.length), init);
  if (url.startsWith(BASE)) return fetchItself(url, init); // the checks' own requests
  throw new Error(`blocked fetch of ${url}`);
};
