'use strict';
// Neither @top-gg/sdk 3.x nor dblapi.js has a base-URL option: both hard-code
// https://top.gg/api ( @top-gg/sdk: `https://top.gg/api${path}` via undici.request;
// dblapi.js: https.request({hostname:'top.gg', path:`/api/${endpoint}`}) ).
// This module is the "base URL change" for them: it rewrites
//   https://top.gg/api/<rest>  ->  ${BASE}/<rest>
// and leaves method, headers and body untouched. Any other destination, and any
// non-loopback connection at all, is refused, so nothing leaves 127.0.0.1.
const net = require('net');
const http = require('http');
const https = require('https');

const BASE = new URL(process.env.BASE.replace(/\/+$/, ''));
const LOCAL = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);
if (!LOCAL.has(BASE.hostname) || BASE.protocol !== 'http:') {
  throw new Error(`refusing non-local or non-http BASE ${BASE.href}`);
}
const basePath = BASE.pathname.replace(/\/+$/, '');
const mapPath = (p) => {
  if (!p.startsWith('/api/') && p !== '/api') throw new Error(`unexpected path ${p}`);
  return basePath + p.slice('/api'.length);
};

// Guard: no socket to anything but loopback.
const origConnect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  const o = typeof args[0] === 'object' && args[0] !== null ? (Array.isArray(args[0]) ? args[0][0] : args[0]) : { host: args[1] };
  const host = o && (o.host || o.hostname);
  if (o && o.path === undefined && host && !LOCAL.has(host)) {
    throw new Error(`blocked connection to ${host}`);
  }
  return origConnect.apply(this, args);
};

// dblapi.js: https.request(options, cb) with hostname top.gg
const log = [];
https.request = function (options, cb) {
  if (typeof options !== 'object' || options.hostname !== 'top.gg') {
    throw new Error(`blocked https.request to ${JSON.stringify(options)}`);
  }
  const o = { ...options, hostname: BASE.hostname, port: BASE.port || 80, path: mapPath(options.path), protocol: 'http:' };
  log.push(`${String(o.method).toUpperCase()} ${o.path} headers=${JSON.stringify(o.headers)}`);
  return http.request(o, cb);
};

// @top-gg/sdk: undici.request(url) through the global dispatcher
function installUndici(undici) {
  const inner = new undici.Agent();
  class Rewrite extends undici.Dispatcher {
    dispatch(opts, handler) {
      const origin = new URL(String(opts.origin));
      if (origin.hostname !== 'top.gg') throw new Error(`blocked undici request to ${origin.href}`);
      const o = { ...opts, origin: BASE.origin, path: mapPath(opts.path) };
      log.push(`${o.method} ${o.path} headers=${JSON.stringify(o.headers)} body=${o.body === undefined ? '' : String(o.body)}`);
      return inner.dispatch(o, handler);
    }
    close(...a) { return inner.close(...a); }
    destroy(...a) { return inner.destroy(...a); }
  }
  undici.setGlobalDispatcher(new Rewrite());
}

function env() {
  return {
    BASE: BASE.href.replace(/\/+$/, ''),
    BOT_ID: process.env.BOT_ID,
    TOKEN: process.env.TOKEN,
    VOTER: process.env.VOTER,
    OTHER: process.env.OTHER_USER || '123456789012345678',
    // What the classic reads must show (run.sh documents them).
    BOT_USERNAME: process.env.BOT_USERNAME,
    OWNER: process.env.OWNER,
    OWNER_NAME: process.env.OWNER_NAME,
    SERVERS: Number(process.env.SERVER_COUNT || '4242'),
    // What GET /weekend should answer now (run.sh works it out).
    WEEKEND: (process.env.EXPECT_WEEKEND || 'false') === 'true',
  };
}

function results(lib) {
  const failed = [];
  return {
    async call(name, fn, check) {
      const before = log.length;
      let v;
      try {
        v = await fn();
      } catch (e) {
        failed.push(name);
        console.log(`[${lib}] ${name}: EXCEPTION ${e && e.stack ? e.stack : e}`);
        for (const l of log.slice(before)) console.log(`[${lib}]   sent: ${l}`);
        if (e && e.status !== undefined) console.log(`[${lib}]   status=${e.status} body=${JSON.stringify(e.body !== undefined ? e.body : e.raw)}`);
        if (e && e.response && e.response.statusCode !== undefined) {
          console.log(`[${lib}]   status=${e.response.statusCode} headers=${JSON.stringify(e.response.headers)}`);
          try { console.log(`[${lib}]   body=${await e.response.body.text()}`); } catch (_) { /* consumed */ }
        }
        return undefined;
      }
      for (const l of log.slice(before)) console.log(`[${lib}]   sent: ${l}`);
      const [ok, why] = check(v);
      if (!ok) failed.push(name);
      console.log(`[${lib}] ${name}: ${ok ? 'ok' : 'WRONG'} -> ${why}`);
      return v;
    },
    finish() {
      if (failed.length) { console.log(`FAIL ${lib} (failed: ${failed.join(', ')})`); return 1; }
      console.log(`PASS ${lib}`); return 0;
    },
  };
}

module.exports = { installUndici, env, results };
