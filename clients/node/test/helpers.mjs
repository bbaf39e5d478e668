// What the package's tests share: pools on the test cluster (directly, or
// through PgBouncer in transaction mode), a pool whose calls are judged at a
// clock the test sets, SQL as the superuser, a name no other test uses, and
// a restart of the database.  test.sh starts the cluster and the pooler and
// passes where they are: PGHOST, PGPORT, POOLER_PORT, PG_DATA.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import { execFile } from 'node:child_process';
import { after } from 'node:test';
import { promisify } from 'node:util';
import pg from 'pg';

export const T0 = Date.parse('2026-05-01T10:00:00Z');   // a minute's start
export const iso = (ms) => new Date(ms).toISOString();

const pools = [];
after(async () => {
  await Promise.all(pools.map((pool) => pool.end().catch(() => {})));
});

// A pg.Pool as role `user` (the README's `app` by default), on PostgreSQL
// itself or through the pooler.  Its idle connections' errors (a restart)
// are noted, not fatal: Node exits on an 'error' nobody listens to.
export function pool({ user = 'app', pooler = false, max = 8, database = 'postgres', ...rest } = {}) {
  const created = new pg.Pool({
    host: process.env.PGHOST,
    port: Number(pooler ? process.env.POOLER_PORT : process.env.PGPORT),
    user, database, max,
    connectionTimeoutMillis: 30_000,        // waiting for a connection counts: 1,000 calls queue on 8
    ...rest,
  });
  created.on('error', () => {});
  created.on('connect', (client) => client.on('error', () => {}));
  pools.push(created);
  return created;
}

// SQL as the superuser.
let superuser;
export async function sql(text, values) {
  superuser ??= pool({ user: 'postgres', max: 2 });
  return (await superuser.query(text, values)).rows;
}

// A pool whose every statement is judged at the clock the test sets
// (fixed_window.debug_now, a superuser's setting, on the connection before
// each statement): clocked.at(ms) moves it.  It has what FixedWindow uses
// of a pool, query().
export function clockedPool({ at = T0, max = 8, pooler = false } = {}) {
  const inner = pool({ user: 'postgres', max, pooler });
  let now = at;
  return {
    at(ms) { now = ms; },
    get now() { return now; },
    async query(config, values) {
      const client = await inner.connect();
      try {
        await client.query("SELECT set_config('fixed_window.debug_now', $1, false)", [iso(now)]);
        return await client.query(config, values);
      } finally {
        client.release();
      }
    },
  };
}

// A name of fixed_window no other test uses.
let names = 0;
export function uniqueName(prefix = 'test') {
  names += 1;
  return `${prefix}-${process.pid}-${names}`;
}

// Restarts PostgreSQL (fast shutdown: sessions are ended, requests in flight
// fail) and waits until it accepts connections again.
export async function restart() {
  await promisify(execFile)('pg_ctl', ['-D', process.env.PG_DATA, '-m', 'fast', '-w', 'restart',
    '-l', `${process.env.PG_DATA}/../server.log`]);
}

// The tokens the database holds for (name, key) now, or null without a counter.
export async function remainingOf(name, key) {
  const rows = await sql('SELECT remaining FROM fw.fw_counters WHERE name = $1 AND key = $2', [name, key]);
  return rows.length === 0 ? null : rows[0].remaining;
}
