// Behind pgbouncer (test.sh pgbouncer): what the pooler adds.  The rest of
// the service's tests run behind it too: the deadline that the server
// enforces through a transaction pooler, restarts with requests in flight,
// configuration errors that are not outages.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T0, hello, pgCtl, poolerAdmin, until } from './helpers.js';

// After a server login failed, pgbouncer fails its clients at once and
// tries again only server_login_retry seconds later (15 by default): so
// long the service answers 503 although PostgreSQL is back.
test('after PostgreSQL is back, the service answers 200 again within server_login_retry', async () => {
  for (const retry of [15, 1]) {        // pgbouncer's default, and what the README advises
    await poolerAdmin(`SET server_login_retry = ${retry}`);
    const from = `198.51.100.${retry}`;
    assert.equal((await hello(undefined, T0, from)).status, 200);
    await pgCtl('stop', '-m', 'fast');
    let back;
    try {
      assert.equal((await hello(undefined, T0, from)).status, 503, 'while PostgreSQL is down');
    } finally {
      await pgCtl('start');
      back = Date.now();
    }
    await until('a 200', retry + 10, async () =>
      ((await hello(undefined, T0, from)).status === 200 ? true : undefined));
    const unavailable = Date.now() - back;
    console.log(`server_login_retry = ${retry}: 503 for ${unavailable} ms after PostgreSQL was back`);
    assert.ok(unavailable < (retry + 2) * 1000, `${unavailable} ms`);
  }
});
