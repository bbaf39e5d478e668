'use strict';
// A store for @fastify/rate-limit (v10, v11) on fixed_window.
//
//   await fastify.register(rateLimit, { max: 100, timeWindow: '1 minute',
//     store: fastifyStore(fw) });
//
// The plugin instantiates the store class with its settings (new Store(params)),
// asks incr(key, cb, timeWindow, max) for each request and read(...) for a
// peek ({ increment: false }), and takes a child(routeOptions) for each route
// with a rateLimit config of its own.  It decides from what the store calls
// back, { current, ttl }: over max is a 429 (a 403 once current - max > ban),
// and it sends max - current as x-ratelimit-remaining and ttl, in seconds, as
// x-ratelimit-reset and retry-after.
//
// Here the decision is the database's: one fw_limit per request, with the
// rate and the period the plugin passes, on windows of the default grid
// (aligned to the epoch).  A denied request spends nothing, so the count
// never passes max; the store answers current = max + 1 for a denial, which
// is what the plugin needs to refuse it, and the time to the next window as
// its ttl.  The plugin itself is not loaded here: the store is duck-typed.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

const crypto = require('node:crypto');

const DEFAULT_NAME = 'fastify-rate-limit';
// What fixed_window takes: a name up to 256 bytes, a key up to 2048.
const MAX_NAME_BYTES = 256;
const MAX_KEY_BYTES = 2048;

// The plugin's options that renew or lengthen a window on each hit over the
// limit: the window of a counter that is moved by its own hits is not a
// window of a fixed grid, which is all fixed_window counts in.
const REFUSED_OPTIONS = {
  continueExceeding: 'it restarts the window of a key at each request over the limit, '
    + 'and fixed_window counts on a fixed grid of windows, which no request moves',
  exponentialBackoff: 'it doubles the window of a key at each request over the limit, '
    + 'and fixed_window counts on a fixed grid of windows of one length',
};

// A text within a byte limit: itself when it fits, else as much of its head
// as fits with the SHA-256 of the whole, so that two long texts stay apart.
function withinBytes(text, limit) {
  if (Buffer.byteLength(text) <= limit) return text;
  const digest = crypto.createHash('sha256').update(text).digest('hex');
  const room = limit - digest.length - 1;
  let head = '';
  for (const character of text) {
    if (Buffer.byteLength(head + character) > room) break;
    head += character;
  }
  return `${head}#${digest}`;
}

// The suffix of a route's counters: its method(s) and URL, as the route was
// declared (a route may have several methods).
function routeSuffix(routeInfo) {
  if (routeInfo == null || routeInfo.url === undefined) return null;
  const methods = Array.isArray(routeInfo.method) ? routeInfo.method.join(',') : routeInfo.method;
  return `${methods} ${routeInfo.url}`;
}

// The plugin's ban option as it keeps it: -1 when none.
function banOf(params) {
  return Number.isFinite(params?.ban) && params.ban >= 0 ? Math.trunc(params.ban) : -1;
}

function refuseUnsupported(params, where) {
  for (const [option, why] of Object.entries(REFUSED_OPTIONS)) {
    if (params?.[option] === true) {
      throw new Error(`fixed-window-pg's @fastify/rate-limit store does not support ${option}${where}: ${why}. `
        + 'Remove the option, or use the plugin\'s own store where it is needed.');
    }
  }
}

/**
 * The store class to pass as @fastify/rate-limit's `store` option.
 *
 * @param {import('./client.cjs').FixedWindow} client
 * @param {{ name?: string }} [options] name: the fixed_window name of the
 *   global limit; a route with a config of its own counts in
 *   `${name}:${method} ${url}`, routes of a groupId in `${name}:group ${groupId}`,
 *   a limiter of createRateLimit(options) in `${name}:limiter ${n}`.
 */
function fastifyStore(client, { name = DEFAULT_NAME } = {}) {
  if (client === null || typeof client !== 'object' || typeof client.limit !== 'function' || typeof client.check !== 'function') {
    throw new TypeError('fastifyStore needs a FixedWindow client (new FixedWindow({ pool }))');
  }
  if (typeof name !== 'string' || name === '') throw new TypeError('name must be a non-empty string');
  const baseName = withinBytes(name, MAX_NAME_BYTES);
  // Limiters of createRateLimit(options) have no route: each has counters
  // of its own (as with the plugin's LocalStore), numbered in the order
  // they are made, the same in every process that makes them in one order.
  let unroutedChildren = 0;

  class FixedWindowFastifyStore {
    // params: the plugin's settings, or a route's merged with them.
    constructor(params = {}) {
      refuseUnsupported(params, params.routeInfo ? ` (route ${routeSuffix(params.routeInfo) ?? 'of createRateLimit'})` : '');
      this.client = client;
      this.name = baseName;
      this.ban = banOf(params);
    }

    // A store for a route with a rateLimit config of its own (or a limiter
    // of createRateLimit(options)): its counters apart from every other
    // route's.  Routes of one groupId share one counter, as the plugin's
    // README describes (its own stores keep them apart even then: each
    // route has a child store of its own).
    child(routeOptions) {
      const store = new FixedWindowFastifyStore(routeOptions);
      let suffix = typeof routeOptions?.groupId === 'string'
        ? `group ${routeOptions.groupId}`
        : routeSuffix(routeOptions?.routeInfo);
      if (suffix === null) {
        unroutedChildren += 1;
        suffix = `limiter ${unroutedChildren}`;
      }
      store.name = withinBytes(`${name}:${suffix}`, MAX_NAME_BYTES);
      return store;
    }

    incr(key, callback, timeWindow, max) {
      this.settle(this.hit(key, timeWindow, max), callback);
    }

    read(key, callback, timeWindow, max) {
      this.settle(this.peek(key, timeWindow, max), callback);
    }

    // The plugin passes callbacks; its errors path is skipOnError, else the
    // error goes to fastify's error handler.
    settle(promise, callback) {
      promise.then((result) => callback(null, result), (err) => callback(err));
    }

    async hit(key, timeWindow, max) {
      const counted = keyOf(key);
      if (max === 0) return this.nothingAllowed(counted, timeWindow);
      const answer = await this.client.limit(this.name, counted, { rate: max, period: timeWindow });
      if (answer.failedOpen) return { current: 0, ttl: 0 };
      if (answer.ok) return { current: spent(max, answer.remaining, 1), ttl: answer.resetAfter };
      const ttl = answer.retryAfter ?? answer.resetAfter;
      if (this.ban < 1) return { current: max + 1, ttl };
      return { current: max + await this.countDenial(counted, timeWindow), ttl };
    }

    // A peek: what the counters hold, spending nothing.  A key with nothing
    // left is reported over the limit: the next request would be refused.
    async peek(key, timeWindow, max) {
      const counted = keyOf(key);
      if (max === 0) return this.nothingAllowed(counted, timeWindow);
      const answer = await this.client.check(this.name, counted, { rate: max, period: timeWindow, cost: 0 });
      if (answer.failedOpen) return { current: 0, ttl: 0 };
      if (answer.remaining > 0) return { current: spent(max, answer.remaining, 0), ttl: answer.resetAfter };
      if (this.ban < 1) return { current: max + 1, ttl: answer.resetAfter };
      const denials = await this.client.check(this.deniedName(), counted, { rate: this.ban + 1, period: timeWindow, cost: 0 });
      if (denials.failedOpen) return { current: max + 1, ttl: answer.resetAfter };
      return { current: max + Math.max(1, this.ban + 1 - denials.remaining), ttl: answer.resetAfter };
    }

    // ban >= 1 bans after that many 429s in a window, as the plugin does when
    // its store counts every hit.  Denials do not spend the limit here, so
    // they are counted apart, in a counter of their own on the same windows:
    // rate ban + 1, so that a full one is a ban.  The denial this call made
    // is counted in it: 1 for the first 429.
    async countDenial(key, timeWindow) {
      const rate = this.ban + 1;
      const denials = await this.client.limit(this.deniedName(), key, { rate, period: timeWindow });
      if (denials.failedOpen) return 1;
      return denials.ok ? rate - denials.remaining : rate + 1;
    }

    deniedName() {
      return withinBytes(`${this.name}:denied`, MAX_NAME_BYTES);
    }

    // max 0 refuses every request (fixed_window's rate is at least 1): the
    // ttl is the time to the window's end, as the database counts it.
    async nothingAllowed(key, timeWindow) {
      const answer = await this.client.check(this.name, key, { rate: 1, period: timeWindow, cost: 0 });
      return { current: 1, ttl: answer.resetAfter ?? 0 };
    }
  }

  return FixedWindowFastifyStore;
}

// The tokens spent in the window, from what remains: a rate that changed in
// the window takes effect at the next (fixed_window's rule), so the count
// is kept within least..max for the plugin's arithmetic (at least 1 after
// an admission, which spent one).
function spent(max, remaining, least) {
  return Math.min(max, Math.max(least, max - remaining));
}

// The plugin's keys are strings (its keyGenerator may answer a number).
function keyOf(key) {
  return withinBytes(String(key), MAX_KEY_BYTES);
}

module.exports = { fastifyStore };
