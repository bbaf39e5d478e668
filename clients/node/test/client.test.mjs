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
  FixedWindow, FixedWindowConfigurationError, FixedWindowInputError, FixedWindowPermissionError,
  FixedWindowStateError, FixedWindowUndefinedPolicyError, FixedWindowUnavailableError,
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
