'use strict';
// A store for express-rate-limit (v7, v8) on fixed_window.
//
//   app.use(rateLimit({ windowMs: 60_000, limit: 100,
//     store: new FixedWindowStore({ client: fw }) }));
//
// express-rate-limit asks the store to count a hit (increment) and refuses
// the request when the count passes the limit.  Here the decision is the
// database's: increment is one fw_limit with the limiter's limit and window,
// on windows of the default grid (aligned to the epoch), and a denied hit
// spends nothing.  So the count reported agrees with the decision: an
// admitted hit reports the tokens the window has spent (limit - remaining,
// so that the RateLimit headers say what the database holds), a denied one
// limit + 1, which is what makes the middleware refuse it.
//
// decrement gives a token back (fw_refund) for a request the limiter's
// skipFailedRequests or skipSuccessfulRequests says should not count.  A
// denied hit spent nothing, so its decrement must give nothing back: with
// skipFailedRequests the middleware decrements after its own 429 too, and
// a refund there would admit a request more for each one refused (12 of 20
// at a limit of 5).  decrement has only the key, so the store keeps, per
// key, how many denied hits of this process still owe a decrement, and a
// decrement pays those off first.  Requests of one key may finish in any
// order: a failed admitted request's decrement may come before a denied
// one's; it then pays off the denial's debt, and the denial's decrement,
// later, refunds in its place: one refund for the two, as it should be.
//
// The limit comes from the limiter's options: a number, or a function of
// the request.  The store sees only the key, so a function needs the
// store's keyGenerator, which computes the limit of each request with its
// key and hands it to the increment that follows (per key, in order).
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

const DEFAULT_NAME = 'express-rate-limit';
// Entries of denied hits whose window has ended are dropped every this many
// denials, so that keys denied once and never seen again do not pile up.
const SWEEP_EVERY = 1000;
const MAX_RATE = 2147483647;

class FixedWindowStore {
  constructor({ client, name = DEFAULT_NAME } = {}) {
    if (client === null || typeof client !== 'object' || typeof client.limit !== 'function') {
      throw new TypeError('FixedWindowStore needs a FixedWindow client: new FixedWindowStore({ client: new FixedWindow({ pool }) })');
    }
    if (typeof name !== 'string' || name === '') throw new TypeError('name must be a non-empty string');
    this.client = client;
    this.name = name;
    // express-rate-limit tells stores apart by prefix in its checks; the
    // counters are shared by every process, not local to this one.
    this.prefix = `${name}:`;
    this.localKeys = false;
    this.owed = new Map();          // key -> { count, until }: denied hits owed a decrement
    this.denials = 0;
    this.pending = new Map();       // key -> limits keyGenerator computed, in order
    this.wrapped = new WeakSet();   // the keyGenerators this store made
  }

  // The limiter's options, once, when the middleware is made.
  init(options) {
    const { windowMs, limit, skipFailedRequests, keyGenerator } = options;
    if (!Number.isInteger(windowMs) || windowMs < 1) {
      throw new RangeError(`windowMs must be a whole number of milliseconds >= 1, not ${windowMs}`);
    }
    if (typeof limit === 'function') {
      if (!this.wrapped.has(keyGenerator)) {
        throw new TypeError('with limit as a function, pass the store\'s keyGenerator as the limiter\'s: '
          + 'rateLimit({ limit, store, keyGenerator: store.keyGenerator(yourKeyGenerator) }); '
          + 'the store sees only the key, and must know the limit before it counts');
      }
    } else if (!Number.isInteger(limit) || limit < 0) {
      throw new RangeError(`limit must be a whole number >= 0 or a function, not ${limit}`);
    }
    this.windowMs = windowMs;
    this.limit = limit;
    this.skipFailedRequests = Boolean(skipFailedRequests);
  }

  // A keyGenerator that also computes the request's limit, for limit as a
  // function: inner is the key generator of your own (required: the
  // library's default one is not reachable from here).
  keyGenerator(inner) {
    if (typeof inner !== 'function') throw new TypeError('keyGenerator(inner) needs your key generator, a function of (request, response)');
    const generate = async (request, response) => {
      const key = await inner(request, response);
      const limit = await this.limit(request, response);
      const queue = this.pending.get(key);
      if (queue === undefined) this.pending.set(key, [limit]);
      else queue.push(limit);
      return key;
    };
    this.wrapped.add(generate);
    return generate;
  }

  limitOf(key) {
    if (typeof this.limit !== 'function') return this.limit;
    const queue = this.pending.get(key);
    if (queue === undefined) throw new Error(`no limit was computed for the key "${key}": is the store's keyGenerator the limiter's?`);
    const limit = queue.shift();
    if (queue.length === 0) this.pending.delete(key);
    return limit;
  }

  async increment(key) {
    const limit = this.limitOf(key);
    if (limit === 0) return { totalHits: 1, resetTime: undefined };     // nothing allowed: the middleware refuses
    const answer = await this.client.limit(this.name, key, { rate: limit, period: this.windowMs });
    if (answer.failedOpen) return { totalHits: 1, resetTime: undefined };
    const resetTime = new Date(Date.now() + answer.resetAfter);
    if (answer.ok) return { totalHits: Math.min(limit, Math.max(1, limit - answer.remaining)), resetTime };
    if (this.skipFailedRequests) this.oweDecrement(key, resetTime);
    return { totalHits: limit + 1, resetTime };
  }

  oweDecrement(key, until) {
    const entry = this.owed.get(key);
    if (entry === undefined) this.owed.set(key, { count: 1, until });
    else {
      entry.count += 1;
      entry.until = until;
    }
    this.denials += 1;
    if (this.denials % SWEEP_EVERY === 0) {
      const now = Date.now();
      for (const [owedKey, owedEntry] of this.owed) if (owedEntry.until <= now) this.owed.delete(owedKey);
    }
  }

  // A request that should not count: its token back, unless the decrement
  // is a denied hit's, which spent nothing.  (express-rate-limit does not
  // decrement once the window of the hit has ended.)
  async decrement(key) {
    const entry = this.owed.get(key);
    if (entry !== undefined) {
      entry.count -= 1;
      if (entry.count === 0) this.owed.delete(key);
      return;
    }
    await this.client.refund(this.name, key, { rate: this.refundRate(), period: this.windowMs, cost: 1 });
  }

  // What the key has spent in its window, spending nothing.
  async get(key) {
    if (typeof this.limit === 'function') return undefined;      // the limit is the request's, unknown here
    const limit = Math.max(1, this.limit);
    const answer = await this.client.check(this.name, key, { rate: limit, period: this.windowMs, cost: 0 });
    if (answer.failedOpen) return undefined;
    return { totalHits: Math.max(0, limit - answer.remaining), resetTime: new Date(Date.now() + answer.resetAfter) };
  }

  // The key starts afresh: its window given back whole (fw_refund, which
  // the README's application role may call, where fw_reset is an admin's).
  async resetKey(key) {
    this.owed.delete(key);
    const rate = this.refundRate();
    await this.client.refund(this.name, key, { rate, period: this.windowMs, cost: rate });
  }

  // The rate a refund names: the limit; for a limit that is a function of
  // the request, unknown here, the largest there is.  A refund gives back at
  // most its capacity, and a call spends from at most its own: tokens given
  // back above a key's limit are never spent beyond it.
  refundRate() {
    return typeof this.limit === 'function' ? MAX_RATE : Math.max(1, this.limit);
  }

  async resetAll() {
    throw new Error(`resetAll would remove every key's counters of "${this.name}": `
      + `an admin does that in SQL, with SELECT fw_reset('${this.name}')`);
  }
}

module.exports = { FixedWindowStore };
