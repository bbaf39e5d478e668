'use strict';
// FixedWindow: fixed_window's calls from Node.js, on a pg pool.
//
//   const fw = new FixedWindow({ pool });
//   const { ok, retryAfter } = await fw.limit('api', userId, { rate: 100, period: 60_000 });
//
// Each call is one statement, answered by the database: the decision, the
// counting and the clock are the extension's, so that every process and
// every server role sees one limit.  What this file adds is the driver's
// side: the statements (named and prepared once per connection), times in
// milliseconds, the arguments checked before they are sent, the errors as
// classes (errors.cjs), the shard of each key when there are several
// servers (shard.cjs), and the caller's choice of failing open.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

const crypto = require('node:crypto');
const errors = require('./errors.cjs');
const { shardOf, parseConninfo } = require('./shard.cjs');

const { FixedWindowError, FixedWindowConfigurationError, FixedWindowUnavailableError, fromDriver } = errors;

// The default grid of fw_limit: windows counted from the Unix epoch.
const EPOCH = '1970-01-01T00:00:00Z';
const MAX_INT4 = 2147483647;

// An interval or a time as milliseconds (since the epoch), rounded up: a
// retry time that comes early would be refused, and none of DateStyle,
// IntervalStyle or TimeZone plays a part.  NULL stays NULL.
function ms(value) {
  return `ceil(extract(epoch FROM ${value}) * 1000)::float8`;
}

// The result of a call.
const RESULT = `r.ok, ${ms('r.retry_after')} AS retry_after, r.remaining, ${ms('r.reset_after')} AS reset_after`;

// The statements, by what they do and whether they are inline (rate and
// period in the call) or named (a policy fw_define made); {s} is the
// extension's schema, quoted.
const STATEMENTS = {
  limit_inline: `SELECT ${RESULT} FROM {s}.fw_limit($1, $2, $3::integer, $4::interval, $5::timestamptz, $6::integer, $7::integer) AS r`,
  limit_named: `SELECT ${RESULT} FROM {s}.fw_limit($1, $2, $3::integer) AS r`,
  check_inline: `SELECT ${RESULT} FROM {s}.fw_check($1, $2, $3::integer, $4::interval, $5::timestamptz, $6::integer, $7::integer) AS r`,
  check_named: `SELECT ${RESULT} FROM {s}.fw_check($1, $2, $3::integer) AS r`,
  refund_inline: 'SELECT {s}.fw_refund($1, $2, $3::integer, $4::interval, $5::timestamptz, $6::integer, $7::integer) AS tokens',
  refund_named: 'SELECT {s}.fw_refund($1, $2, $3::integer) AS tokens',
  reset: 'SELECT {s}.fw_reset($1, $2)::float8 AS removed',
  limit_windows: windowsOf('fw_limit_windows'),
  check_windows: windowsOf('fw_check_windows'),
};

// A policy's call, a row per window: allowed when every enforced window
// allowed (a shadow window only reports), the HTTP headers fw_headers makes
// of them, and the windows, times in milliseconds (ms()).
function windowsOf(call) {
  return `SELECT bool_and(w.ok OR w.shadow) AS ok, {s}.fw_headers($1, array_agg(w)) AS headers,
    jsonb_agg(jsonb_build_object('period', ${ms('w.period')}, 'rate', w.rate, 'capacity', w.capacity,
      'shadow', w.shadow, 'ok', w.ok, 'retryAfter', ${ms('w.retry_after')}, 'remaining', w.remaining,
      'resetAfter', ${ms('w.reset_after')}, 'windowStart', ${ms('w.window_start')},
      'windowEnd', ${ms('w.window_end')}) ORDER BY w.period) AS windows
    FROM {s}.${call}($1, $2, $3::integer) AS w`;
}

// The schema, quoted, of the first of the extensions named that the
// database has.
function schemaQuery(extensions) {
  const names = `ARRAY[${extensions.map((name) => `'${name}'`).join(', ')}]`;
  return `
  SELECT quote_ident(n.nspname) AS schema
  FROM pg_catalog.pg_extension AS e JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace
  WHERE e.extname = ANY (${names})
  ORDER BY array_position(${names}, e.extname::text)
  LIMIT 1`;
}
// Where the extension is: the C extension, its SQL edition, or the router;
// and where the router is.
const FIND_SCHEMA = schemaQuery(['fixed_window', 'fixed_window_sql', 'fixed_window_proxy']);
const FIND_ROUTER = schemaQuery(['fixed_window_proxy']);

const MASKED_PASSWORD = '********';

// A schema named by the caller, quoted as PostgreSQL quotes an identifier.
function quoteIdent(name) {
  return `"${name.replace(/"/g, '""')}"`;
}

// A pooler in transaction mode (PgBouncer before 1.21) hands each
// transaction whichever server connection is free, where a statement this
// connection prepared may be missing (26000) or another client's may exist
// (42P05).  Both fail before the statement runs, so it is sent again
// unnamed, and this client prepares no more.
const NOT_PREPARED = new Set(['26000', '42P05']);

function requireString(what, value) {
  if (typeof value !== 'string') throw new TypeError(`${what} must be a string, not ${value === null ? 'null' : typeof value}`);
}

function requireWhole(what, value, { min = 0, max = MAX_INT4 } = {}) {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${what} must be a whole number from ${min} to ${max}, not ${String(value)}`);
  }
}

// A period: whole milliseconds, or an interval PostgreSQL reads ('1 minute',
// '1 month'), which it judges itself.
function periodText(period) {
  if (typeof period === 'number') {
    requireWhole('period', period, { min: 1, max: Number.MAX_SAFE_INTEGER });
    return `${period} milliseconds`;
  }
  if (typeof period === 'string' && period.trim() !== '') return period;
  throw new TypeError('period must be a whole number of milliseconds or an interval such as "1 minute"');
}

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

// The anchor of the window grid: undefined for the default grid, null for a
// phase of each key's own, or a time.
function startText(start) {
  if (start === undefined) return EPOCH;
  if (start === null) return null;
  if (start instanceof Date) {
    if (Number.isNaN(start.getTime())) throw new RangeError('start is an invalid Date');
    return start.toISOString();
  }
  // A string is read here, not by the server, whose reading would follow
  // the session's TimeZone and DateStyle: ISO 8601 with its offset only.
  if (typeof start === 'string') {
    const time = ISO_WITH_OFFSET.test(start) ? new Date(start) : new Date(NaN);
    if (Number.isNaN(time.getTime())) {
      throw new RangeError(`start "${start}" must be a Date or an ISO 8601 time with its offset, such as 2026-01-01T00:00:00Z`);
    }
    return time.toISOString();
  }
  throw new TypeError('start must be a Date, an ISO 8601 time, null (each key its own phase) or left out');
}

// The statement and the values of a call: inline when the options give a
// rate, else a call of the named policy.
function callOf(kind, name, key, options) {
  requireString('name', name);
  requireString('key', key);
  if (options === null || typeof options !== 'object') throw new TypeError('the options must be an object');
  const { rate, period, start, cost = 1, capacity = null, connection } = options;
  if (connection !== undefined && typeof connection?.query !== 'function') {
    throw new TypeError('connection must have a query() method, as a pg client does');
  }
  requireWhole('cost', cost);
  if (rate === undefined) {
    if (period !== undefined || capacity !== null || start !== undefined) {
      throw new TypeError('period, start and capacity go with rate: without rate the call is of the named policy');
    }
    return { statement: `${kind}_named`, values: [name, key, cost] };
  }
  requireWhole('rate', rate, { min: 1 });
  if (capacity !== null) requireWhole('capacity', capacity, { min: 1 });
  return {
    statement: `${kind}_inline`,
    values: [name, key, rate, periodText(period), startText(start), cost, capacity],
  };
}

function ignoreIdleError() {}

function resultOf(row) {
  return { ok: row.ok, retryAfter: row.retry_after, remaining: row.remaining, resetAfter: row.reset_after };
}

class FixedWindow {
  constructor(options = {}) {
    const { pool, shards, routing = 'jump', schema, prepare = true, failOpen = false } = options;
    if ((pool === undefined) === (shards === undefined)) {
      throw new TypeError('give either pool (one server) or shards (a pool per shard, in the router\'s order)');
    }
    const pools = shards === undefined ? [pool] : shards;
    if (!Array.isArray(pools) || pools.length === 0) throw new TypeError('shards must be a non-empty array of pools');
    for (const each of pools) {
      if (each === null || typeof each?.query !== 'function') throw new TypeError('a pool must have a query() method, as pg.Pool does');
    }
    if (routing !== 'jump' && routing !== 'modulo') throw new RangeError(`routing must be "jump" or "modulo", not ${JSON.stringify(routing)}`);
    if (routing === 'jump' && pools.length > 256) throw new RangeError('the router routes by jump to 256 shards at most');
    if (schema !== undefined) requireString('schema', schema);
    if (typeof failOpen !== 'boolean' && typeof failOpen !== 'function') {
      throw new TypeError('failOpen must be a boolean or a function of the error');
    }
    // A connection the server ends while idle in a pool (a restart,
    // pg_terminate_backend) makes the pool emit 'error', which ends Node
    // when nobody listens: a pool without a listener gets one, and drops
    // the connection as it does anyway.
    for (const each of pools) {
      if (typeof each.on === 'function' && typeof each.listenerCount === 'function' && each.listenerCount('error') === 0) {
        each.on('error', ignoreIdleError);
      }
    }
    this.pools = pools;
    this.routing = routing;
    this.prepare = Boolean(prepare);
    this.failOpen = failOpen;
    // Per pool: its statements' text, found once (the schema may have to be
    // looked up); a lookup that failed is tried again at the next call.
    this.statements = pools.map(() => null);
    this.schema = schema === undefined ? undefined : quoteIdent(schema);
  }

  // A FixedWindow on the shards a router lists (its view fw_shards), routed
  // as it routes.  The router masks passwords in its list: give them in
  // poolOptions, ~/.pgpass or PGPASSWORD.  Pool is pg.Pool, passed in so that
  // this package needs no pg of its own.
  static async fromRouter(routerPool, Pool, poolOptions = {}) {
    let rows;
    try {
      const found = await routerPool.query(FIND_ROUTER);
      if (found.rows.length === 0) {
        throw new FixedWindowConfigurationError('the database this pool connects to is no router: fixed_window_proxy is not installed there');
      }
      const router = found.rows[0].schema;
      ({ rows } = await routerPool.query(
        `SELECT s.connstr, ${router}.fw_routing_method() AS method FROM ${router}.fw_shards AS s ORDER BY s.shard`,
      ));
    } catch (err) {
      throw fromDriver(err);
    }
    if (rows.length === 0) throw new FixedWindowConfigurationError('the router lists no shards (its fw_shards is empty)');
    const shards = rows.map((row) => {
      const settings = parseConninfo(row.connstr);
      // the router shows a password as ********: leave it to poolOptions, PGPASSWORD or ~/.pgpass
      if (settings.password === MASKED_PASSWORD) delete settings.password;
      return new Pool({ ...settings, ...poolOptions });
    });
    return new FixedWindow({ shards, routing: rows[0].method });
  }

  // The shard, from 0, that holds (name, key): fw_shard(name, key, n, routing).
  shardOf(name, key) {
    return this.pools.length === 1 ? 0 : shardOf(name, key, this.pools.length, this.routing);
  }

  limit(name, key, options = {}) {
    return this.decide('limit', name, key, options);
  }

  check(name, key, options = {}) {
    return this.decide('check', name, key, options);
  }

  async refund(name, key, options = {}) {
    const call = callOf('refund', name, key, options);
    const { rows } = await this.run(this.shardOf(name, key), call.statement, call.values, options.connection);
    return rows[0].tokens;
  }

  async reset(name, key, { connection } = {}) {
    requireString('name', name);
    requireString('key', key);
    const { rows } = await this.run(this.shardOf(name, key), 'reset', [name, key], connection);
    return rows[0].removed;
  }

  // A named policy's call with a row per window, and its HTTP headers.
  limitWindows(name, key, options = {}) {
    return this.windows('limit', name, key, options);
  }

  checkWindows(name, key, options = {}) {
    return this.windows('check', name, key, options);
  }

  async windows(kind, name, key, { cost = 1, connection } = {}) {
    requireString('name', name);
    requireString('key', key);
    requireWhole('cost', cost);
    const { rows } = await this.run(this.shardOf(name, key), `${kind}_windows`, [name, key, cost], connection);
    return { ok: rows[0].ok, headers: rows[0].headers, windows: rows[0].windows };
  }

  async decide(kind, name, key, options) {
    const call = callOf(kind, name, key, options);
    try {
      const { rows } = await this.run(this.shardOf(name, key), call.statement, call.values, options.connection);
      return resultOf(rows[0]);
    } catch (err) {
      if (err instanceof FixedWindowUnavailableError && this.failsOpen(err)) {
        return { ok: true, retryAfter: null, remaining: null, resetAfter: null, failedOpen: true };
      }
      throw err;
    }
  }

  failsOpen(err) {
    return typeof this.failOpen === 'function' ? Boolean(this.failOpen(err)) : this.failOpen;
  }

  // Runs a statement on a shard's pool, or on the caller's connection (a
  // pg client, in a transaction of the caller's, say); rejects with a
  // FixedWindowError.  On a connection of the caller's the statement is
  // unnamed: a prepared statement a pooler lost would abort the caller's
  // transaction.
  async run(shard, statement, values, connection) {
    const pool = connection ?? this.pools[shard];
    const texts = this.statements[shard] ?? await this.textsOf(shard, connection);
    const text = texts[statement];
    if (this.prepare && connection === undefined) {
      try {
        return await pool.query({ name: `fixed_window.${statement}.${texts.id}`, text, values });
      } catch (err) {
        if (!NOT_PREPARED.has(err?.code)) throw fromDriver(err);
        this.prepare = false;
      }
    }
    try {
      return await pool.query({ text, values });
    } catch (err) {
      throw fromDriver(err);
    }
  }

  // The statements of a shard, with the schema given or found there: on the
  // caller's connection when there is one, which may be the only one its
  // pool has to give.
  async textsOf(shard, connection) {
    let schema = this.schema;
    if (schema === undefined) {
      let rows;
      try {
        ({ rows } = await (connection ?? this.pools[shard]).query(FIND_SCHEMA));
      } catch (err) {
        throw fromDriver(err);
      }
      if (rows.length === 0) {
        throw new FixedWindowConfigurationError(
          'the extension fixed_window is not installed in the database this pool connects to '
          + '(nor fixed_window_sql or fixed_window_proxy); create it, or connect to the database that has it',
          { code: '42883' },
        );
      }
      schema = rows[0].schema;
    }
    const texts = { id: prepareId(schema) };
    for (const [statement, text] of Object.entries(STATEMENTS)) texts[statement] = text.replaceAll('{s}', schema);
    this.statements[shard] = texts;
    return texts;
  }
}

// Prepared statements are named per connection: the name tells apart the
// schemas two clients on one pool may use, in the 63 bytes names keep.
function prepareId(schema) {
  return crypto.createHash('md5').update(schema).digest('hex').slice(0, 12);
}

module.exports = { FixedWindow };
