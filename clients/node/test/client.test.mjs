// The plain client: its answers against the extension's, times in
// milliseconds, named and inline calls, each kind of error as its class,
// failing open by the caller's choice, exact counts under concurrency,
// directly and behind PgBouncer in transaction mode, and a restart with
// calls in flight.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  FixedWindow, FixedWindowCapacityError, FixedWindowConfigurationError, FixedWindowError, FixedWindowInputError,
  FixedWindowPermissionError, FixedWindowStateError, FixedWindowUndefinedPolicyError, FixedWindowUnavailableError,
  fromDriver,
} from '../lib/index.mjs';
import { T0, clockedPool, pool, restart, sql, uniqueName } from './helpers.mjs';

test('an inline limit: admissions, then a denial with its retry time, in milliseconds', async () => {
  const clocked = clockedPool({ at: T0 + 15_000 });
  const fw = new FixedWindow({ pool: clocked });
  const name = uniqueName();
  const answers = [];
  for (let i = 0; i < 4; i += 1) answers.push(await fw.limit(name, 'k', { rate: 3, period: 60_000 }));
  assert.deepEqual(answers.map((a) => a.ok), [true, true, true, false]);
  assert.deepEqual(answers[0], { ok: true, retryAfter: null, remaining: 2, resetAfter: 45_000 });
  assert.deepEqual(answers[3], { ok: false, retryAfter: 45_000, remaining: 0, resetAfter: 45_000 });
  // the next window admits again
  clocked.at(T0 + 60_000);
  assert.equal((await fw.limit(name, 'k', { rate: 3, period: 60_000 })).remaining, 2);
});

test('a period as an interval, a cost, a capacity, a start of its own', async () => {
  const clocked = clockedPool({ at: T0 });
  const fw = new FixedWindow({ pool: clocked });
  const name = uniqueName();
  const spent = await fw.limit(name, 'k', { rate: 10, period: '1 minute', cost: 4 });
  assert.deepEqual(spent, { ok: true, retryAfter: null, remaining: 6, resetAfter: 60_000 });
  const month = await fw.check(name, 'm', { rate: 10, period: '1 month', start: new Date(Date.UTC(2026, 3, 15)) });
  assert.equal(month.resetAfter, Date.UTC(2026, 4, 15) - T0);
  const rolled = await fw.limit(name, 'c', { rate: 5, period: 60_000, capacity: 8, cost: 5 });
  assert.equal(rolled.remaining, 0);
  // each key its own phase: the grid is shifted by a hash of (name, key)
  const ownPhase = await fw.limit(name, 'p', { rate: 1, period: 60_000, start: null });
  assert.ok(ownPhase.resetAfter > 0 && ownPhase.resetAfter <= 60_000, String(ownPhase.resetAfter));
});

test('check spends nothing; refund gives back; reset needs fw_admin', async () => {
  const fw = new FixedWindow({ pool: pool() });
  const admin = new FixedWindow({ pool: pool({ user: 'alice' }) });
  const name = uniqueName();
  const limit = { rate: 2, period: 3_600_000 };
  // check answers as the call would: remaining is what is left after it
  assert.equal((await fw.check(name, 'k', limit)).remaining, 1);
  assert.equal((await fw.check(name, 'k', { ...limit, cost: 0 })).remaining, 2);
  assert.equal((await fw.limit(name, 'k', limit)).remaining, 1);
  assert.equal((await fw.check(name, 'k', { ...limit, cost: 0 })).remaining, 1);
  assert.equal(await fw.refund(name, 'k', limit), 2);
  await fw.limit(name, 'k', limit);
  await assert.rejects(fw.reset(name, 'k'), FixedWindowPermissionError);
  assert.equal(await admin.reset(name, 'k'), 1);
  assert.equal(await admin.reset(name, 'k'), 0);
});

test('a named policy', async () => {
  const name = uniqueName();
  await sql('SELECT fw.fw_define($1, 2, interval \'1 hour\')', [name]);
  const fw = new FixedWindow({ pool: pool() });
  assert.equal((await fw.limit(name, 'k')).remaining, 1);
  assert.equal((await fw.limit(name, 'k', { cost: 1 })).remaining, 0);
  assert.equal((await fw.limit(name, 'k')).ok, false);
  assert.equal(await fw.refund(name, 'k', { cost: 1 }), 1);
  await assert.rejects(fw.limit(uniqueName(), 'k'), (err) => err instanceof FixedWindowUndefinedPolicyError && err.code === '42704');
});

test('bad arguments are refused before they are sent, and the database\'s refusals are classes with their SQLSTATE', async () => {
  const fw = new FixedWindow({ pool: pool() });
  await assert.rejects(fw.limit('n', 42, { rate: 1, period: 1000 }), TypeError);
  await assert.rejects(fw.limit('n', 'k', { rate: 0, period: 1000 }), RangeError);
  await assert.rejects(fw.limit('n', 'k', { rate: 1.5, period: 1000 }), RangeError);
  await assert.rejects(fw.limit('n', 'k', { rate: 1, period: -5 }), RangeError);
  await assert.rejects(fw.limit('n', 'k', { rate: 1 }), TypeError);
  await assert.rejects(fw.limit('n', 'k', { period: 1000 }), TypeError);   // period without rate
  await assert.rejects(fw.limit('n', 'k', { rate: 1, period: 1000, start: new Date(NaN) }), RangeError);
  const refused = [
    [{ rate: 1, period: '-1 minute' }, '22023'],
    [{ rate: 2, period: 1000, capacity: 1 }, '22023'],
    [{ rate: 1, period: 'not an interval' }, '22007'],
    [{ rate: 1, period: '300000 years' }, '22008'],
  ];
  for (const [options, code] of refused) {
    await assert.rejects(fw.limit('n', 'k', options), (err) => {
      assert.equal(err.code, code, `${JSON.stringify(options)}: ${err.message}`);
      return err instanceof FixedWindowInputError;
    });
  }
  await assert.rejects(fw.limit('n', 'k'.repeat(2049), { rate: 1, period: 1000 }),
    (err) => err instanceof FixedWindowInputError && err.code === '54000');
  // the storage is the server's or the database's choice, not a session's
  const sessionStorage = new FixedWindow({ pool: pool({ user: 'postgres', options: '-c fixed_window.storage=table' }) });
  await assert.rejects(sessionStorage.limit('n', 'k', { rate: 1, period: 1000 }),
    (err) => err instanceof FixedWindowStateError && err.code === '55P02');
});

test('a database without the extension, or missing, is configuration; a server down is unavailable', async () => {
  await sql('DROP DATABASE IF EXISTS noext');
  await sql('CREATE DATABASE noext');
  const noExtension = new FixedWindow({ pool: pool({ database: 'noext' }) });
  await assert.rejects(noExtension.limit('n', 'k', { rate: 1, period: 1000 }),
    (err) => err instanceof FixedWindowConfigurationError && /not installed/.test(err.message));
  const noDatabase = new FixedWindow({ pool: pool({ database: 'nosuchdb' }) });
  await assert.rejects(noDatabase.limit('n', 'k', { rate: 1, period: 1000 }),
    (err) => err instanceof FixedWindowConfigurationError && err.code === '3D000');
  const down = pool({ port: 1, host: '127.0.0.1' });
  await assert.rejects(new FixedWindow({ pool: down }).limit('n', 'k', { rate: 1, period: 1000 }),
    (err) => err instanceof FixedWindowUnavailableError && err.code === 'ECONNREFUSED');
  // failing open is the caller's choice, and only for an outage
  const open = new FixedWindow({ pool: down, failOpen: true });
  assert.deepEqual(await open.limit('n', 'k', { rate: 1, period: 1000 }),
    { ok: true, retryAfter: null, remaining: null, resetAfter: null, failedOpen: true });
  const chosen = new FixedWindow({ pool: down, failOpen: (err) => err.code !== 'ECONNREFUSED' });
  await assert.rejects(chosen.limit('n', 'k', { rate: 1, period: 1000 }), FixedWindowUnavailableError);
  const openButWrong = new FixedWindow({ pool: pool(), failOpen: true });
  await assert.rejects(openButWrong.limit('n', 'k', { rate: 1, period: '-1 minute' }), FixedWindowInputError);
});

for (const pooler of [false, true]) {
  test(`exact under concurrency${pooler ? ', behind PgBouncer in transaction mode' : ''}: 1,000 calls on one key at a limit of 5 admit 5`, async () => {
    const fw = new FixedWindow({ pool: pool({ pooler, max: 16 }) });
    const name = uniqueName();
    const answers = await Promise.all(Array.from({ length: 1000 },
      () => fw.limit(name, 'hot', { rate: 5, period: 3_600_000 })));
    assert.equal(answers.filter((a) => a.ok).length, 5);
    assert.equal((await fw.check(name, 'hot', { rate: 5, period: 3_600_000 })).remaining, 0);
    // behind the pooler the named statements went missing, and the client went on unnamed
    if (pooler) assert.equal(fw.prepare, false);
  });
}

test('a restart with calls in flight: each fails as unavailable or is answered, nothing crashes, then calls succeed', async () => {
  const fw = new FixedWindow({ pool: pool({ max: 8 }) });
  const name = uniqueName();
  let stop = false;
  const outcomes = { ok: 0, unavailable: 0, other: [] };
  const caller = async () => {
    while (!stop) {
      try {
        await fw.limit(name, `k${Math.random()}`, { rate: 5, period: 60_000 });
        outcomes.ok += 1;
      } catch (err) {
        if (err instanceof FixedWindowUnavailableError) outcomes.unavailable += 1;
        else outcomes.other.push(err);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };
  const callers = Array.from({ length: 8 }, caller);
  await new Promise((resolve) => setTimeout(resolve, 200));
  await restart();
  await new Promise((resolve) => setTimeout(resolve, 300));
  stop = true;
  await Promise.all(callers);
  assert.deepEqual(outcomes.other, []);
  assert.ok(outcomes.unavailable > 0, 'the restart failed some calls');
  assert.equal((await fw.limit(name, 'after', { rate: 5, period: 60_000 })).ok, true);
});

test('a policy\'s windows, with the headers fw_headers makes, and a call on the caller\'s connection', async () => {
  const name = uniqueName();
  await sql('SELECT fw.fw_define($1, 2, interval \'1 minute\'), fw.fw_define($1, 100, interval \'1 day\', shadow => true)', [name]);
  const clocked = clockedPool({ at: T0 + 20_000 });
  const fw = new FixedWindow({ pool: clocked });
  const first = await fw.limitWindows(name, 'k');
  assert.equal(first.ok, true);
  assert.deepEqual(first.windows.map((w) => [w.period, w.rate, w.remaining, w.shadow, w.resetAfter]),
    [[60_000, 2, 1, false, 40_000], [86_400_000, 100, 99, true, 86_400_000 - 10 * 3_600_000 - 20_000]]);
  assert.equal(first.windows[0].windowStart, T0);
  await fw.limitWindows(name, 'k');
  const refused = await fw.limitWindows(name, 'k');
  assert.equal(refused.ok, false);
  assert.equal(refused.headers['Retry-After'], '40');
  const [expected] = await sql(`SELECT set_config('fixed_window.debug_now', $3, true),
    fw.fw_headers($1, ARRAY(SELECT w FROM fw.fw_check_windows($1, $2) AS w)) AS headers`,
  [name, 'k', new Date(T0 + 20_000).toISOString()]);
  assert.deepEqual((await fw.checkWindows(name, 'k')).headers, expected.headers);

  // in a transaction of the caller's: a rollback of the table backend gives the tokens back
  await sql("ALTER DATABASE postgres SET fixed_window.storage = 'table'");
  const own = pool({ user: 'postgres', max: 1 });
  const tx = await own.connect();
  try {
    await tx.query('BEGIN');
    assert.equal((await fw.limit(name, 'tx', { rate: 2, period: 60_000, connection: tx })).remaining, 1);
    await tx.query('ROLLBACK');
    assert.equal((await fw.check(name, 'tx', { rate: 2, period: 60_000, cost: 0, connection: tx })).remaining, 2);
  } finally {
    tx.release();
    await sql('ALTER DATABASE postgres RESET fixed_window.storage');
  }
});

test('every SQLSTATE docs/troubleshooting.md lists has its class', () => {
  const classes = {
    22004: FixedWindowInputError, 22023: FixedWindowInputError, 22008: FixedWindowInputError,
    54000: FixedWindowInputError, 42704: FixedWindowUndefinedPolicyError, 42883: FixedWindowConfigurationError,
    42501: FixedWindowPermissionError, 53400: FixedWindowCapacityError, '55P02': FixedWindowStateError,
    25006: FixedWindowStateError, 55000: FixedWindowStateError, 40001: FixedWindowError, RL429: FixedWindowError,
    '57P01': FixedWindowUnavailableError, 53300: FixedWindowUnavailableError, 57014: FixedWindowUnavailableError,
    '08006': FixedWindowUnavailableError, ECONNRESET: FixedWindowUnavailableError,
  };
  for (const [code, Class] of Object.entries(classes)) {
    const driverError = Object.assign(new Error(`the server said ${code}`), { code });
    const err = fromDriver(driverError);
    assert.equal(err.constructor, Class, code);
    assert.equal(err.code, code);
    assert.equal(err.cause, driverError);
    assert.equal(fromDriver(err), err);   // one of ours passes as it is
  }
  // a database closed to connections is an outage; PgBouncer's refusal of a setting is not
  assert.ok(fromDriver(Object.assign(new Error('database "app" is not currently accepting connections'),
    { code: '55000' })) instanceof FixedWindowUnavailableError);
  assert.ok(fromDriver(Object.assign(new Error('unsupported startup parameter: search_path'),
    { code: '08P01' })) instanceof FixedWindowConfigurationError);
  assert.ok(fromDriver(new Error('Connection terminated unexpectedly')) instanceof FixedWindowUnavailableError);
});

test('a start given as text is read as ISO 8601 with its offset, whatever the session\'s TimeZone', async () => {
  const fw = new FixedWindow({ pool: pool({ options: '-c TimeZone=Asia/Kolkata -c DateStyle=SQL,DMY' }) });
  const name = uniqueName();
  const period = { rate: 1, period: '1 hour', cost: 0 };
  const asDate = await fw.check(name, 'k', { ...period, start: new Date('2026-01-01T00:00:00Z') });
  for (const start of ['2026-01-01T00:00:00Z', '2026-01-01T05:30:00+05:30', '2026-01-01T00:00:00.000Z']) {
    const answer = await fw.check(name, 'k', { ...period, start });
    assert.ok(Math.abs(answer.resetAfter - asDate.resetAfter) < 1000, `${start}: ${answer.resetAfter} against ${asDate.resetAfter}`);
  }
  for (const start of ['2026-01-01 00:00:00', '01/02/2026', 'yesterday', '2026-13-01T00:00:00Z', '']) {
    await assert.rejects(fw.check(name, 'k', { ...period, start }), RangeError, start);
  }
});

test('a pool without an error listener: a connection ended while idle does not end the process', async () => {
  const { spawn } = await import('node:child_process');
  const script = `
    import pg from 'pg';
    import { FixedWindow } from 'fixed-window-pg';
    const pool = new pg.Pool({ max: 1 });
    const fw = new FixedWindow({ pool });
    await fw.limit('idle', 'k', { rate: 5, period: 60000 });
    const { rows } = await pool.query('SELECT pg_backend_pid() AS pid');
    console.log(rows[0].pid);
    process.stdin.once('data', async () => {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const answer = await fw.limit('idle', 'k', { rate: 5, period: 60000 });
      console.log(answer.ok ? 'ok' : 'refused');
      await pool.end();
    });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: new URL('..', import.meta.url).pathname,
    env: { ...process.env, PGUSER: 'app' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => { output += d; });
  child.stderr.on('data', (d) => { output += d; });
  let code;
  const exited = new Promise((resolve) => child.on('exit', (c) => { code = c; resolve(c); }));
  for (let i = 0; i < 500 && code === undefined && !/^\d+$/m.test(output); i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.match(output, /^\d+$/m, output);
  await sql('SELECT pg_terminate_backend($1)', [Number(/^(\d+)$/m.exec(output)[1])]);
  child.stdin.end('go\n');
  assert.equal(await exited, 0, output);
  assert.match(output, /^ok$/m);
});

test('fromRouter leaves a password the router masks to the pool\'s options, PGPASSWORD or ~/.pgpass', async () => {
  const made = [];
  class Pool { constructor(config) { made.push(config); } query() {} }
  const router = {
    async query(text) {
      if (/fw_shards/.test(text)) {
        return { rows: [{ connstr: 'host=s0 dbname=fw user=app password=********', method: 'modulo' }] };
      }
      return { rows: [{ schema: 'fw' }] };
    },
  };
  const fw = await FixedWindow.fromRouter(router, Pool, { max: 2 });
  assert.deepEqual(made, [{ host: 's0', database: 'fw', user: 'app', max: 2 }]);
  assert.equal(fw.routing, 'modulo');
});
