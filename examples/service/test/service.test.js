// Drives the example service over HTTP with Node's fetch, as a client would.
// The harness (examples/service/test.sh) starts PostgreSQL with the schema
// and the service with FW_TEST=1, and passes its address in SERVICE_URL.
// Every request carries X-Test-Clock, so the windows are those of a fixed
// time and passing one takes no waiting.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { T0, addKeys, clock, get, hello, pgCtl, raw, service, sql, startService, tokens, until } from './helpers.js';

// The API keys the tests use, each the key of a client of the same name.
const KEYS = ['key-1', 'key-2', 'k'.repeat(1024), 'held', 'pool', 'restart'];
before(() => addKeys(KEYS));

async function signup(ip, email, at) {
  const res = await fetch(`${service}/signup`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': ip, 'X-Test-Clock': clock(at) },
    body: JSON.stringify({ email }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

test('the sixth call in a minute is a 429 with the headers, and after Retry-After it is a 200 again', async () => {
  const at = T0 + 15_000; // 45 s before the window ends
  for (let i = 1; i <= 5; i++) {
    const r = await hello('key-1', at);
    assert.equal(r.status, 200, `call ${i}`);
    assert.equal(r.headers.get('ratelimit-policy'), '"api";q=5;w=60');
    assert.equal(r.headers.get('ratelimit'), `"api";r=${5 - i};t=45`);
    assert.equal(r.headers.get('x-ratelimit-limit'), '5');
    assert.equal(r.headers.get('x-ratelimit-remaining'), String(5 - i));
    assert.equal(r.headers.get('x-ratelimit-reset'), '45');
    assert.equal(r.headers.get('retry-after'), null);
  }

  const denied = await hello('key-1', at);
  assert.equal(denied.status, 429);
  assert.equal(denied.headers.get('retry-after'), '45');
  assert.equal(denied.headers.get('ratelimit'), '"api";r=0;t=45');
  assert.equal(denied.headers.get('x-ratelimit-remaining'), '0');
  assert.deepEqual(denied.body, { error: 'rate limit exceeded', retry_after: 45 });

  // another key has a window of its own
  assert.equal((await hello('key-2', at)).status, 200);

  // a moment before Retry-After it is still refused, at Retry-After it is not
  const retryAfter = Number(denied.headers.get('retry-after')) * 1000;
  assert.equal((await hello('key-1', at + retryAfter - 1)).status, 429);
  const again = await hello('key-1', at + retryAfter);
  assert.equal(again.status, 200);
  assert.equal(again.headers.get('ratelimit'), '"api";r=4;t=60');
});

test('the fourth signup of an address in a day is a 429 from the trigger, with Retry-After', async () => {
  for (let i = 1; i <= 3; i++) {
    assert.equal((await signup('192.0.2.1', `user${i}@example.com`, T0)).status, 201, `signup ${i}`);
  }
  const denied = await signup('192.0.2.1', 'user4@example.com', T0);
  assert.equal(denied.status, 429);
  assert.equal(denied.body.error, 'too many signups from this address');
  assert.equal(denied.headers.get('retry-after'), String(14 * 3600)); // until midnight UTC
  assert.equal(denied.headers.get('ratelimit-policy'), '"signup";q=3;w=86400');
  assert.equal(denied.headers.get('ratelimit'), `"signup";r=0;t=${14 * 3600}`);

  // other addresses sign up; the next day this one does again
  assert.equal((await signup('192.0.2.2', 'other@example.com', T0)).status, 201);
  assert.equal((await signup('192.0.2.1', 'user4@example.com', T0 + 14 * 3600 * 1000)).status, 201);
});

test('bad requests are 400 and unknown paths 404, never an allowed call', async () => {
  assert.equal((await signup('192.0.2.3', undefined, T0)).status, 400);
  const res = await fetch(`${service}/nowhere`);
  assert.equal(res.status, 404);
});

test('an unknown API key is a 401 that spends the address\'s quota, so that keys cannot be guessed freely', async () => {
  // 1.3 before its review took any X-Api-Key as a quota of its own: a
  // client changing the header got a fresh quota per request
  const from = '198.51.100.50';
  const statuses = [];
  for (let i = 1; i <= 6; i++) statuses.push((await hello(`guess-${i}`, T0, from)).status);
  assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
  assert.equal((await hello(undefined, T0, from)).status, 429, 'the address itself is out of tokens');
  assert.equal((await hello('key-2', T0, from)).status, 200, 'a known key has its own quota');
  const unknown = await hello('guess-7', T0 + 60_000, from);
  assert.deepEqual(unknown.body, { error: 'unknown API key' });
});

test('without a key the address is the quota; an IPv6 client is limited by its /64', async () => {
  const statuses = [];
  for (let i = 1; i <= 6; i++) statuses.push((await hello(undefined, T0, `2001:db8:7:7::${i}`)).status);
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
  assert.equal((await hello(undefined, T0, '2001:db8:7:8::1')).status, 200, 'another /64');
  assert.deepEqual((await hello(undefined, T0, '198.51.100.60')).body, { hello: 'anonymous' });
  // an API key named after an address is no address: the quotas are apart
  assert.equal((await hello('2001:db8:7:7::1', T0, '198.51.100.61')).status, 401);
});

test('a body over 16 kB is a 413, and the service goes on', async () => {
  const res = await fetch(`${service}/signup`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Test-Clock': clock(T0) },
    body: JSON.stringify({ email: 'x'.repeat(64 * 1024) }),
    signal: AbortSignal.timeout(10_000),
  });
  assert.equal(res.status, 413);
  assert.deepEqual(await res.json(), { error: 'the body must be at most 16384 bytes' });
  assert.equal((await hello('key-2', T0 + 120_000)).status, 200);
});

test('a key too long is a 400 that shows no internals (1.2.1: a 500 with SQLSTATE 54000)', async () => {
  const long = await hello('k'.repeat(3000), T0);
  assert.equal(long.status, 400);
  assert.deepEqual(long.body, { error: 'X-Api-Key must be at most 1024 bytes' });
  assert.equal((await hello('k'.repeat(1024), T0)).status, 200);
});

test('forged X-Forwarded-For addresses share the quota of the address the proxy saw', async () => {
  // The proxy (here, the test) appends the address it saw; whatever the
  // client wrote before it does not count.  1.2.1 took the leftmost entry:
  // a forged address per request got 5 of 5 signups past a limit of 3.
  const statuses = [];
  for (let i = 1; i <= 5; i++) {
    statuses.push((await signup(`203.0.113.${i}, 192.0.2.77`, `forger${i}@example.com`, T0)).status);
  }
  assert.deepEqual(statuses, [201, 201, 201, 429, 429]);
});

test('a call held up beyond its deadline is a 503, and spends nothing, not even once the lock is released', async () => {
  // Behind pgbouncer, 1.5's deadline was a startup parameter: refused
  // (every request a 503), or ignored, and then the held call spent its
  // token once the lock was released, long after its client had its 503.
  const at = T0 + 3600_000;
  assert.equal((await hello('held', at)).status, 200);
  const before = await tokens('key:held', at);
  // Hold fw_policy locked, and change an override: the service's sessions
  // must read the policy again, and wait for the lock.
  const locker = new pg.Client();
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE fw_policy IN ACCESS EXCLUSIVE MODE');
  await sql("SELECT fw_unoverride('api', 'nobody')");
  const started = Date.now();
  const held = await hello('held', at);
  const waited = Date.now() - started;
  await locker.query('ROLLBACK');
  await locker.end();
  assert.equal(held.status, 503);
  assert.equal(held.headers.get('retry-after'), '2');
  assert.deepEqual(held.body, { error: 'service unavailable' });
  assert.ok(waited < 5000, `answered after ${waited} ms, within the deadline`);
  // whatever statement of the call is still on the server has ended
  await until('no call of the service running', 10, async () =>
    ((await sql(`SELECT count(*) AS n FROM pg_stat_activity
                 WHERE query LIKE '%fw_limit_windows%' AND state <> 'idle' AND pid <> pg_backend_pid()`))[0].n === '0'
      ? true : undefined));
  assert.equal(await tokens('key:held', at), before, 'the cancelled call spent nothing');
  assert.equal((await hello('held', at)).status, 200);
});

test('a pooled connection ended by the server does not end the service', async () => {
  assert.equal((await hello('pool', T0)).status, 200);
  const ended = await sql(`SELECT count(pg_terminate_backend(pid)) AS n
                           FROM (SELECT pid FROM pg_stat_activity
                                 WHERE application_name = 'fixed-window-example' OFFSET 0) AS service`);
  assert.ok(Number(ended[0].n) > 0, 'the service had connections to end');
  await new Promise((resolve) => setTimeout(resolve, 200)); // the pool hears of it
  assert.equal((await hello('pool', T0)).status, 200);
});

test('a database restart: 503 with Retry-After while it is down, 200 once it is back', async () => {
  // 1.2.1 had no handler for the pool's errors: Node exited when the
  // restart ended its idle connections, and every request after failed.
  assert.equal((await hello('restart', T0)).status, 200);
  await pgCtl('stop', '-m', 'fast');
  try {
    const down = await hello('restart', T0);
    assert.equal(down.status, 503);
    assert.equal(down.headers.get('retry-after'), '2');
    assert.deepEqual(down.body, { error: 'service unavailable' });
  } finally {
    await pgCtl('start');
  }
  await until('a 200 once the database is back', 30, async () =>
    ((await hello('restart', T0)).status === 200 ? true : undefined));
});

test('an API key is UTF-8 (1.5 read it as Latin-1, and a key with any other character never matched); other bytes are a 400', async () => {
  const key = 'clé-ключ-🔑';
  const long = 'é'.repeat(512);          // 1024 bytes
  await addKeys([key, long]);
  // a header carries bytes: fetch sends each character of the string as one
  const bytes = (text) => Buffer.from(text, 'utf8').toString('latin1');
  const r = await hello(bytes(key), T0);
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, { hello: key });
  assert.equal((await hello(bytes(long), T0)).status, 200, 'a key of 1024 bytes');
  const tooLong = await hello(bytes(`${long}é`), T0);
  assert.equal(tooLong.status, 400);
  assert.deepEqual(tooLong.body, { error: 'X-Api-Key must be at most 1024 bytes' });
  const latin1 = await hello('cl\xe9', T0, '198.51.100.90');
  assert.equal(latin1.status, 400);
  assert.deepEqual(latin1.body, { error: 'X-Api-Key must be UTF-8' });
  assert.equal(await tokens('ip:198.51.100.90', T0), 5, 'the 400 spent nothing');
});

test('a forwarded address with a port is the address (1.5: not an address, so the proxy\'s quota)', async () => {
  const statuses = [];
  for (let i = 1; i <= 6; i++) statuses.push((await hello(undefined, T0, `203.0.113.70:${4710 + i}`)).status);
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
  assert.equal(await tokens('ip:203.0.113.70', T0), 0, 'the quota of 203.0.113.70');
  assert.equal((await hello(undefined, T0, '[2001:db8:70::1]:443')).status, 200);
  assert.equal(await tokens('ip:2001:db8:70:0::/64', T0), 4, 'the quota of 2001:db8:70::/64');
});

test('a request whose target is no URL is a 400, not a bug (1.5: a 500, and "TypeError: Invalid URL" with its stack in the log)', async () => {
  const instance = await startService({});
  try {
    const answer = await raw(instance.url, 'GET http://[ HTTP/1.1\r\nHost: service\r\nConnection: close\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /\r\n\{"error":"the request target is not a URL"\}\r\n/);
    assert.doesNotMatch(instance.log(), /Error|^\s+at /m);
    assert.equal((await hello(undefined, T0, '198.51.100.95', instance.url)).status, 200, 'and it goes on');
  } finally {
    await instance.stop();
  }
});

test('HOST is the address the service listens on, 127.0.0.1 unless set; TRUSTED_PROXIES may name networks', async () => {
  // 1.5 listened on 127.0.0.1, whatever the settings: a proxy on another
  // host could not reach it.  All of 127.0.0.0/8 reaches this host, but a
  // listener on 127.0.0.1 takes connections to 127.0.0.1 only.
  const other = (url) => url.replace('//127.0.0.1:', '//127.0.0.2:').replace('//0.0.0.0:', '//127.0.0.2:');
  const headers = { 'X-Test-Clock': clock(T0), 'X-Forwarded-For': '198.51.100.97' };
  const loopback = await startService({});
  try {
    assert.match(loopback.url, /^http:\/\/127\.0\.0\.1:[0-9]+$/);
    await assert.rejects(get(`${other(loopback.url)}/hello`, { headers }), { code: 'ECONNREFUSED' });
  } finally {
    await loopback.stop();
  }
  const everywhere = await startService({ HOST: '0.0.0.0', TRUSTED_PROXIES: '127.0.0.4/30' });
  try {
    assert.match(everywhere.url, /^http:\/\/0\.0\.0\.0:[0-9]+$/);
    // from 127.0.0.5, a proxy of 127.0.0.4/30: the client it forwards
    const proxied = await get(`${other(everywhere.url)}/hello`, { headers, localAddress: '127.0.0.5' });
    assert.equal(proxied.status, 200);
    assert.equal(await tokens('ip:198.51.100.97', T0), 4);
    // from 127.0.0.8, outside it: itself, whatever it forwards
    assert.equal((await get(`${other(everywhere.url)}/hello`, { headers, localAddress: '127.0.0.8' })).status, 200);
    assert.equal(await tokens('ip:127.0.0.8', T0), 4);
    assert.equal(await tokens('ip:198.51.100.97', T0), 4);
  } finally {
    await everywhere.stop();
  }
  const ipv6 = await startService({ HOST: '::1' });
  try {
    assert.match(ipv6.url, /^http:\/\/\[::1\]:[0-9]+$/);
    assert.equal((await hello(undefined, T0, undefined, ipv6.url)).status, 200);
  } finally {
    await ipv6.stop();
  }
});

test('POOL_SIZE=1 serves: every statement of a request runs on the one connection it holds', async () => {
  // A statement sent to the pool while the request holds its only
  // connection would wait for that connection, until CONNECT_TIMEOUT_MS,
  // and the request would be a 503: so it was with fixed-window-pg looking
  // up the extension's schema on the pool at a fresh instance's first call.
  const instance = await startService({ POOL_SIZE: '1', TRUSTED_PROXIES: '127.0.0.1' });
  try {
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) =>
      hello(undefined, T0, `192.0.2.${200 + i}`, instance.url)));
    assert.deepEqual(answers.map((r) => r.status), [200, 200, 200, 200, 200], instance.log());
  } finally {
    await instance.stop();
  }
});
