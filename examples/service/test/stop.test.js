// SIGTERM with requests in flight: they are answered, each answer closes
// its connection, no request is served after them, and the process exits 0
// as soon as the last is answered.  1.5 closed the idle connections once,
// at the signal: a connection that finished its response afterwards stayed
// open, and new requests on it were served (without "Connection: close")
// until the deadline, when the process exited 1, cutting whatever was in
// flight then.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import http from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { T0, addKeys, clock, get, startService, sql, until } from './helpers.js';

const IN_FLIGHT = 10;

// Whether a new connection to url is taken.
function connects(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    socket.on('connect', () => { socket.destroy(); resolve(true); });
    socket.on('error', () => resolve(false));
  });
}

test(`SIGTERM with ${IN_FLIGHT} requests in flight on kept-alive connections: each answered, closing its connection, then exit 0`, async () => {
  await addKeys(Array.from({ length: 3 * IN_FLIGHT }, (_, i) => `stopping-${i}`));
  // a deadline far longer than the test: the process must not wait for it
  const instance = await startService({ POOL_SIZE: String(IN_FLIGHT), STATEMENT_TIMEOUT_MS: '10000' });
  const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  // each request with a key of its own, so that no rate refuses one
  let n = 0;
  const request = () => get(`${instance.url}/hello`,
    { agent, headers: { 'X-Api-Key': `stopping-${n++}`, 'X-Test-Clock': clock(T0) } });
  const locker = new pg.Client();
  await locker.connect();
  try {
    // the connections have served a request each, and are kept alive
    const first = await Promise.all(Array.from({ length: IN_FLIGHT }, request));
    assert.deepEqual(first.map((r) => r.status), Array(IN_FLIGHT).fill(200));
    // the requests wait for the table of API keys, locked
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
    const held = Array.from({ length: IN_FLIGHT }, () => request().catch((err) => err));
    await until(`${IN_FLIGHT} requests waiting for the lock`, 10, async () =>
      ((await sql(`SELECT count(*) AS n FROM pg_locks WHERE relation = 'api_keys'::regclass AND NOT granted`))[0].n
        === String(IN_FLIGHT) ? true : undefined));
    instance.kill('SIGTERM');
    await until('the service to stop listening', 10, () =>
      connects(instance.url).then((connected) => (connected ? undefined : true)));
    await locker.query('ROLLBACK');
    const answers = await Promise.all(held);
    const answered = Date.now();
    assert.deepEqual(answers.map((r) => r.status), Array(IN_FLIGHT).fill(200));
    assert.deepEqual(answers.map((r) => r.headers.connection), Array(IN_FLIGHT).fill('close'));
    // no connection is left to send a request on, and none is taken
    await assert.rejects(request(), { code: 'ECONNREFUSED' });
    const { code, signal } = await instance.exited;
    const after = Date.now() - answered;
    console.log(`exit ${code} ${signal} ${after} ms after the last answer`);
    assert.equal(code, 0, instance.log());
    assert.ok(after < 3000, `exited ${after} ms after the last answer`);
  } finally {
    agent.destroy();
    await locker.end();
    instance.kill('SIGKILL');
    await instance.exited;
  }
});
