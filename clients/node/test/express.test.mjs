// The express-rate-limit store inside Express 5 and express-rate-limit 8:
// exact admissions under concurrency, directly and behind PgBouncer; denied
// hits never refunded with skipFailedRequests; successes given back with
// skipSuccessfulRequests; the headers of each draft agreeing with the
// database; a limit that is a function of the request; the window rolling
// over; a restart with requests in flight surfacing as the library's store
// error (500, or passed with passOnStoreError).  And, without a database,
// the store's notes of hits that spent nothing, in the orders requests of
// one key may finish in.
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

// A stand-in for FixedWindow that holds one counter of `rate` tokens, for
// the orders of calls no real request sequence pins down.
function counterOf(rate, { failedOpen = false } = {}) {
  const counter = { tokens: rate, refunds: 0 };
  counter.client = {
    async limit() {
      if (failedOpen) return { ok: true, retryAfter: null, remaining: null, resetAfter: null, failedOpen: true };
      const ok = counter.tokens >= 1;
      if (ok) counter.tokens -= 1;
      return { ok, retryAfter: ok ? null : 1000, remaining: counter.tokens, resetAfter: 1000 };
    },
    async refund(name, key, { cost }) {
      counter.refunds += 1;
      counter.tokens = Math.min(rate, counter.tokens + cost);
      return counter.tokens;
    },
    async check() { return { ok: counter.tokens >= 1, retryAfter: null, remaining: counter.tokens, resetAfter: 1000 }; },
  };
  return counter;
}

test('hits that spent nothing are never refunded, whatever order their decrements come in', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: 0 });
  const storeOf = (counter, options = {}) => {
    const store = new FixedWindowStore({ client: counter.client });
    store.init({ windowMs: 1000, limit: 1, skipFailedRequests: true, ...options });
    return store;
  };
  // an admitted request fails after another was denied: its decrement pays
  // off the denial's note, the denial's decrement refunds in its place
  let counter = counterOf(1);
  let store = storeOf(counter);
  assert.equal((await store.increment('k')).totalHits, 1);
  assert.equal((await store.increment('k')).totalHits, 2);
  await store.decrement('k');
  assert.equal(counter.refunds, 0);
  await store.decrement('k');
  assert.deepEqual([counter.refunds, counter.tokens], [1, 1]);
  // the library does not decrement a hit whose window ended: its note is
  // dropped a second after, and refunds are not held back by it any more
  counter = counterOf(1);
  store = storeOf(counter);
  await store.increment('k');
  await store.increment('k');                  // denied, its window ends at 1000
  t.mock.timers.tick(2000);
  await store.decrement('k');                  // the admitted one's, failed
  assert.deepEqual([counter.refunds, store.unspent.size], [1, 0]);
  // resetKey keeps the notes: a denial decremented after it gives back nothing spent after it
  counter = counterOf(2);
  store = storeOf(counter, { limit: 2 });
  await store.increment('k');
  await store.increment('k');
  assert.equal((await store.increment('k')).totalHits, 3);
  await store.resetKey('k');
  await store.increment('k');
  await store.decrement('k');                  // the denial's
  assert.equal(counter.tokens, 1);
  // refused at a limit of 0, admitted by failOpen: nothing spent, nothing given back
  counter = counterOf(1);
  store = storeOf(counter, { limit: 0 });
  assert.equal((await store.increment('k')).totalHits, 1);
  await store.decrement('k');
  counter = counterOf(1, { failedOpen: true });
  store = storeOf(counter, { skipFailedRequests: false, skipSuccessfulRequests: true });
  await store.increment('k');
  await store.decrement('k');
  assert.equal(counter.refunds, 0);
  // a refusal answered with a status below 400 is a success: skipSuccessfulRequests decrements it
  counter = counterOf(1);
  store = storeOf(counter, { skipFailedRequests: false, skipSuccessfulRequests: true, statusCode: 200 });
  await store.increment('k');
  await store.increment('k');
  await store.decrement('k');
  assert.equal(counter.refunds, 0);
  // without skipFailedRequests a 429 is never decremented: nothing is noted
  store = storeOf(counterOf(1), { skipFailedRequests: false, skipSuccessfulRequests: true });
  await store.increment('k');
  await store.increment('k');
  assert.equal(store.unspent.size, 0);
});

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
    // what this test catches: a store that refunds every decrement admits more
    class NaiveStore extends FixedWindowStore {
      async decrement(key) { await this.client.refund(this.name, key, { rate: 5, period: 604_800_000, cost: 1 }); }
    }
    const naive = new NaiveStore({ client: fw, name: uniqueName('express') });
    const naiveApp = await serve({ store: naive, skipFailedRequests: true });
    try {
      let admitted = 0;
      for (let i = 0; i < 20; i += 1) {
        if ((await get(`${naiveApp.url}/ok`)).status === 200) admitted += 1;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      assert.ok(admitted > 5, `the naive store admitted ${admitted}`);
    } finally {
      await naiveApp.close();
    }
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
      const checked = await fw.check(store.name, 'one', { rate: 2, period: 60_000, cost: 0 });
      assert.deepEqual([checked.remaining, checked.resetAfter], [1, 40_000]);
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
        assert.match(seen(first, 'ratelimit'), /^"2-in-1min"; r=1; t=40$/);
        assert.match(seen(refused, 'ratelimit'), /^"2-in-1min"; r=0; t=40$/);
        assert.match(seen(refused, 'ratelimit-policy'), /^"2-in-1min"; q=2; w=60; pk=:/);
      } else {
        assert.equal(seen(first, 'x-ratelimit-remaining'), '1');
        assert.equal(seen(refused, 'x-ratelimit-remaining'), '0');
        assert.equal(seen(refused, 'x-ratelimit-limit'), '2');
        const resetAt = Number(seen(refused, 'x-ratelimit-reset')) * 1000;   // real time: the clock is the database's
        assert.ok(Math.abs(resetAt - (Date.now() + 40_000)) <= 2000, `reset at ${resetAt}`);
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
    // resetKey gives back at most what each key was counted with
    await store.resetKey('premium');
    await store.resetKey('basic');
    assert.equal((await fw.check(store.name, 'premium', { rate: 4, period: 604_800_000, cost: 0 })).remaining, 4);
    assert.deepEqual(await run('basic', 3), [200, 200, 429]);
  } finally {
    await app.close();
  }
  // failed requests given back, under each user's own limit
  const failing = new FixedWindowStore({ client: fw, name: uniqueName('express') });
  const failingApp = await serve({
    store: failing,
    skipFailedRequests: true,
    limit: (req) => (req.query.user === 'premium' ? 4 : 2),
    keyGenerator: failing.keyGenerator(byUser),
  });
  try {
    for (let i = 0; i < 3; i += 1) assert.equal((await get(`${failingApp.url}/fail?user=basic`)).status, 500);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal((await fw.check(failing.name, 'basic', { rate: 2, period: 604_800_000, cost: 0 })).remaining, 2);
    const statuses = [];
    for (let i = 0; i < 4; i += 1) {
      statuses.push((await get(`${failingApp.url}/ok?user=basic`)).status);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.deepEqual(statuses, [200, 200, 429, 429]);
    assert.equal((await fw.check(failing.name, 'basic', { rate: 2, period: 604_800_000, cost: 0 })).remaining, 0);
  } finally {
    await failingApp.close();
  }
  // a limiter without the store's keyGenerator: express-rate-limit only logs
  // what init throws, so every request takes the store-error path
  const errors = [];
  const wrong = await serve({ store: new FixedWindowStore({ client: fw, name: uniqueName('express') }),
    limit: () => 3, keyGenerator: byUser }, { errors });
  try {
    assert.equal((await get(`${wrong.url}/ok?user=x`)).status, 500);
    assert.match(String(errors[0]), /TypeError: with limit as a function, pass the store's keyGenerator/);
  } finally {
    await wrong.close();
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
