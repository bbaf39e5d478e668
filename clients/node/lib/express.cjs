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
// hit that spent nothing (denied by the database, refused at a limit of 0,
// admitted by failOpen while the database was away) must give nothing
// back: with skipFailedRequests the middleware decrements after its own
// 429 too, and a refund there would admit a request more for each one
// refused (a naive store admitted 12 of 20 at a limit of 5).  decrement has
// only the key, so the store keeps, per key and window, how many hits of
// this process spent nothing and may still be decremented, and a decrement
// pays those off before it refunds anything.  The interleavings, for
// requests of one key, which may finish in any order:
//
// - A denied hit is noted when its answer arrives, before the middleware
//   sees it, so its own decrement (after the 429 is sent) always finds it.
// - A failed admitted request's decrement that comes after a denial was
//   noted pays off the denial instead of refunding; the denial's decrement,
//   later, finds nothing noted and refunds in its place: one refund for the
//   two, as it should be, only later.
// - An admitted request's refund racing a denial in the database (sent
//   before the denial's answer arrives) is not held back: it gives its own
//   token back, and the denial's decrement pays off the note.
// - The middleware does not decrement once the hit's window has ended (its
//   resetTime, which is ours), so a note counts for GRACE_MS at most after
//   its window, then is dropped: until then it may hold back one refund
//   that was owed (a request too few, never one too many).
// - resetKey leaves the notes: decrements of hits denied before it still
//   come, and must not give back tokens spent after it.
//
// The limit comes from the limiter's options: a number, or a function of
// the request.  The store sees only the key, so a function needs the
// store's keyGenerator, which computes the limit of each request with its
// key and hands it to the increment that follows (per key, in order).
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

const DEFAULT_NAME = 'express-rate-limit';
// A note of a hit that spent nothing is kept this long after its window
// ended: express-rate-limit decides not to decrement when the window has
// ended, and calls decrement in the same turn, so a millisecond or two would
// do; a second leaves room for a pause of the event loop.
const GRACE_MS = 1000;
// Every this many notes, the notes of every key whose windows have ended are
// dropped, so that keys denied once and never seen again do not pile up.
const SWEEP_EVERY = 1000;
const MAX_RATE = 2147483647;

// A limit fixed_window can count with (0: nothing is allowed).
function isLimit(limit) {
  return Number.isInteger(limit) && limit >= 0 && limit <= MAX_RATE;
}

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
    this.unspent = new Map();       // key -> Map(window end in ms -> hits that spent nothing)
    this.notes = 0;
    this.pending = new Map();       // key -> limits keyGenerator computed, in order
    this.wrapped = new WeakSet();   // the keyGenerators this store made
    this.initError = new Error('the FixedWindowStore was not initialised: pass it as the store of rateLimit({ store })');
  }

  // The limiter's options, once, when the middleware is made.
  // express-rate-limit catches an error thrown here and only logs it, so
  // the error is also kept, and every increment rejects with it: a limiter
  // set up wrongly answers 500 rather than limiting by a guess.
  init(options) {
    this.initError = null;
    try {
      this.configure(options);
    } catch (err) {
      this.initError = err;
      throw err;
    }
  }

  configure(options) {
    const { windowMs, limit, keyGenerator, statusCode = 429 } = options;
    if (!Number.isInteger(windowMs) || windowMs < 1) {
      throw new RangeError(`windowMs must be a whole number of milliseconds >= 1, not ${windowMs}`);
    }
    if (typeof limit === 'function') {
      if (!this.wrapped.has(keyGenerator)) {
        throw new TypeError('with limit as a function, pass the store\'s keyGenerator as the limiter\'s: '
          + 'rateLimit({ limit, store, keyGenerator: store.keyGenerator(yourKeyGenerator) }); '
          + 'the store sees only the key, and must know the limit before it counts');
      }
    } else if (!isLimit(limit)) {
      throw new RangeError(`limit must be a whole number from 0 to ${MAX_RATE}, or a function, not ${limit}`);
    }
    this.windowMs = windowMs;
    this.limit = limit;
    const skipFailed = Boolean(options.skipFailedRequests);
    const skipSuccessful = Boolean(options.skipSuccessfulRequests);
    // Whether the middleware decrements a refused request: by its default
    // requestWasSuccessful (status < 400), a refusal with the limiter's
    // statusCode is a failure or a success.  (A handler or a
    // requestWasSuccessful of your own that judges otherwise is not seen.)
    this.decrementsRefused = statusCode >= 400 ? skipFailed : skipSuccessful;
    // A request admitted by failOpen may be decremented either way.
    this.decrementsAdmitted = skipFailed || skipSuccessful;
  }

  // A keyGenerator that also computes the request's limit, for limit as a
  // function: inner is the key generator of your own (required: the
  // library's default one is not reachable from here).
  keyGenerator(inner) {
    if (typeof inner !== 'function') throw new TypeError('keyGenerator(inner) needs your key generator, a function of (request, response)');
    const generate = async (request, response) => {
      const key = await inner(request, response);
      if (typeof this.limit !== 'function') return key;    // init refused the limiter, or limit is a number
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
    if (!isLimit(limit)) {
      throw new RangeError(`the limit function returned ${limit}: a whole number from 0 to ${MAX_RATE} was expected`);
    }
    return limit;
  }

  async increment(key) {
    if (this.initError !== null) throw this.initError;
    const limit = this.limitOf(key);
    if (limit === 0) {            // nothing is allowed: the middleware refuses, the database is not asked
      const resetTime = new Date(Date.now() + this.windowMs);
      if (this.decrementsRefused) this.noteUnspent(key, resetTime);
      return { totalHits: 1, resetTime };
    }
    const answer = await this.client.limit(this.name, key, { rate: limit, period: this.windowMs });
    if (answer.failedOpen) {
      const resetTime = new Date(Date.now() + this.windowMs);
      if (this.decrementsAdmitted) this.noteUnspent(key, resetTime);
      return { totalHits: 1, resetTime };
    }
    const resetTime = new Date(Date.now() + answer.resetAfter);
    if (answer.ok) return { totalHits: Math.min(limit, Math.max(1, limit - answer.remaining)), resetTime };
    if (this.decrementsRefused) this.noteUnspent(key, resetTime);
    return { totalHits: limit + 1, resetTime };
  }

  noteUnspent(key, resetTime) {
    const until = resetTime.getTime();
    let windows = this.unspent.get(key);
    if (windows === undefined) {
      windows = new Map();
      this.unspent.set(key, windows);
    }
    windows.set(until, (windows.get(until) ?? 0) + 1);
    this.notes += 1;
    if (this.notes % SWEEP_EVERY === 0) {
      const now = Date.now();
      for (const noted of this.unspent.keys()) this.dropEnded(noted, now);
    }
  }

  // Drops the notes of windows that ended more than GRACE_MS ago: the
  // middleware will not decrement their hits any more.
  dropEnded(key, now) {
    const windows = this.unspent.get(key);
    if (windows === undefined) return undefined;
    for (const until of windows.keys()) if (until + GRACE_MS <= now) windows.delete(until);
    if (windows.size === 0) {
      this.unspent.delete(key);
      return undefined;
    }
    return windows;
  }

  // Pays off one hit that spent nothing, the oldest; false when none is noted.
  payUnspent(key) {
    const windows = this.dropEnded(key, Date.now());
    if (windows === undefined) return false;
    const oldest = Math.min(...windows.keys());
    const count = windows.get(oldest) - 1;
    if (count > 0) windows.set(oldest, count);
    else {
      windows.delete(oldest);
      if (windows.size === 0) this.unspent.delete(key);
    }
    return true;
  }

  // A request that should not count: its token back, unless a hit of the
  // key that spent nothing is still noted (see the top of this file).
  async decrement(key) {
    if (this.payUnspent(key)) return;
    await this.client.refund(this.name, key, { rate: this.refundRate(), period: this.windowMs, cost: 1 });
  }

  // What the key has spent in its window, spending nothing.
  async get(key) {
    if (this.initError !== null) throw this.initError;
    if (typeof this.limit === 'function') return undefined;      // the limit is the request's, unknown here
    const limit = Math.max(1, this.limit);
    const answer = await this.client.check(this.name, key, { rate: limit, period: this.windowMs, cost: 0 });
    if (answer.failedOpen) return undefined;
    return { totalHits: Math.max(0, limit - answer.remaining), resetTime: new Date(Date.now() + answer.resetAfter) };
  }

  // The key starts afresh: its window given back whole (fw_refund, which
  // the README's application role may call, where fw_reset is an admin's).
  // The notes of hits that spent nothing stay (see the top of this file).
  async resetKey(key) {
    if (this.initError !== null) throw this.initError;
    const rate = this.refundRate();
    await this.client.refund(this.name, key, { rate, period: this.windowMs, cost: rate });
  }

  // The rate a refund names: the limit; for a limit that is a function of
  // the request, unknown here, the largest there is.  A refund gives back at
  // most the counter's capacity, and never creates a counter, so a key's
  // tokens never pass the limit it was counted with.
  refundRate() {
    return typeof this.limit === 'function' ? MAX_RATE : Math.max(1, this.limit);
  }

  async resetAll() {
    throw new Error(`resetAll would remove every key's counters of "${this.name}": `
      + `an admin does that in SQL, with SELECT fw_reset('${this.name}')`);
  }
}

module.exports = { FixedWindowStore };
