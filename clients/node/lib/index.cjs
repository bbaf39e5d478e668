'use strict';
// fixed-window-pg: fixed_window's rate limits from Node.js.  The client
// (client.cjs) and the stores of three rate-limiting libraries, each loaded
// only when it is used.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

const { FixedWindow } = require('./client.cjs');
const errors = require('./errors.cjs');
const shard = require('./shard.cjs');

// The client, every error class with fromDriver, and the routing functions.
module.exports = { FixedWindow, ...errors, ...shard };

// The adapters, loaded at first use.
for (const [file, names] of [
  ['./express.cjs', ['FixedWindowStore']],
  ['./fastify.cjs', ['fastifyStore']],
  ['./flexible.cjs', ['RateLimiterFixedWindow']],
]) {
  for (const name of names) {
    Object.defineProperty(module.exports, name, { enumerable: true, get: () => require(file)[name] });
  }
}
