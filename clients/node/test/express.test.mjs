// The express-rate-limit store inside Express 5 and express-rate-limit 8:
// exact admissions under concurrency, directly and behind PgBouncer; denied
// hits never refunded with skipFailedRequests; successes given back with
// skipSuccessfulRequests; the headers of each draft agreeing with the
// database; a limit that is a function of the request; the window rolling
// over; a restart with requests in flight surfacing as the library's store
// error (500, or passed with passOnStoreError).
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import { FixedWindow, FixedWindowStore, FixedWindowUnavailableError } from '../lib/index.mjs';
import { T0, clockedPool, pool, restart, uniqueName } from './helpers.mjs';

// An Express app limited by options (store and the rest), on a free port;
// GET /ok answers 200, GET /fail 500.  Resolves to its URL and a close().
async function serve(limiterOptions, { errors = [] } = {}) {
  const app = express();
  app.use(rateLimit({ windowMs: 604_800_000, limit: 5, keyGenerator: () => 'one', ...limiterOptions }));
  app.get('/ok', (req, res) => res.send('ok'));
  app.get('/fail', (req, res) => res.status(500).send('failed'));
  app.use((err, req, res, next) => {   // eslint-disable-line no-unused-vars
    errors.push(err);
    res.status(500).send('store error');
  });
  const server = await new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

const get = async (url) => {
  const res = await fetch(url);
  await res.text();
  return res;
};

test('200 concurrent requests on one key at a limit of 5: exactly 5 admitted, directly and behind PgBouncer', async () => {
  for (const pooler of [false, true]) {
    const fw = new FixedWindow({ pool: pool({ pooler, max: 8 }) });
    const store = new FixedWindowStore({ client: fw, name: uniqueName('express') });
    const app = await serve({ store });
    try {
      const statuses = (await Promise.all(Array.from({ length: 200 }, () => get(`${app.url}/ok`)))).map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 200).length, 5, `pooler ${pooler}`);
      assert.equal(statuses.filter((s) => s === 429).length, 195);
      assert.equal((await fw.check(store.name, 'one', { rate: 5, period: 604_800_000, cost: 0 })).remaining, 0);
    } finally {
      await app.close();
    }
  }
});

test('skipFailedRequests: a denied hit is never refunded (5 of 20 sequential requests, as MemoryStore)', async () => {
  const fw = new FixedWindow({ pool: pool() });
  const store = new FixedWindowStore({ client: fw, name: uniqueName('express') });
  const app = await serve({ store, skipFailedRequests: true });
  try {
    const statuses = [];
    for (let i = 0; i < 20; i += 1) {
      statuses.push((await get(`${app.url}/ok`)).status);
      await new Promise((resolve) => setTimeout(resolve, 5));   // the decrement runs after the answer
    }
    assert.deepEqual(statuses, [...Array(5).fill(200), ...Array(15).fill(429)]);
    assert.equal((await fw.check(store.name, 'one', { rate: 5, period: 604_800_000, cost: 0 })).remaining, 0);
    // a failed admitted request gets its token back
    const other = new FixedWindowStore({ client: fw, name: uniqueName('express') });
    const failing = await serve({ store: other, skipFailedRequests: true });
    try {
      for (let i = 0; i < 7; i += 1) assert.equal((await get(`${failing.url}/fail`)).status, 500);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal((await fw.check(other.name, 'one', { rate: 5, period: 604_800_000, cost: 0 })).remaining, 5);
    } finally {
      await failing.close();
    }
  } finally {
    await app.close();
  }
});

test('skipSuccessfulRequests: successes are given back, failures count', async () => {
  const fw = new FixedWindow({ pool: pool() });
  const store = new FixedWindowStore({ client: fw, name: uniqueName('express') });
  const app = await serve({ store, limit: 2, skipSuccessfulRequests: true });
  try {
    for (let i = 0; i < 6; i += 1) {
      assert.equal((await get(`${app.url}/ok`)).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal((await fw.check(store.name, 'one', { rate: 2, period: 604_800_000, cost: 0 })).remaining, 2);
    assert.equal((await get(`${app.url}/fail`)).status, 500);
    assert.equal((await get(`${app.url}/fail`)).status, 500);
    assert.equal((await get(`${app.url}/fail`)).status, 429);
  } finally {
    await app.close();
  }
});

test('the headers of each draft, on 200 and on 429, agree with the database; the window rolls over', async () => {
  const clocked = clockedPool({ at: T0 + 20_000 });
  const fw = new FixedWindow({ pool: clocked });
  for (const headers of [{ standardHeaders: 'draft-6' }, { standardHeaders: 'draft-7' },
    { standardHeaders: 'draft-8' }, { standardHeaders: false, legacyHeaders: true }]) {
    clocked.at(T0 + 20_000);
    const store = new FixedWindowStore({ client: fw, name: uniqueName('express') });
    const app = await serve({ store, windowMs: 60_000, limit: 2, ...headers });
    try {
      const first = await get(`${app.url}/ok`);
      await get(`${app.url}/ok`);
      const refused = await get(`${app.url}/ok`);
      assert.equal(first.status, 200);
      assert.equal(refused.status, 429);
      const seen = (res, name) => res.headers.get(name);
      if (headers.standardHeaders === 'draft-6') {
        assert.equal(seen(first, 'ratelimit-remaining'), '1');
        assert.equal(seen(refused, 'ratelimit-remaining'), '0');
        assert.equal(seen(refused, 'ratelimit-reset'), '40');
      } else if (headers.standardHeaders === 'draft-7') {
        assert.equal(seen(first, 'ratelimit'), 'limit=2, remaining=1, reset=40');
        assert.equal(seen(refused, 'ratelimit'), 'limit=2, remaining=0, reset=40');
      } else if (headers.standardHeaders === 'draft-8') {
        assert.match(seen(refused, 'ratelimit'), /; r=0; t=40$/);
      } else {
        assert.equal(seen(first, 'x-ratelimit-remaining'), '1');
        assert.equal(seen(refused, 'x-ratelimit-remaining'), '0');
      }
      assert.equal(seen(refused, 'retry-after'), '40');
      // what the store reports agrees with the database
      const info = await store.get('one');
      assert.equal(info.totalHits, 2);
      // the next window admits again
      clocked.at(T0 + 60_000);
      const next = await get(`${app.url}/ok`);
      assert.equal(next.status, 200);
    } finally {
      await app.close();
    }
  }
});

test('a limit that is a function of the request, through the store\'s keyGenerator', async () => {
  const fw = new FixedWindow({ pool: pool() });
  const store = new FixedWindowStore({ client: fw, name: uniqueName('express') });
  const byUser = (req) => req.query.user;
  const app = await serve({
    store,
    limit: (req) => (req.query.user === 'premium' ? 4 : 2),
    keyGenerator: store.keyGenerator(byUser),
  });
  try {
    const run = async (user, n) => {
      const statuses = [];
      for (let i = 0; i < n; i += 1) statuses.push((await get(`${app.url}/ok?user=${user}`)).status);
      return statuses;
    };
    assert.deepEqual(await run('premium', 5), [200, 200, 200, 200, 429]);
    assert.deepEqual(await run('basic', 3), [200, 200, 429]);
  } finally {
    await app.close();
  }
  // without the store's keyGenerator, the store refuses at once
  assert.throws(() => store.init({ windowMs: 1000, limit: () => 1, keyGenerator: byUser }), /keyGenerator/);
});

test('a restart with requests in flight: the store error takes the library\'s path (500, or passed with passOnStoreError)', async () => {
  const fw = new FixedWindow({ pool: pool({ max: 8 }) });
  const errors = [];
  const strict = await serve({ store: new FixedWindowStore({ client: fw, name: uniqueName('express') }),
    limit: 1_000_000, keyGenerator: () => `k${Math.random()}` }, { errors });
  const lenient = await serve({ store: new FixedWindowStore({ client: fw, name: uniqueName('express') }),
    limit: 1_000_000, keyGenerator: () => `k${Math.random()}`, passOnStoreError: true,
    validate: { creationStack: false } });
  let stop = false;
  const seen = { strict: new Set(), lenient: new Set() };
  const caller = async (which, url) => {
    while (!stop) seen[which].add((await get(`${url}/ok`)).status);
  };
  try {
    const callers = [...Array.from({ length: 4 }, () => caller('strict', strict.url)),
      ...Array.from({ length: 4 }, () => caller('lenient', lenient.url))];
    await new Promise((resolve) => setTimeout(resolve, 200));
    await restart();
    await new Promise((resolve) => setTimeout(resolve, 300));
    stop = true;
    await Promise.all(callers);
    assert.deepEqual([...seen.strict].sort(), [200, 500]);
    assert.deepEqual([...seen.lenient], [200]);
    assert.ok(errors.length > 0 && errors.every((err) => err instanceof FixedWindowUnavailableError), String(errors[0]));
    assert.equal((await get(`${strict.url}/ok`)).status, 200);
  } finally {
    await strict.close();
    await lenient.close();
  }
});
