// fixed-window-pg as an ES module: the CommonJS package's exports, by name.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
import cjs from './index.cjs';

export const {
  FixedWindow,
  FixedWindowError,
  FixedWindowInputError,
  FixedWindowUndefinedPolicyError,
  FixedWindowPermissionError,
  FixedWindowConfigurationError,
  FixedWindowCapacityError,
  FixedWindowStateError,
  FixedWindowUnavailableError,
  fromDriver,
  shardOf,
  shardHash,
  jumpHash,
  parseConninfo,
  FixedWindowStore,
  fastifyStore,
  RateLimiterFixedWindow,
} = cjs;
