// The package's declarations, compiled (tsc --noEmit, test/tsconfig.json)
// against the libraries' own types: each store must be assignable to the
// type its framework takes.  Nothing here runs.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
import pg from 'pg';
import {
  FixedWindow, FixedWindowError, FixedWindowUnavailableError, type LimitResult, shardOf,
} from 'fixed-window-pg';

const pool = new pg.Pool();
const fw = new FixedWindow({ pool, failOpen: (err: FixedWindowUnavailableError) => err.code !== 'ECONNREFUSED' });
const sharded = new FixedWindow({ shards: [pool, new pg.Pool()], routing: 'modulo', prepare: false });

async function calls(): Promise<number> {
  const answer: LimitResult = await fw.limit('api', 'user:1', { rate: 100, period: 60_000 });
  const retry: number | null = answer.retryAfter;
  await fw.limit('daily', 'acct:7', { rate: 1000, period: '1 day', cost: 50, capacity: 1500, start: null });
  await fw.check('api', 'user:1', { cost: 0 });
  const tokens: number = await fw.refund('api', 'user:1', { rate: 100, period: 60_000 });
  const removed: number = await fw.reset('api', 'user:1');
  const { ok, headers, windows } = await sharded.limitWindows('api', 'user:1', { cost: 2 });
  const first: number = windows[0].resetAfter;
  const client = await pool.connect();
  await fw.limit('api', 'user:1', { rate: 1, period: 1000, connection: client });
  client.release();
  try {
    await fw.limit('api', 'user:1');
  } catch (err) {
    if (err instanceof FixedWindowError) console.log(err.code, err.cause);
  }
  const routed = await FixedWindow.fromRouter(pool, pg.Pool, { user: 'app' });
  return (retry ?? 0) + tokens + removed + first + shardOf('a', 'b', 3) + routed.shardOf('a', 'b')
    + (ok ? 1 : 0) + Object.keys(headers).length;
}
void calls;

// (the adapters: below)

// @fastify/rate-limit takes the store class
import Fastify from 'fastify';
import fastifyRateLimit from '@fastify/rate-limit';
import { fastifyStore } from 'fixed-window-pg';
const app = Fastify();
await app.register(fastifyRateLimit, { max: 100, timeWindow: '1 minute', store: fastifyStore(fw, { name: 'web' }) });

// rate-limiter-flexible: its union takes the limiter made a subclass of its abstract class
import { RateLimiterCompatibleAbstract, RateLimiterUnion, type RateLimiterRes } from 'rate-limiter-flexible';
import { RateLimiterFixedWindow } from 'fixed-window-pg';
const Compatible = RateLimiterFixedWindow.extending(RateLimiterCompatibleAbstract);
const perMinute = new Compatible({ client: fw, keyPrefix: 'login', points: 5, duration: 60 });
const union = new RateLimiterUnion(perMinute, new Compatible({ client: fw, keyPrefix: 'login-day', points: 50, duration: 86_400 }));
const consumed: RateLimiterRes = await perMinute.consume('ip:1');
void union; void consumed;

// express-rate-limit takes the store as its Store
import { rateLimit, type Store } from 'express-rate-limit';
import { FixedWindowStore } from 'fixed-window-pg';
const store: Store = new FixedWindowStore({ client: fw, name: 'web' });
rateLimit({ windowMs: 60_000, limit: 100, store });
const perUser = new FixedWindowStore({ client: fw });
rateLimit({ windowMs: 60_000, limit: () => 10, store: perUser, keyGenerator: perUser.keyGenerator((req) => String(req.ip)) });
