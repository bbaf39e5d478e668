'use strict';
// A limiter with rate-limiter-flexible's interface (its documented
// RateLimiterCompatibleAbstract) on fixed_window.
//
//   const limiter = new RateLimiterFixedWindow({ client: fw, keyPrefix: 'login', points: 5, duration: 60 });
//   try { await limiter.consume(ip); } catch (rejection) {
//     if (rejection instanceof Error) throw rejection;   // the store failed
//     // else rejection.msBeforeNext: limited
//   }
//
// The counter of a key is fixed_window's (name = keyPrefix, key), with rate
// = points and period = duration seconds.  What differs from the library's
// own stores, and why:
//
// - A denied consume spends nothing: the window never holds more than
//   points, so consumedPoints never exceeds points.
// - Each key's windows have their own phase (start => NULL, a hash of the
//   key), the nearest fixed_window comes to the library's windows that start
//   at a key's first consume; a window does not start at the first consume.
// - blockDuration, set(), block() and customDuration would hold a key for a
//   time of the caller's choosing, which a fixed window cannot: refused with
//   an Error that says what to use instead.  penalty() spends what is left
//   of the current window, at most: in a fixed window nothing beyond it has
//   any effect.
// - execEvenly is the library's, exactly: a delay computed from the result.
//
// The library is not loaded here.  Its RateLimiterUnion and insuranceLimiter
// accept only instances of its own classes (instanceof); for those, take
// RateLimiterFixedWindow.extending(RateLimiterCompatibleAbstract), the same
// limiter as a subclass of the library's abstract class.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

const { FixedWindow } = require('./client.cjs');
const { FixedWindowUnavailableError } = require('./errors.cjs');

// The fields of the library's RateLimiterRes, the value every operation
// resolves with and a denial rejects with.  A denial is told from a store
// failure by not being an Error, as the library documents.
class RateLimiterRes {
  constructor(remainingPoints = 0, msBeforeNext = 0, consumedPoints = 0, isFirstInDuration = false) {
    this.remainingPoints = remainingPoints;
    this.msBeforeNext = msBeforeNext;
    this.consumedPoints = consumedPoints;
    this.isFirstInDuration = Boolean(isFirstInDuration);
  }

  toJSON() {
    const { remainingPoints, msBeforeNext, consumedPoints, isFirstInDuration } = this;
    return { remainingPoints, msBeforeNext, consumedPoints, isFirstInDuration };
  }

  toString() {
    return JSON.stringify(this.toJSON());
  }
}

// Why each operation or option a fixed window cannot do exactly is refused,
// and what to use instead.
const REFUSALS = {
  blockDuration: 'blockDuration > 0 holds a key for a time of its own after it exceeds its points, '
    + 'and fixed_window counts in fixed windows only: a denied key is denied until its window ends. '
    + 'For a longer ban, add a second limiter with a longer duration (RateLimiterUnion)',
  inMemoryBlockOnConsumed: 'inMemoryBlockOnConsumed blocks when more than points are consumed, '
    + 'and fixed_window never counts beyond points (a denied consume spends nothing)',
  customDuration: 'customDuration gives one key a window of another length, '
    + 'and the windows of a fixed_window name all have the limiter\'s duration: use a second limiter',
  set: 'set(key, points, secDuration) holds a count for a time of the caller\'s choosing, '
    + 'and a fixed_window counter lives exactly one window: use penalty() or reward() to change '
    + 'what the current window holds, delete() to clear it',
  block: 'block(key, secDuration) denies a key for a time of the caller\'s choosing, '
    + 'and a fixed_window counter lives exactly one window: use penalty(key, points) to spend '
    + 'the rest of the current window, or a limiter with a longer duration to ban',
};

function refusal(what) {
  return new Error(`RateLimiterFixedWindow: ${what} is not supported: ${REFUSALS[what]}`);
}

// The library takes keys as strings or numbers.
function keyText(key) {
  if (typeof key === 'number') return String(key);
  if (typeof key !== 'string') throw new TypeError(`key must be a string or a number, not ${key === null ? 'null' : typeof key}`);
  return key;
}

// A FixedWindow given, or one on a pool given.
function clientOf(client) {
  if (client instanceof FixedWindow) return client;
  if (client !== null && typeof client?.limit === 'function' && typeof client?.check === 'function') return client;
  if (client !== null && typeof client?.query === 'function') return new FixedWindow({ pool: client });
  throw new TypeError('client must be a FixedWindow, or a pg.Pool to make one on');
}

// The limiter's class, as a subclass of Base: Object for the package's own
// export, or the library's RateLimiterCompatibleAbstract (extending()).
function limiterClass(Base) {
  return class RateLimiterFixedWindow extends Base {
    constructor(options = {}) {
      super();
      const {
        client, storeClient, keyPrefix = 'rlflx', points = 4, duration = 1,
        blockDuration = 0, execEvenly = false, execEvenlyMinDelayMs, inMemoryBlockOnConsumed = 0,
        insuranceLimiter,
      } = options;
      this.client = clientOf(client ?? storeClient);
      if (typeof keyPrefix !== 'string' || keyPrefix === '') {
        throw new TypeError('keyPrefix must be a non-empty string: it is the fixed_window name the limiter counts under');
      }
      if (!Number.isInteger(points) || points < 1) {
        throw new RangeError(`points must be a whole number of at least 1 (a fixed_window rate), not ${String(points)}`);
      }
      if (duration === 0) {
        throw new RangeError('duration 0 (points that never expire) is no window: fixed_window counts in windows of a length > 0');
      }
      if (typeof duration !== 'number' || !Number.isInteger(duration * 1000) || duration < 0) {
        throw new RangeError(`duration must be a number of seconds > 0, in whole milliseconds, not ${String(duration)}`);
      }
      if (inMemoryBlockOnConsumed) throw refusal('inMemoryBlockOnConsumed');
      if (insuranceLimiter !== undefined && typeof insuranceLimiter?.consume !== 'function') {
        throw new TypeError('insuranceLimiter must be a limiter of rate-limiter-flexible\'s interface');
      }
      this._keyPrefix = keyPrefix;
      this.points = points;
      this.duration = duration;
      // Each key's own phase unless the caller anchors the grid: undefined
      // is the epoch's, a Date its own.
      this.start = 'start' in options ? options.start : null;
      this.blockDuration = blockDuration;
      this.execEvenly = execEvenly;
      this._execEvenlyMinDelayMs = execEvenlyMinDelayMs;
      this.insuranceLimiter = insuranceLimiter;
    }

    // The extension of this class for a base class of the library's.
    static extending(LibraryBase) {
      return extending(LibraryBase);
    }

    get keyPrefix() {
      return this._keyPrefix;
    }

    get msDuration() {
      return this.duration * 1000;
    }

    // The library's limiters set these on their insuranceLimiter: 0 and
    // false are the only values a fixed window keeps exactly.
    get blockDuration() {
      return 0;
    }

    set blockDuration(value) {
      if (value !== undefined && value !== 0) throw refusal('blockDuration');
    }

    get execEvenly() {
      return this._execEvenly;
    }

    set execEvenly(value) {
      this._execEvenly = Boolean(value);
    }

    get execEvenlyMinDelayMs() {
      return this._execEvenlyMinDelayMs ?? Math.ceil(this.msDuration / this.points);
    }

    getKey(key) {
      return `${this.keyPrefix}:${key}`;
    }

    parseKey(rlKey) {
      return rlKey.substring(this.keyPrefix.length + 1);
    }

    // Spends pointsToConsume of the key's current window when they are
    // there: resolves with a RateLimiterRes, rejects with one when denied
    // (nothing spent), with an Error when the store failed.
    consume(key, pointsToConsume = 1, options = {}) {
      return this.insured('consume', [key, pointsToConsume, options], async () => {
        refuseCustomDuration(options);
        if (pointsToConsume > this.points) {
          // More than a window grants is never admitted (fixed_window would
          // call it an invalid cost): denied until the window ends, as the
          // library denies it.
          const now = await this.client.check(this.keyPrefix, keyText(key), this.call(0));
          throw this.resOf(now, { denied: true });
        }
        const result = await this.client.limit(this.keyPrefix, keyText(key), this.call(pointsToConsume));
        if (!result.ok) throw this.resOf(result, { denied: true });
        const res = this.resOf(result, { cost: pointsToConsume });
        return this.evenly(res);
      });
    }

    // Spends up to points of the current window: a fixed window denies
    // until its end once it holds its points, so what a penalty would add
    // beyond that has no effect.  Resolves with the window as it is then.
    penalty(key, points = 1, options = {}) {
      return this.insured('penalty', [key, points, options], async () => {
        refuseCustomDuration(options);
        let cost = Math.min(points, this.points);
        for (;;) {
          const result = await this.client.limit(this.keyPrefix, keyText(key), this.call(cost));
          // Denied: others spent meanwhile; spend what is left, if anything.
          if (result.ok || result.remaining === 0) return this.resOf(result);
          cost = Math.min(cost, result.remaining);
        }
      });
    }

    // Gives back up to points to the key's current window (never above
    // points, never to an ended window, never creating a counter).
    reward(key, points = 1, options = {}) {
      return this.insured('reward', [key, points, options], async () => {
        refuseCustomDuration(options);
        const name = this.keyPrefix;
        // A window never holds more than points: more is given back as points.
        const tokens = await this.client.refund(name, keyText(key), this.call(Math.min(points, this.points)));
        // fw_refund answers the tokens only; the window's end is a check's.
        const now = await this.client.check(name, keyText(key), this.call(0));
        return new RateLimiterRes(tokens, now.resetAfter ?? 0, this.points - tokens, false);
      });
    }

    // The key's current window, or null when it has spent nothing there.
    get(key, options = {}) {
      return this.insured('get', [key, options], async () => {
        const now = await this.client.check(this.keyPrefix, keyText(key), this.call(0));
        if (now.failedOpen || now.remaining >= this.points) return null;
        return this.resOf(now);
      });
    }

    set(key, points, secDuration, options = {}) { // eslint-disable-line no-unused-vars
      return Promise.reject(refusal('set'));
    }

    block(key, secDuration, options = {}) { // eslint-disable-line no-unused-vars
      return Promise.reject(refusal('block'));
    }

    // Removes the key's counter (fw_reset, which needs fw_admin's grant):
    // true when there was one.
    delete(key, options = {}) {
      return this.insured('delete', [key, options], async () => {
        const removed = await this.client.reset(this.keyPrefix, keyText(key));
        return removed > 0;
      });
    }

    // The options of an inline call of this limiter's window.
    call(cost) {
      return { rate: this.points, period: this.msDuration, start: this.start, cost };
    }

    // A RateLimiterRes of a fixed_window result.  consumedPoints is what
    // the window holds; the first consume of a window is the one that
    // leaves it holding exactly its own cost.
    resOf(result, { denied = false, cost } = {}) {
      if (result.failedOpen) {
        const res = new RateLimiterRes(this.points, 0, 0, false);
        res.failedOpen = true;
        return res;
      }
      const consumed = this.points - result.remaining;
      const msBeforeNext = (denied ? result.retryAfter : null) ?? result.resetAfter ?? 0;
      return new RateLimiterRes(result.remaining, msBeforeNext, consumed, cost !== undefined && consumed === cost);
    }

    // execEvenly as the library does it: an admitted consume, not the first
    // of its window, waits msBeforeNext / (remainingPoints + 2), at least
    // consumedPoints * execEvenlyMinDelayMs when shorter than the minimum.
    evenly(res) {
      if (!this.execEvenly || res.failedOpen || res.msBeforeNext <= 0 || res.isFirstInDuration) return res;
      let delay = Math.ceil(res.msBeforeNext / (res.remainingPoints + 2));
      if (delay < this.execEvenlyMinDelayMs) delay = res.consumedPoints * this.execEvenlyMinDelayMs;
      res.msBeforeNext = Math.max(res.msBeforeNext - delay, 0);
      return new Promise((resolve) => { setTimeout(resolve, delay, res); });
    }

    // Runs an operation; when the database is unavailable and an
    // insuranceLimiter is set, that limiter answers instead, as the
    // library's stores do.  Only an outage goes there: an error of the call
    // or of the settings (a missing grant, a key too long) is the caller's
    // to see.
    async insured(operation, args, run) {
      try {
        return await run();
      } catch (err) {
        if (err instanceof FixedWindowUnavailableError && this.insuranceLimiter !== undefined) {
          return this.insuranceLimiter[operation](...args);
        }
        throw err;
      }
    }
  };
}

function refuseCustomDuration(options) {
  if (options?.customDuration !== undefined) throw refusal('customDuration');
}

// One subclass per library base class, made once.
const subclasses = new WeakMap();
function extending(LibraryBase) {
  if (typeof LibraryBase !== 'function') {
    throw new TypeError('extending() takes a class, rate-limiter-flexible\'s RateLimiterCompatibleAbstract');
  }
  if (!subclasses.has(LibraryBase)) subclasses.set(LibraryBase, limiterClass(LibraryBase));
  return subclasses.get(LibraryBase);
}

const RateLimiterFixedWindow = limiterClass(Object);

module.exports = { RateLimiterFixedWindow };
