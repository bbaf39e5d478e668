// The rate-limiter-flexible-compatible limiter through the library's API:
// exact admissions under concurrency, the RateLimiterRes fields as the
// database counts (on the debug clock), windows rolling over, reward, get,
// delete, penalty, the refused operations, the library's own wrappers
// (RateLimiterUnion, RateLimiterQueue, an insuranceLimiter), a restart with
// requests in flight, and PgBouncer in transaction mode.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  RLWrapperBlackAndWhite, RateLimiterCompatibleAbstract, RateLimiterMemory, RateLimiterPostgres, RateLimiterQueue,
  RateLimiterUnion,
} from 'rate-limiter-flexible';
import * as pkg from '../lib/index.mjs';
import { T0, clockedPool, pool, restart, uniqueName } from './helpers.mjs';

const { FixedWindow, FixedWindowPermissionError, FixedWindowUnavailableError, RateLimiterFixedWindow } = pkg;

// On the wall clock, windows a week long: none ends during a test.
const WEEK_SECONDS = 7 * 86_400;

// Settles every promise and sorts the outcomes: admitted (a RateLimiterRes
// resolved), denied (one rejected), failed (an Error rejected).
async function outcomes(promises) {
  const settled = await Promise.allSettled(promises);
  const sorted = { admitted: [], denied: [], failed: [] };
  for (const each of settled) {
    if (each.status === 'fulfilled') sorted.admitted.push(each.value);
    else if (each.reason instanceof Error) sorted.failed.push(each.reason);
    else sorted.denied.push(each.reason);
  }
  return sorted;
}

function fieldsOf(res) {
  const { remainingPoints, msBeforeNext, consumedPoints, isFirstInDuration } = res;
  return { remainingPoints, msBeforeNext, consumedPoints, isFirstInDuration };
}

async function exactlyFiveOfAThousand(limiterPool) {
  const limiter = new RateLimiterFixedWindow({
    client: new FixedWindow({ pool: limiterPool }), keyPrefix: uniqueName('flx'), points: 5, duration: WEEK_SECONDS,
  });
  const { admitted, denied, failed } = await outcomes(Array.from({ length: 1000 }, () => limiter.consume('one-key')));
  assert.deepEqual(failed, []);
  assert.equal(admitted.length, 5);
  assert.equal(denied.length, 995);
  // Each admission left a different count: 4, 3, 2, 1, 0 remaining.
  assert.deepEqual(admitted.map((res) => res.remainingPoints).sort(), [0, 1, 2, 3, 4]);
  assert.equal(admitted.filter((res) => res.isFirstInDuration).length, 1);
  for (const res of denied) {
    assert.equal(res.remainingPoints, 0);
    assert.equal(res.consumedPoints, 5, 'a denied consume spends nothing: the window holds points');
    assert.ok(res.msBeforeNext > 0);
  }
  const now = await limiter.get('one-key');
  assert.equal(now.consumedPoints, 5);
}

test('1,000 concurrent consume on one key at points 5: exactly 5 resolve', async () => {
  await exactlyFiveOfAThousand(pool({ max: 8 }));
});

test('behind PgBouncer in transaction mode: exactly 5 of 1,000 too', async () => {
  await exactlyFiveOfAThousand(pool({ pooler: true, max: 8 }));
});

test('the RateLimiterRes fields agree with fw.check, msBeforeNext on the debug clock, rolling over', async () => {
  const clocked = clockedPool({ at: T0 + 15_000 });
  const fw = new FixedWindow({ pool: clocked });
  const name = uniqueName('flx');
  // start: undefined anchors the windows on the epoch's grid: T0 is a minute's start.
  const limiter = new RateLimiterFixedWindow({ client: fw, keyPrefix: name, points: 5, duration: 60, start: undefined });
  const window = { rate: 5, period: 60_000, start: undefined, cost: 0 };

  assert.deepEqual(fieldsOf(await limiter.consume('k')),
    { remainingPoints: 4, msBeforeNext: 45_000, consumedPoints: 1, isFirstInDuration: true });
  clocked.at(T0 + 20_000);
  const second = await limiter.consume('k', 2);
  assert.deepEqual(fieldsOf(second),
    { remainingPoints: 2, msBeforeNext: 40_000, consumedPoints: 3, isFirstInDuration: false });
  const check = await fw.check(name, 'k', window);
  assert.equal(second.remainingPoints, check.remaining);
  assert.equal(second.msBeforeNext, check.resetAfter);

  // Denied: nothing spent, the time to the window's end.
  const denied = await limiter.consume('k', 3).then(() => assert.fail('admitted'), (rejection) => rejection);
  assert.ok(!(denied instanceof Error));
  assert.deepEqual(fieldsOf(denied),
    { remainingPoints: 2, msBeforeNext: 40_000, consumedPoints: 3, isFirstInDuration: false });
  assert.equal((await fw.check(name, 'k', window)).remaining, 2);
  assert.deepEqual(fieldsOf(await limiter.get('k')),
    { remainingPoints: 2, msBeforeNext: 40_000, consumedPoints: 3, isFirstInDuration: false });

  // More than a window grants: denied, not an error, as the library does.
  const tooMuch = await limiter.consume('k', 6).then(() => assert.fail('admitted'), (rejection) => rejection);
  assert.ok(!(tooMuch instanceof Error));
  assert.equal(tooMuch.msBeforeNext, 40_000);

  // The next window: a full one, the first consume in it.
  clocked.at(T0 + 60_000);
  assert.equal(await limiter.get('k'), null);
  assert.deepEqual(fieldsOf(await limiter.consume('k', 3)),
    { remainingPoints: 2, msBeforeNext: 60_000, consumedPoints: 3, isFirstInDuration: true });
});

test('by default each key has its own phase (start => NULL), as fw_check sees it', async () => {
  const clocked = clockedPool({ at: T0 });
  const fw = new FixedWindow({ pool: clocked });
  const name = uniqueName('flx');
  const limiter = new RateLimiterFixedWindow({ client: fw, keyPrefix: name, points: 3, duration: 60 });
  const res = await limiter.consume(42);   // a number, as the library takes
  const check = await fw.check(name, '42', { rate: 3, period: 60_000, start: null, cost: 0 });
  assert.equal(res.msBeforeNext, check.resetAfter);
  assert.ok(res.msBeforeNext > 0 && res.msBeforeNext <= 60_000);
  clocked.at(T0 + res.msBeforeNext);
  assert.equal((await limiter.consume(42)).isFirstInDuration, true, 'the window rolled over at its end');
});

test('reward, get, delete and penalty', async () => {
  const clocked = clockedPool({ at: T0 });
  const limiter = new RateLimiterFixedWindow({
    client: new FixedWindow({ pool: clocked }), keyPrefix: uniqueName('flx'), points: 5, duration: 60, start: undefined,
  });
  assert.equal(await limiter.get('k'), null, 'a key that spent nothing');
  await limiter.consume('k', 4);
  assert.deepEqual(fieldsOf(await limiter.reward('k', 2)),
    { remainingPoints: 3, msBeforeNext: 60_000, consumedPoints: 2, isFirstInDuration: false });
  assert.equal((await limiter.reward('k', 50)).remainingPoints, 5, 'never above points');
  assert.equal(await limiter.get('k'), null);

  assert.deepEqual(fieldsOf(await limiter.penalty('k', 2)),
    { remainingPoints: 3, msBeforeNext: 60_000, consumedPoints: 2, isFirstInDuration: false });
  assert.equal((await limiter.penalty('k', 50)).remainingPoints, 0, 'a penalty spends the rest of the window');
  await assert.rejects(limiter.consume('k'), (rejection) => !(rejection instanceof Error) && rejection.remainingPoints === 0);

  // fw_reset: true when there was a counter (a superuser's pool here).
  assert.equal(await limiter.delete('k'), true);
  assert.equal(await limiter.delete('k'), false);
  assert.equal((await limiter.consume('k')).remainingPoints, 4);

  // The application's role lacks fw_reset; a member of fw_admin has it.
  const asApp = new RateLimiterFixedWindow({ client: pool(), keyPrefix: limiter.keyPrefix, points: 5, duration: 60 });
  await assert.rejects(asApp.delete('k'), FixedWindowPermissionError);
  const asAdmin = new RateLimiterFixedWindow({ client: pool({ user: 'alice' }), keyPrefix: limiter.keyPrefix, points: 5, duration: 60 });
  await asAdmin.consume('k');
  assert.equal(await asAdmin.delete('k'), true);
  assert.equal(await asAdmin.delete('k'), false);
});

test('penalties in parallel spend the window exactly', async () => {
  const limiter = new RateLimiterFixedWindow({ client: pool(), keyPrefix: uniqueName('flx'), points: 10, duration: WEEK_SECONDS });
  await Promise.all(Array.from({ length: 20 }, () => limiter.penalty('k', 3)));
  const now = await limiter.get('k');
  assert.equal(now.consumedPoints, 10);
  assert.equal(now.remainingPoints, 0);
});

test('what a fixed window cannot do is refused with an Error that says why', async () => {
  const client = pool();
  const options = { client, keyPrefix: uniqueName('flx'), points: 5, duration: 60 };
  assert.throws(() => new RateLimiterFixedWindow({ ...options, duration: 0 }), /duration 0/);
  assert.throws(() => new RateLimiterFixedWindow({ ...options, blockDuration: 10 }), /blockDuration.*RateLimiterUnion/s);
  assert.throws(() => new RateLimiterFixedWindow({ ...options, inMemoryBlockOnConsumed: 5 }), /inMemoryBlockOnConsumed/);
  assert.throws(() => new RateLimiterFixedWindow({ ...options, points: 0 }), RangeError);
  assert.throws(() => new RateLimiterFixedWindow({ ...options, keyPrefix: '' }), TypeError);
  const limiter = new RateLimiterFixedWindow(options);
  await assert.rejects(limiter.set('k', 3, 10), /set\(key, points, secDuration\).*penalty\(\) or reward\(\)/s);
  await assert.rejects(limiter.block('k', 10), /block\(key, secDuration\).*penalty\(key, points\)/s);
  await assert.rejects(limiter.consume('k', 1, { customDuration: 5 }), /customDuration/);
  assert.throws(() => { limiter.blockDuration = 5; }, /blockDuration/);
  limiter.blockDuration = 0;   // what the library's limiters set on an insuranceLimiter
});

test('the library\'s wrappers: RateLimiterUnion, RateLimiterQueue', async () => {
  const Compatible = RateLimiterFixedWindow.extending(RateLimiterCompatibleAbstract);
  assert.equal(Compatible, RateLimiterFixedWindow.extending(RateLimiterCompatibleAbstract));
  const fw = new FixedWindow({ pool: pool() });
  const perMinute = new Compatible({ client: fw, keyPrefix: uniqueName('flx'), points: 2, duration: WEEK_SECONDS });
  const burst = new RateLimiterMemory({ keyPrefix: 'burst', points: 10, duration: 60 });
  // The library takes only its own classes' instances.
  assert.throws(() => new RateLimiterUnion(new RateLimiterFixedWindow({ client: fw, points: 2 }), burst), /instance of/);
  const union = new RateLimiterUnion(perMinute, burst);
  const first = await union.consume('u');
  assert.equal(first[perMinute.keyPrefix].remainingPoints, 1);
  await union.consume('u');
  const rejected = await union.consume('u').then(() => assert.fail('admitted'), (rejection) => rejection);
  assert.deepEqual(Object.keys(rejected), [perMinute.keyPrefix]);
  assert.equal(rejected[perMinute.keyPrefix].remainingPoints, 0);

  const queued = new Compatible({ client: fw, keyPrefix: uniqueName('flx'), points: 3, duration: WEEK_SECONDS });
  const queue = new RateLimiterQueue(queued, { maxQueueSize: 2 });
  assert.equal(await queue.getTokensRemaining(), 3);
  assert.equal(await queue.removeTokens(2), 1);
  assert.equal(await queue.getTokensRemaining(), 1);
  await assert.rejects(queue.removeTokens(4), /exceeds maximum 3/);

  const listed = new RLWrapperBlackAndWhite({ limiter: queued, whiteList: ['trusted'] });
  assert.equal((await listed.consume('trusted')).remainingPoints, Number.MAX_SAFE_INTEGER);
  assert.equal((await listed.consume('limiter')).remainingPoints, 0, 'the key RateLimiterQueue spent');

  // As the insuranceLimiter of the library's own RateLimiterPostgres, whose
  // store is unreachable: the library sets blockDuration 0 on it and asks it.
  const insured = new RateLimiterPostgres({
    storeClient: pool({ port: 1, connectionTimeoutMillis: 1000 }), storeType: 'pool', tableCreated: true,
    points: 2, duration: WEEK_SECONDS, insuranceLimiter: perMinute,
  });
  const answered = await insured.consume('u').then(() => assert.fail('admitted'), (rejection) => rejection);
  assert.ok(!(answered instanceof Error), 'perMinute answered: u has spent its 2');
  assert.equal(answered.remainingPoints, 0);
});

test('an insuranceLimiter answers while the database is unreachable', async () => {
  const unreachable = pool({ port: 1, connectionTimeoutMillis: 1000 });
  const insurance = new RateLimiterMemory({ points: 1, duration: 60 });
  const limiter = new RateLimiterFixedWindow({
    client: unreachable, keyPrefix: uniqueName('flx'), points: 1, duration: 60, insuranceLimiter: insurance,
  });
  assert.equal((await limiter.consume('k')).remainingPoints, 0);
  await assert.rejects(limiter.consume('k'), (rejection) => !(rejection instanceof Error));
  const uninsured = new RateLimiterFixedWindow({ client: unreachable, keyPrefix: 'x', points: 1, duration: 60 });
  await assert.rejects(uninsured.consume('k'), FixedWindowUnavailableError);
  // The client's failOpen answers first: admitted, marked.
  const open = new RateLimiterFixedWindow({
    client: new FixedWindow({ pool: unreachable, failOpen: true }), keyPrefix: 'x', points: 3, duration: 60,
  });
  const res = await open.consume('k');
  assert.equal(res.failedOpen, true);
  assert.equal(res.remainingPoints, 3);
  assert.equal(await open.get('k'), null);
});

test('execEvenly delays an admitted consume as the library does', async () => {
  const clocked = clockedPool({ at: T0 });
  const limiter = new RateLimiterFixedWindow({
    client: new FixedWindow({ pool: clocked }), keyPrefix: uniqueName('flx'), points: 100, duration: 1, start: undefined, execEvenly: true,
  });
  assert.equal((await limiter.consume('k')).msBeforeNext, 1000, 'the first of a window is not delayed');
  const began = performance.now();
  const second = await limiter.consume('k');
  // ceil(1000 / (98 + 2)) = 10 ms, the minimum delay 1000 / 100: 10 ms waited.
  assert.ok(performance.now() - began >= 9);
  assert.equal(second.msBeforeNext, 990);
});

test('a database restart with consumes in flight: Errors, no crash, working afterwards', async (t) => {
  const limiter = new RateLimiterFixedWindow({ client: pool({ max: 8 }), keyPrefix: uniqueName('flx'), points: 1000, duration: WEEK_SECONDS });
  await limiter.consume('warm');
  // Settled as they come (an Error nobody awaits yet would be unhandled).
  const inFlight = outcomes(Array.from({ length: 400 }, (_, i) => limiter.consume(`k${i % 50}`)));
  await restart();
  const { admitted, denied, failed } = await inFlight;
  assert.equal(denied.length, 0);
  assert.equal(admitted.length + failed.length, 400);
  t.diagnostic(`during the restart: ${admitted.length} admitted, ${failed.length} failed`);
  for (const err of failed) assert.ok(err instanceof FixedWindowUnavailableError, `${err.name}: ${err.message}`);
  // The pool drops the connections the restart ended; a call may still meet one.
  let after;
  for (let attempt = 0; attempt < 10 && after === undefined; attempt += 1) {
    after = await limiter.consume('after').catch((err) => {
      assert.ok(err instanceof FixedWindowUnavailableError);
      return undefined;
    });
  }
  assert.equal(after.remainingPoints, 999);
});
