// A service whose settings do not fit its database, or its pooler, is
// misconfigured, not down: it answers 500 (no Retry-After: retrying will not
// help), and its log says it is a configuration error.  Behind pgbouncer,
// 1.5 answered 503 "database unavailable" to every request, for good, when
// the pooler refused a startup parameter (08P01).  A database that the admin
// closed to connections is an outage the admin will end: a 503.  Either way
// the log holds the server's message, not a stack trace: a stack is for bugs.
// Settings the service cannot understand stop it at startup (exit 2).
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { T0, createLoginRole, hello, refusedService, sql, startService } from './helpers.js';

before(async () => {
  for (const db of ['without_schema', 'noconn', 'closed']) await sql(`DROP DATABASE IF EXISTS ${db}`);
  await sql('CREATE DATABASE without_schema');
  // a role that may log in, but not to this database (42501; pgbouncer 08P01)
  await sql('CREATE DATABASE noconn');
  await sql('REVOKE CONNECT ON DATABASE noconn FROM PUBLIC');
  await createLoginRole('fw_noconn');
  // a database closed to connections (55000; pgbouncer 08P01)
  await sql('CREATE DATABASE closed');
  await sql('ALTER DATABASE closed ALLOW_CONNECTIONS false');
});

// What a stack trace looks like in the log: a line "    at ...".
const STACK = /^\s+at /m;

const cases = [
  ['a database that does not exist (3D000)', { PGDATABASE: 'no_such_database' }],
  ['a role that does not exist (28000)', { PGUSER: 'no_such_role' }],
  ['a database without the schema (42883)', { PGDATABASE: 'without_schema' }],
  // PostgreSQL refuses the setting (42704); a pooler, the startup parameter "options" (08P01)
  ['a setting in PGOPTIONS that the server or the pooler refuses', { PGOPTIONS: '-c no_such_setting=1' }],
  // 1.5 behind pgbouncer: a 503, for good
  ['a role without CONNECT on the database (42501)', { PGDATABASE: 'noconn', PGUSER: 'fw_noconn' }],
];

for (const [what, env] of cases) {
  test(`${what}: a 500, and the log says it is the configuration`, async () => {
    const instance = await startService(env);
    try {
      for (let i = 1; i <= 3; i++) {        // the first, and those a pooler fails at once after it
        const r = await hello(undefined, T0, undefined, instance.url);
        assert.equal(r.status, 500, `request ${i}`);
        assert.equal(r.headers.get('retry-after'), null);
        assert.deepEqual(r.body, { error: 'internal error' });
      }
      assert.match(instance.log(), /database configuration error/);
      assert.doesNotMatch(instance.log(), /unavailable/);
      assert.doesNotMatch(instance.log(), STACK);
    } finally {
      await instance.stop();
    }
  });
}

test('a database closed to connections (ALLOW_CONNECTIONS false, 55000): a 503 with Retry-After, an outage its admin will end', async () => {
  // 1.5: directly a 500 with a stack trace in the log (55000 was not
  // classified at all); behind pgbouncer a 503
  const instance = await startService({ PGDATABASE: 'closed' });
  try {
    for (let i = 1; i <= 3; i++) {
      const r = await hello(undefined, T0, undefined, instance.url);
      assert.equal(r.status, 503, `request ${i}`);
      assert.equal(r.headers.get('retry-after'), '2');
      assert.deepEqual(r.body, { error: 'service unavailable' });
    }
    assert.match(instance.log(), /database unavailable: \S+ database "closed" is not currently accepting connections/);
    assert.doesNotMatch(instance.log(), /configuration error/);
    assert.doesNotMatch(instance.log(), STACK);
  } finally {
    await instance.stop();
  }
});

// 1.5 dropped what it could not match, silently: a CIDR, an address in
// upper case or not compressed never matched a peer, and every client
// behind such a proxy shared the proxy's quota.
test('TRUSTED_PROXIES with an entry that is not an address or a network: refused at startup, naming it', async () => {
  for (const [list, bad] of [
    ['10.0.0.1, proxy.example.com', /"proxy\.example\.com"/],
    ['10.0.0.0/33', /"10\.0\.0\.0\/33"/],
    ['10.0.0.1/8', /"10\.0\.0\.1\/8".*10\.0\.0\.0\/8/],       // host bits: which network was meant?
    ['fe80::1%eth0', /"fe80::1%eth0"/],
  ]) {
    const { code, log } = await refusedService({ TRUSTED_PROXIES: list });
    assert.equal(code, 2, `${list}: ${log}`);
    assert.match(log, /^TRUSTED_PROXIES/m, list);
    assert.match(log, bad, list);
    assert.doesNotMatch(log, STACK, list);
    assert.doesNotMatch(log, /^listening on /m, list);
  }
});

test('HOST that is not an address, or not one of this host: refused at startup', async () => {
  const notAddress = await refusedService({ HOST: 'nowhere.example' });
  assert.equal(notAddress.code, 2, notAddress.log);
  assert.match(notAddress.log, /^HOST must be an IPv4 or IPv6 address, not "nowhere\.example"/m);
  // 203.0.113.1 (TEST-NET-3) is no address of this machine
  const notHere = await refusedService({ HOST: '203.0.113.1' });
  assert.equal(notHere.code, 1, notHere.log);
  assert.match(notHere.log, /^cannot listen on 203\.0\.113\.1 port 0: .*EADDRNOTAVAIL/m);
  assert.doesNotMatch(notHere.log, STACK);
});
