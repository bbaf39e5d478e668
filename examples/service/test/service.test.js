// Drives the example service over HTTP with Node's fetch, as a client would.
// The harness (examples/service/test.sh) starts PostgreSQL with the schema
// and the service with FW_TEST_CLOCK=1, and passes its address in
// SERVICE_URL.  Every request carries X-Test-Clock, so the windows are those
// of a fixed time and passing one takes no waiting.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import { test } from 'node:test';
import assert from 'node:assert/strict';

const service = process.env.SERVICE_URL;
const T0 = Date.parse('2026-05-01T10:00:00Z');

const clock = (ms) => new Date(ms).toISOString();

async function hello(key, at) {
  const res = await fetch(`${service}/hello`, { headers: { 'X-Api-Key': key, 'X-Test-Clock': clock(at) } });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

async function signup(ip, email, at) {
  const res = await fetch(`${service}/signup`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': ip, 'X-Test-Clock': clock(at) },
    body: JSON.stringify({ email }),
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
  assert.equal(denied.body.error, 'rate limit policy "signup" exceeded');
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
