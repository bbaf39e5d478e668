// The declarations as CommonJS code sees them (require): the same names.
// Compiled with test/types.mts; nothing here runs.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
import fixedWindow = require('fixed-window-pg');

const { FixedWindow, FixedWindowInputError, shardHash } = fixedWindow;
export const made = (pool: fixedWindow.Queryable): number =>
  shardHash('a', 'b') + (new FixedWindow({ pool }) instanceof FixedWindowInputError ? 1 : 0);
