// A service whose settings do not fit its database, or its pooler, is
// misconfigured, not down: it answers 500 (no Retry-After: retrying will not
// help), and its log says it is a configuration error.  Behind pgbouncer,
// 1.5 answered 503 "database unavailable" to every request, for good, when
// the pooler refused a startup parameter (08P01).
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { T0, hello, sql, startService } from './helpers.js';

before(async () => {
  await sql('DROP DATABASE IF EXISTS without_schema');
  await sql('CREATE DATABASE without_schema');
});

const cases = [
  ['a database that does not exist (3D000)', { PGDATABASE: 'no_such_database' }],
  ['a role that does not exist (28000)', { PGUSER: 'no_such_role' }],
  ['a database without the schema (42883)', { PGDATABASE: 'without_schema' }],
  // PostgreSQL refuses the setting (42704); a pooler, the startup parameter "options" (08P01)
  ['a setting in PGOPTIONS that the server or the pooler refuses', { PGOPTIONS: '-c no_such_setting=1' }],
];

for (const [what, env] of cases) {
  test(`${what}: a 500, and the log says it is the configuration`, async () => {
    const instance = await startService(env);
    try {
      const r = await hello(undefined, T0, undefined, instance.url);
      assert.equal(r.status, 500);
      assert.equal(r.headers.get('retry-after'), null);
      assert.deepEqual(r.body, { error: 'internal error' });
      assert.match(instance.log(), /database configuration error/);
      assert.doesNotMatch(instance.log(), /unavailable/);
    } finally {
      await instance.stop();
    }
  });
}
