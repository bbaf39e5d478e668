// Several servers: the client routes each key to the shard the router
// fixed_window_proxy would (both of its methods), its calls land in that
// shard's counters, and FixedWindow.fromRouter reads the router's shard list
// and method.  The shards are three databases of the test cluster, p0..p2,
// and the router a fourth, set up as docs/scaling-out.md says.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import pg from 'pg';
import { FixedWindow, parseConninfo, shardOf } from '../lib/index.mjs';
import { pool, sql, uniqueName } from './helpers.mjs';

const SHARDS = ['p0', 'p1', 'p2'];
const conninfo = (database) => `host=${process.env.PGHOST} port=${process.env.PGPORT} dbname=${database}`;
let router;

before(async () => {
  for (const database of [...SHARDS, 'router']) {
    await sql(`DROP DATABASE IF EXISTS ${database}`);
    await sql(`CREATE DATABASE ${database}`);
  }
  for (const database of SHARDS) {
    const shard = pool({ user: 'postgres', database, max: 1 });
    await shard.query(`CREATE SCHEMA fw;
      CREATE EXTENSION fixed_window SCHEMA fw;
      GRANT USAGE ON SCHEMA fw TO app`);
  }
  const admin = pool({ user: 'postgres', database: 'router', max: 1 });
  await admin.query(`CREATE SCHEMA fw;
    CREATE EXTENSION fixed_window_proxy SCHEMA fw CASCADE;
    CREATE SERVER fw_shards FOREIGN DATA WRAPPER plproxy OPTIONS (modular_mapping '1',
      ${SHARDS.map((database, i) => `p${i} '${conninfo(database)}'`).join(', ')});
    CREATE USER MAPPING FOR PUBLIC SERVER fw_shards;
    GRANT USAGE ON SCHEMA fw TO app;
    GRANT USAGE ON FOREIGN SERVER fw_shards TO app`);
  router = pool({ database: 'router', max: 2 });
});

test('the shard of each key is the router\'s, by jump and by modulo', async () => {
  const keys = Array.from({ length: 500 }, (_, i) => [`name-${i % 7}`, `user:${i}-é-${'x'.repeat(i % 40)}`]);
  const { rows } = await router.query(
    `SELECT fw.fw_shard(k.name, k.key, 3, 'jump') AS jump, fw.fw_shard(k.name, k.key, 3, 'modulo') AS modulo,
            fw.fw_shard(k.name, k.key, 200, 'jump') AS jump200, fw.fw_key_shard(k.name, k.key) AS routed
     FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(name, key, i) ORDER BY k.i`,
    [keys.map((k) => k[0]), keys.map((k) => k[1])]);
  keys.forEach(([name, key], i) => {
    assert.equal(shardOf(name, key, 3, 'jump'), rows[i].jump, `${name} ${key}`);
    assert.equal(shardOf(name, key, 3, 'modulo'), rows[i].modulo, `${name} ${key}`);
    assert.equal(shardOf(name, key, 200, 'jump'), rows[i].jump200, `${name} ${key}`);
    assert.equal(shardOf(name, key, 3), rows[i].routed, `${name} ${key}`);
  });
});

test('calls land in the counters of the key\'s shard, as the router\'s would', async () => {
  const fw = new FixedWindow({ shards: SHARDS.map((database) => pool({ database })) });
  const name = uniqueName();
  const keys = Array.from({ length: 60 }, (_, i) => `k${i}`);
  await Promise.all(keys.map((key) => fw.limit(name, key, { rate: 5, period: 3_600_000 })));
  for (const [i, database] of SHARDS.entries()) {
    const shard = pool({ user: 'postgres', database, max: 1 });
    const { rows } = await shard.query('SELECT key FROM fw.fw_counters WHERE name = $1 ORDER BY key', [name]);
    assert.deepEqual(rows.map((r) => r.key), keys.filter((key) => fw.shardOf(name, key) === i).sort());
  }
  // and the router answers from the same counter
  const { rows } = await router.query('SELECT remaining FROM fw.fw_limit($1, $2, 5, interval \'1 hour\')', [name, 'k7']);
  assert.equal(rows[0].remaining, 3);
  assert.equal((await fw.check(name, 'k7', { rate: 5, period: 3_600_000, cost: 0 })).remaining, 3);
});

test('fromRouter: the router\'s shard list and routing method', async () => {
  const fw = await FixedWindow.fromRouter(router, pg.Pool, { user: 'app', max: 2 });
  assert.equal(fw.pools.length, 3);
  assert.equal(fw.routing, 'jump');
  const name = uniqueName();
  await fw.limit(name, 'someone', { rate: 2, period: 60_000 });
  const { rows } = await router.query('SELECT remaining FROM fw.fw_check($1, $2, 2, interval \'1 minute\', cost => 0)', [name, 'someone']);
  assert.equal(rows[0].remaining, 1);
  await Promise.all(fw.pools.map((p) => p.end()));
});

test('connection strings in the router\'s form', () => {
  assert.deepEqual(parseConninfo("host=db.example port=6432 dbname=fw user=app password='a \\'b\\' c'"),
    { host: 'db.example', port: 6432, database: 'fw', user: 'app', password: "a 'b' c" });
  assert.deepEqual(parseConninfo('dbname=p0 connect_timeout=3 sslmode=verify-full'),
    { database: 'p0', connectionTimeoutMillis: 3000, ssl: {} });
  assert.throws(() => parseConninfo('dbname=p0 target_session_attrs=read-write'), /target_session_attrs/);
  assert.throws(() => parseConninfo('sslmode=prefer'), /prefer/);
  assert.throws(() => parseConninfo('dbname'), /cannot read/);
});
