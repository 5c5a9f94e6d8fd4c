// node-proxy.js: a reverse proxy in front of `llmbatch mock serve` that
// limits /v1/ with one of two widely used npm limiters, for bench/node.sh.
// It is configured by the environment:
//
//   PORT       the loopback port to listen on
//   UPSTREAM   host:port of the mock
//   LIB        erl: express-rate-limit (its MemoryStore, a fixed window per
//              client that starts at the client's first request after the
//              last one ended; refused requests count)
//              rlf: rate-limiter-flexible's RateLimiterMemory (the same kind
//              of window; refused requests count too)
//   LIMIT      requests allowed a window
//   WINDOW_MS  the window's length in milliseconds
//   HEADERS    erl: draft-6, draft-7, draft-8 (standardHeaders, with
//              legacyHeaders off), legacy (X-RateLimit-* only, the
//              library's default), draft-7+legacy, or none. Every one but
//              none sends Retry-After on a 429, as the library does.
//              rlf: none, or retry-after (ceil of msBeforeNext in seconds)
//   ALG        rlf only: fixed (RateLimiterMemory), bursty (BurstyRateLimiter:
//              the fixed window, and BURST more a window of 10x as long),
//              even (execEvenly: admitted requests are delayed to spread a
//              window's points), block (blockDuration BLOCK_S s once over)
//
// Each request to /v1/ is logged to stdout as "unix-seconds status ms path",
// the 429s too; GET /healthz is proxied to the mock's /v1/models, unlimited
// and not logged.
'use strict';

const http = require('node:http');
const express = require('express');

const env = process.env;
const limit = Number(env.LIMIT || 20);
const windowMs = Number(env.WINDOW_MS || 1000);
const [upHost, upPort] = (env.UPSTREAM || '127.0.0.1:8080').split(':');
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

// proxy forwards req to the mock and pipes its answer back.
function proxy(req, res, path) {
  const up = http.request({
    host: upHost, port: Number(upPort), method: req.method, path: path || req.originalUrl,
    headers: { ...req.headers, host: `${upHost}:${upPort}` }, agent,
  }, (upRes) => {
    res.writeHead(upRes.statusCode, upRes.headers);
    upRes.pipe(res);
  });
  up.on('error', (err) => {
    if (!res.headersSent) res.status(502).send(`upstream: ${err.code || err.message}`);
    else res.destroy(err);
  });
  req.pipe(up);
}

// logged writes one line per /v1/ request when its answer is sent.
function logged(req, res, next) {
  const t0 = Date.now();
  res.on('finish', () => {
    const now = Date.now();
    process.stdout.write(`${(now / 1000).toFixed(3)} ${res.statusCode} ${now - t0} ${req.originalUrl}\n`);
  });
  next();
}

// erlLimiter is express-rate-limit as its README sets it up.
function erlLimiter() {
  const { rateLimit } = require('express-rate-limit');
  const headers = env.HEADERS || 'draft-8';
  const standard = { 'draft-6': 'draft-6', 'draft-7': 'draft-7', 'draft-8': 'draft-8', 'draft-7+legacy': 'draft-7' }[headers] || false;
  const legacy = headers === 'legacy' || headers === 'draft-7+legacy';
  if (!['draft-6', 'draft-7', 'draft-8', 'legacy', 'draft-7+legacy', 'none'].includes(headers)) {
    throw new Error(`HEADERS=${headers}: want draft-6, draft-7, draft-8, legacy, draft-7+legacy or none`);
  }
  return rateLimit({ windowMs, limit, standardHeaders: standard, legacyHeaders: legacy });
}

// rlfLimiter is rate-limiter-flexible's Express middleware as its wiki
// writes it: consume a point per request, 429 when rejected.
function rlfLimiter() {
  const { RateLimiterMemory, BurstyRateLimiter } = require('rate-limiter-flexible');
  const alg = env.ALG || 'fixed';
  const duration = windowMs / 1000;
  const opts = { points: limit, duration };
  let rl;
  switch (alg) {
    case 'fixed': rl = new RateLimiterMemory(opts); break;
    case 'even': rl = new RateLimiterMemory({ ...opts, execEvenly: true }); break;
    case 'block': rl = new RateLimiterMemory({ ...opts, blockDuration: Number(env.BLOCK_S || 2) }); break;
    case 'bursty':
      rl = new BurstyRateLimiter(new RateLimiterMemory(opts),
        new RateLimiterMemory({ keyPrefix: 'burst', points: Number(env.BURST || limit / 2), duration: 10 * duration }));
      break;
    default: throw new Error(`ALG=${alg}: want fixed, even, block or bursty`);
  }
  const headers = env.HEADERS || 'none';
  if (!['none', 'retry-after'].includes(headers)) throw new Error(`HEADERS=${headers}: want none or retry-after`);
  return (req, res, next) => {
    rl.consume(req.ip).then(() => next()).catch((rej) => {
      if (rej instanceof Error) return next(rej);
      if (headers === 'retry-after') res.set('Retry-After', String(Math.ceil(rej.msBeforeNext / 1000)));
      res.status(429).send('Too Many Requests');
    });
  };
}

const app = express();
app.disable('x-powered-by');
app.get('/healthz', (req, res) => proxy(req, res, '/v1/models'));
app.use('/v1/', logged, env.LIB === 'rlf' ? rlfLimiter() : erlLimiter(), (req, res) => proxy(req, res));
const server = app.listen(Number(env.PORT), '127.0.0.1');
server.keepAliveTimeout = 60000;
server.on('error', (err) => { console.error(`listen: ${err.code || err.message}`); process.exit(1); });
process.on('SIGTERM', () => { server.close(); server.closeAllConnections(); process.exit(0); });
