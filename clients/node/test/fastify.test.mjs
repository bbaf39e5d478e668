// The @fastify/rate-limit store inside a Fastify 5 app: exact admissions
// under concurrency, the headers the plugin sends as the database counts,
// routes apart, max as a function, timeWindow as a string, windows rolling
// over, ban, a peek, the options a fixed grid cannot do refused, the store's
// errors on the plugin's path (skipOnError or fastify's error handler),
// a restart with requests in flight, and PgBouncer in transaction mode.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import rateLimit from '@fastify/rate-limit';
import * as pkg from '../lib/index.mjs';
const { FixedWindow, FixedWindowUnavailableError, fastifyStore } = pkg;
import { T0, clockedPool, pool, restart, uniqueName } from './helpers.mjs';

// Windows on the wall clock are a week long, so that none ends during a test.
const WEEK = 7 * 86_400_000;

// A Fastify app limited by the store: the key is the request's x-key header,
// GET / takes the global limit, and routes() may add more.
async function appWith(fw, name, settings = {}, routes = () => {}) {
  const app = Fastify();
  await app.register(rateLimit, {
    store: fastifyStore(fw, { name }),
    keyGenerator: (request) => request.headers['x-key'] ?? 'anonymous',
    ...settings,
  });
  app.get('/', async () => 'hello');
  routes(app);
  await app.ready();
  return app;
}

function get(app, url, key = 'k') {
  return app.inject({ method: 'GET', url, headers: { 'x-key': key } });
}

// The headers the plugin sends, as numbers.
function limitHeaders(response) {
  const headers = {};
  for (const header of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']) {
    if (response.headers[header] !== undefined) headers[header] = Number(response.headers[header]);
  }
  return headers;
}

function statusCounts(responses) {
  const counts = {};
  for (const response of responses) counts[response.statusCode] = (counts[response.statusCode] ?? 0) + 1;
  return counts;
}

for (const pooler of [false, true]) {
  test(`exact under concurrency${pooler ? ', behind PgBouncer in transaction mode' : ''}: 200 requests on one key at max 5 admit 5`, async () => {
    const fw = new FixedWindow({ pool: pool({ pooler, max: 16 }) });
    const name = uniqueName('fastify');
    const app = await appWith(fw, name, { max: 5, timeWindow: WEEK });
    const responses = await Promise.all(Array.from({ length: 200 }, () => get(app, '/', 'hot')));
    assert.deepEqual(statusCounts(responses), { 200: 5, 429: 195 });
    // the denied requests spent nothing: the counter holds what the 5 left
    assert.equal((await fw.check(name, 'hot', { rate: 5, period: WEEK, cost: 0 })).remaining, 0);
    const remainingSent = responses.filter((r) => r.statusCode === 200).map((r) => r.headers['x-ratelimit-remaining']).sort();
    assert.deepEqual(remainingSent, ['0', '1', '2', '3', '4']);
    await app.close();
  });
}

test('the headers on 200 and 429 agree with the database, timeWindow as a string, and the window rolling over', async () => {
  const clocked = clockedPool({ at: T0 + 15_000 });
  const fw = new FixedWindow({ pool: clocked });
  const name = uniqueName('fastify');
  const app = await appWith(fw, name, { max: 3, timeWindow: '1 minute' });
  const limit = { rate: 3, period: 60_000, cost: 0 };

  const first = await get(app, '/');
  assert.equal(first.statusCode, 200);
  const held = await fw.check(name, 'k', limit);
  assert.deepEqual(limitHeaders(first),
    { 'x-ratelimit-limit': 3, 'x-ratelimit-remaining': held.remaining, 'x-ratelimit-reset': held.resetAfter / 1000 });
  assert.deepEqual(limitHeaders(first), { 'x-ratelimit-limit': 3, 'x-ratelimit-remaining': 2, 'x-ratelimit-reset': 45 });

  clocked.at(T0 + 20_500);
  await get(app, '/');
  assert.deepEqual(limitHeaders(await get(app, '/')),
    { 'x-ratelimit-limit': 3, 'x-ratelimit-remaining': 0, 'x-ratelimit-reset': 40 });   // 39.5 s, rounded up
  const refused = await get(app, '/');
  assert.equal(refused.statusCode, 429);
  assert.deepEqual(limitHeaders(refused),
    { 'x-ratelimit-limit': 3, 'x-ratelimit-remaining': 0, 'x-ratelimit-reset': 40, 'retry-after': 40 });
  assert.match(refused.json().message, /retry in 40 seconds/);
  const denied = await fw.check(name, 'k', { ...limit, cost: 1 });
  assert.equal(denied.ok, false);
  assert.equal(Math.ceil(denied.retryAfter / 1000), 40);
  // another key is counted apart
  assert.equal((await get(app, '/', 'other')).statusCode, 200);

  // the next window of the grid admits again, its reset the whole minute
  clocked.at(T0 + 60_000);
  const next = await get(app, '/');
  assert.equal(next.statusCode, 200);
  assert.deepEqual(limitHeaders(next), { 'x-ratelimit-limit': 3, 'x-ratelimit-remaining': 2, 'x-ratelimit-reset': 60 });
  await app.close();
});

test('routes with a config of their own count apart (child), and max as a function', async () => {
  const fw = new FixedWindow({ pool: pool() });
  const name = uniqueName('fastify');
  const app = await appWith(fw, name, { max: 5, timeWindow: WEEK }, (routes) => {
    routes.get('/a', { config: { rateLimit: { max: 2 } } }, async () => 'a');
    routes.get('/b', { config: { rateLimit: { max: 2 } } }, async () => 'b');
    routes.get('/tiered', {
      config: { rateLimit: { max: async (request, key) => (key === 'pro' ? 3 : 1), timeWindow: '7 days' } },
    }, async () => 'tiered');
    for (const url of ['/otp/send', '/otp/resend']) {
      routes.get(url, { config: { rateLimit: { max: 2, groupId: 'otp' } } }, async () => 'otp');
    }
  });
  const onA = [];
  for (let i = 0; i < 3; i += 1) onA.push((await get(app, '/a')).statusCode);
  assert.deepEqual(onA, [200, 200, 429]);
  assert.equal((await get(app, '/b')).statusCode, 200);
  const global = await get(app, '/');
  assert.equal(global.statusCode, 200);
  assert.equal(global.headers['x-ratelimit-remaining'], '4');
  // each route in a fixed_window name of its own
  assert.equal((await fw.check(`${name}:GET /a`, 'k', { rate: 2, period: WEEK, cost: 0 })).remaining, 0);
  assert.equal((await fw.check(`${name}:GET /b`, 'k', { rate: 2, period: WEEK, cost: 0 })).remaining, 1);
  assert.equal((await fw.check(name, 'k', { rate: 5, period: WEEK, cost: 0 })).remaining, 4);

  // routes of one groupId share its counter
  const codes = [];
  for (const url of ['/otp/send', '/otp/send', '/otp/resend']) codes.push((await get(app, url)).statusCode);
  assert.deepEqual(codes, [200, 200, 429]);
  assert.equal((await fw.check(`${name}:group otp`, 'kotp', { rate: 2, period: WEEK, cost: 0 })).remaining, 0);

  const tiered = async (key) => {
    const codes = [];
    for (let i = 0; i < 4; i += 1) codes.push((await get(app, '/tiered', key)).statusCode);
    return codes;
  };
  assert.deepEqual(await tiered('pro'), [200, 200, 200, 429]);
  assert.deepEqual(await tiered('free'), [200, 429, 429, 429]);
  const proHeaders = limitHeaders(await get(app, '/tiered', 'pro'));
  assert.equal(proHeaders['x-ratelimit-limit'], 3);
  // the end of the week of the grid (from the epoch) that holds now
  const toNextWindow = Math.ceil((WEEK - (Date.now() % WEEK)) / 1000);
  assert.ok(Math.abs(proHeaders['retry-after'] - toNextWindow) <= 2, `${proHeaders['retry-after']} ${toNextWindow}`);
  await app.close();
});

test('a peek (createRateLimit with increment: false) spends nothing, and is over the limit when nothing is left', async () => {
  const fw = new FixedWindow({ pool: pool() });
  const name = uniqueName('fastify');
  const app = await appWith(fw, name, { global: false, max: 5, timeWindow: WEEK });
  // with options of its own, the limiter is a child store
  const limiter = app.createRateLimit({ max: 2 });
  const request = { headers: { 'x-key': 'peeked' }, routeOptions: { config: {} } };
  const fresh = await limiter(request, { increment: false });
  assert.deepEqual([fresh.remaining, fresh.isExceeded], [2, false]);
  assert.ok(fresh.ttl > 0 && fresh.ttl <= WEEK);
  assert.equal((await limiter(request)).remaining, 1);
  assert.equal((await limiter(request, { increment: false })).remaining, 1);
  await limiter(request);
  const spentAll = await limiter(request, { increment: false });
  assert.deepEqual([spentAll.remaining, spentAll.isExceeded], [0, true]);
  // it counts in a name of its own, numbered: it has no route
  assert.equal((await fw.check(`${name}:limiter 1`, 'peeked', { rate: 2, period: WEEK, cost: 0 })).remaining, 0);
  // without options, the limiter is the global store
  const global = app.createRateLimit();
  assert.equal((await global(request)).remaining, 4);
  assert.equal((await fw.check(name, 'peeked', { rate: 5, period: WEEK, cost: 0 })).remaining, 4);
  await app.close();
});

test('ban: 0 answers 403 at the first denial; ban: 2 after two 429s in the window, denials counted apart', async () => {
  const fw = new FixedWindow({ pool: pool() });
  const banAtOnce = await appWith(fw, uniqueName('fastify'), { max: 1, timeWindow: WEEK, ban: 0 });
  assert.deepEqual([(await get(banAtOnce, '/')).statusCode, (await get(banAtOnce, '/')).statusCode], [200, 403]);
  await banAtOnce.close();

  const name = uniqueName('fastify');
  const banAfterTwo = await appWith(fw, name, { max: 1, timeWindow: WEEK, ban: 2 });
  const codes = [];
  for (let i = 0; i < 5; i += 1) codes.push((await get(banAfterTwo, '/')).statusCode);
  assert.deepEqual(codes, [200, 429, 429, 403, 403]);
  // the limit itself spent only the admitted request
  assert.equal((await fw.check(name, 'k', { rate: 1, period: WEEK, cost: 0 })).remaining, 0);
  // a peek sees the ban, and a key with one denial as exceeded but not banned
  const peek = banAfterTwo.createRateLimit();
  const banned = await peek({ headers: { 'x-key': 'k' }, routeOptions: { config: {} } }, { increment: false });
  assert.deepEqual([banned.isExceeded, banned.isBanned], [true, true]);
  await get(banAfterTwo, '/', 'once');
  await get(banAfterTwo, '/', 'once');
  const once = await peek({ headers: { 'x-key': 'once' }, routeOptions: { config: {} } }, { increment: false });
  assert.deepEqual([once.isExceeded, once.isBanned], [true, false]);
  // concurrent denials are counted exactly too
  const many = await Promise.all(Array.from({ length: 50 }, () => get(banAfterTwo, '/', 'crowd')));
  assert.deepEqual(statusCounts(many), { 200: 1, 429: 2, 403: 47 });
  await banAfterTwo.close();
});

test('max 0 refuses every request', async () => {
  const fw = new FixedWindow({ pool: pool() });
  const app = await appWith(fw, uniqueName('fastify'), { max: 0, timeWindow: WEEK });
  const refused = await get(app, '/');
  assert.equal(refused.statusCode, 429);
  assert.ok(Number(refused.headers['retry-after']) > 0);
  await app.close();
});

test('continueExceeding and exponentialBackoff are refused clearly, globally or on a route', async () => {
  const fw = new FixedWindow({ pool: pool() });
  for (const option of ['continueExceeding', 'exponentialBackoff']) {
    await assert.rejects(appWith(fw, uniqueName('fastify'), { [option]: true }),
      (err) => new RegExp(`does not support ${option}: .*fixed grid`).test(err.message));
    await assert.rejects(appWith(fw, uniqueName('fastify'), {}, (routes) => {
      routes.get('/r', { config: { rateLimit: { max: 2, [option]: true } } }, async () => 'r');
    }), (err) => new RegExp(`does not support ${option} \\(route GET /r\\)`).test(err.message));
  }
});

test('a store error takes the plugin\'s path: 500 from fastify\'s error handler, or let through with skipOnError', async () => {
  const fw = new FixedWindow({ pool: pool({ host: '127.0.0.1', port: 1 }) });
  const strict = await appWith(fw, uniqueName('fastify'), { max: 5 });
  const failed = await get(strict, '/');
  assert.equal(failed.statusCode, 500);
  assert.equal(failed.json().error, 'Internal Server Error');
  await strict.close();

  const lenient = await appWith(fw, uniqueName('fastify'), { max: 5, skipOnError: true });
  const passed = await get(lenient, '/');
  assert.equal(passed.statusCode, 200);
  assert.deepEqual(limitHeaders(passed), { 'x-ratelimit-limit': 5, 'x-ratelimit-remaining': 5, 'x-ratelimit-reset': 0 });
  await lenient.close();

  // a client that fails open answers as skipOnError does
  const failingOpen = new FixedWindow({ pool: pool({ host: '127.0.0.1', port: 1 }), failOpen: true });
  const opened = await appWith(failingOpen, uniqueName('fastify'), { max: 5 });
  const through = await get(opened, '/');
  assert.equal(through.statusCode, 200);
  assert.equal(through.headers['x-ratelimit-remaining'], '5');
  await opened.close();

  // the error the handler gets is the client's
  const seen = [];
  const handled = Fastify();
  handled.setErrorHandler((err, request, reply) => {
    seen.push(err);
    reply.code(503).send({ unavailable: true });
  });
  await handled.register(rateLimit, { store: fastifyStore(fw), max: 5 });
  handled.get('/', async () => 'hello');
  assert.equal((await handled.inject({ url: '/' })).statusCode, 503);
  assert.ok(seen[0] instanceof FixedWindowUnavailableError, String(seen[0]));
  await handled.close();
});

test('a database restart with requests in flight: no crash, 500s or let through (skipOnError), then 200 again', async () => {
  const fw = new FixedWindow({ pool: pool({ max: 8 }) });
  const strict = await appWith(fw, uniqueName('fastify'), { max: 1000, timeWindow: WEEK });
  const lenient = await appWith(fw, uniqueName('fastify'), { max: 1000, timeWindow: WEEK, skipOnError: true });
  const seen = { strict: [], lenient: [] };
  let stop = false;
  let sent = 0;
  const client = async (app, into) => {
    while (!stop) {
      sent += 1;
      const response = await get(app, '/', `k${sent}`);
      into.push(response);
      if (response.statusCode !== 200) await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const clients = [
    ...Array.from({ length: 4 }, () => client(strict, seen.strict)),
    ...Array.from({ length: 4 }, () => client(lenient, seen.lenient)),
  ];
  await new Promise((resolve) => setTimeout(resolve, 200));
  await restart();
  await new Promise((resolve) => setTimeout(resolve, 300));
  stop = true;
  await Promise.all(clients);

  const strictCounts = statusCounts(seen.strict);
  assert.deepEqual(Object.keys(strictCounts).sort(), ['200', '500'], JSON.stringify(strictCounts));
  assert.deepEqual(Object.keys(statusCounts(seen.lenient)), ['200']);
  // with skipOnError the failed store calls let requests through without a count
  assert.ok(seen.lenient.some((r) => r.headers['x-ratelimit-reset'] === '0'), 'some store calls failed');
  assert.ok(seen.lenient.some((r) => r.headers['x-ratelimit-remaining'] === '999'), 'some were counted');
  // afterwards the database counts again
  const after = await get(strict, '/', 'after');
  assert.equal(after.statusCode, 200);
  assert.equal(after.headers['x-ratelimit-remaining'], '999');
  await strict.close();
  await lenient.close();
});
