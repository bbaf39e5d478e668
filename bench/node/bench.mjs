// make bench's Node.js rows: fixed-window-pg (clients/node) beside the rate
// limiters Node applications use with PostgreSQL, in one Node process on one
// pg.Pool, interleaved.  Run by bench/node/run.sh, which starts the server
// and installs the package's development dependencies; see there.
//
// Each contender answers one check of a key; the bench sends CHECKS checks
// over KEYS random keys with IN_FLIGHT of them outstanding at a time, and
// times each one.  Every round gives every contender a fresh set of keys
// (the round's prefix), so that each round asks the same of it: mostly
// admitted hits, about one key in seven hit once only.  The rounds
// interleave the contenders, in an order that rotates, so that a slow
// moment of the machine does not fall on one row; the table gives medians.
// Then exactness: HITS checks of one fresh key at once, at limit LIMIT, as
// many in flight as the pool allows; how many were admitted.
//
// Environment: PGHOST, PGPORT, PGUSER, PGDATABASE (the server, whose
// database has fixed_window); FW_NODE_PACKAGE (the package directory with
// node_modules; default clients/node); BENCH_NODE_OUT (the Markdown file to
// write; default: standard output only); the knobs below.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const packageDir = path.resolve(process.env.FW_NODE_PACKAGE ?? path.join(here, '../../clients/node'));
const require = createRequire(path.join(packageDir, 'package.json'));

function knob(name, fallback) {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0) throw new RangeError(`${name} must be a whole number > 0, not ${value}`);
  return number;
}
const ROUNDS = knob('BENCH_RUNS', 3);
const CHECKS = knob('BENCH_NODE_CHECKS', 20000);
const KEYS = knob('BENCH_NODE_KEYS', 10000);
const LIMIT = knob('BENCH_NODE_LIMIT', 5);
const WINDOW_MS = knob('BENCH_NODE_WINDOW_MS', 60000);
const IN_FLIGHT = knob('BENCH_NODE_IN_FLIGHT', 8);
const POOL_SIZE = knob('BENCH_NODE_POOL', 8);
const HITS = knob('BENCH_NODE_HITS', 1000);
// A shorter run of each contender before the rounds: connections opened,
// statements prepared, tables created, the code compiled.
const WARMUP_CHECKS = knob('BENCH_NODE_WARMUP', Math.min(CHECKS, 4000));
// BENCH_NODE_ONLY=id,id: only these contenders (ids below), to try one.
const ONLY = process.env.BENCH_NODE_ONLY ? new Set(process.env.BENCH_NODE_ONLY.split(',')) : null;

// Every key of this process starts with its own tag: a second run on the
// same server, within the window, meets no counter of the first.
const TAG = `${process.pid}.${Date.now().toString(36)}`;

const pg = require('pg');
const started = Date.now();
const log = (message) => process.stderr.write(`==> node bench: ${message}\n`);

const connection = {
  host: process.env.PGHOST,
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'postgres',
  database: process.env.PGDATABASE ?? 'postgres',
};
const pool = new pg.Pool({ ...connection, max: POOL_SIZE });
// A pool's idle connection that fails must not end the process.
pool.on('error', (err) => log(`idle connection: ${err.message}`));

// The package's files, each loaded only if it exists yet: a contender whose
// file is missing is skipped with a note in the table.
function packageFile(file) {
  const full = path.join(packageDir, 'lib', file);
  return existsSync(full) ? require(full) : null;
}

// CPU time, to say what bounds a row: the Node process's own
// (process.cpuUsage) and the server's, from /proc (Linux; the columns stay
// empty elsewhere): the postmaster's, with its ended children's that it has
// reaped (cutime, cstime), and its live children's, so that a process that
// ends during a run (an autovacuum worker) still counts.  The postmaster is
// found as the parent of one of the pool's backends.
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();
function statOf(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command, which is in parentheses and may hold spaces.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ').map(Number);
    return { parent: fields[1], ticks: fields[11] + fields[12], reaped: fields[13] + fields[14] };
  } catch {
    return null;
  }
}
let postmaster = null;
async function findPostmaster() {
  const { rows } = await pool.query('SELECT pg_backend_pid() AS pid');
  postmaster = statOf(rows[0].pid)?.parent ?? null;
}
// Microseconds of CPU the server's processes have used, or null.
function serverCpu() {
  const own = postmaster === null ? null : statOf(postmaster);
  if (own === null) return null;
  let ticks = own.ticks + own.reaped;
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    const stat = statOf(name);
    if (stat && stat.parent === postmaster) ticks += stat.ticks;
  }
  return (ticks * 1e6) / TICKS_PER_SECOND;
}
function nodeCpu() {
  const { user, system } = process.cpuUsage();
  return user + system;
}

// A denial, as each library reports one, against an error, which the bench
// counts apart: a contender that errs shows it in its row.
class Denied extends Error {}

// The contenders.  Each: id, label, limiter (whether it limits, so that
// exactness applies: 'database', 'memory' in the process, or false for the
// floors), and setup() resolving to { check(key) -> Promise<boolean admitted> }, or
// to { skip: 'why' }.
const contenders = [];
function contender(id, label, setup, { limiter = 'database' } = {}) {
  if (ONLY && !ONLY.has(id)) return;
  contenders.push({ id, label, setup, limiter });
}

contender('select1', '`SELECT 1`, unnamed (`pool.query`)', async () => ({
  check: async () => (await pool.query('SELECT 1')).rowCount === 1,
}), { limiter: false });

contender('select1_prepared', '`SELECT 1`, prepared', async () => ({
  check: async () => (await pool.query({ name: 'bench_select1', text: 'SELECT 1' })).rowCount === 1,
}), { limiter: false });

// A client of the package on the pool, as an application makes one for
// the adapters (prepared statements).
async function newClient() {
  const client = packageFile('client.cjs');
  if (!client) throw new Error('lib/client.cjs does not exist yet');
  return new client.FixedWindow({ pool });
}

// fixed_window through the package's client: the lead's lib/client.cjs.
function coreClient(prepare) {
  return async () => {
    const client = packageFile('client.cjs');
    if (!client) return { skip: 'lib/client.cjs does not exist yet' };
    const fw = new client.FixedWindow({ pool, prepare });
    const options = { rate: LIMIT, period: WINDOW_MS };
    return { check: async (key) => (await fw.limit('bench_node', key, options)).ok };
  };
}
contender('fw_prepared', 'fixed_window, client (`fw.limit`), prepared statements', coreClient(true));
contender('fw_unnamed', 'fixed_window, client (`fw.limit`), unnamed statements (`prepare: false`)', coreClient(false));

// The express-rate-limit store, called as express-rate-limit calls it:
// init once with the limiter's options, then increment per request; the
// request passes while totalHits is within the limit.
contender('fw_express', 'fixed_window, express-rate-limit store (`increment`)', async () => {
  const express = packageFile('express.cjs');
  if (!express) return { skip: 'lib/express.cjs does not exist yet' };
  const client = await newClient();
  const store = firstMade('FixedWindowStore', [
    () => new express.FixedWindowStore({ client, name: 'bench_express' }),
    () => new express.FixedWindowStore(client, { name: 'bench_express' }),
    () => new express.FixedWindowStore({ pool, name: 'bench_express' }),
  ]);
  await store.init({ windowMs: WINDOW_MS, limit: LIMIT });
  return { check: async (key) => (await store.increment(key)).totalHits <= LIMIT };
});

// The adapters' constructors, tried in the shapes the package's other
// adapter (fastify.cjs: the client first) and its library suggest, so that
// the bench need not change when one lands in either shape.
function firstMade(what, makers) {
  const errors = [];
  for (const make of makers) {
    try {
      return make();
    } catch (err) {
      errors.push(err.message);
    }
  }
  throw new Error(`${what}: no known constructor shape worked (${errors.join('; ')})`);
}

// The @fastify/rate-limit store: the plugin makes it with its options, and
// calls incr(key, callback, timeWindow, max) per request; the request
// passes while current is within max.
contender('fw_fastify', 'fixed_window, @fastify/rate-limit store (`incr`)', async () => {
  const fastify = packageFile('fastify.cjs');
  if (!fastify) return { skip: 'lib/fastify.cjs does not exist yet' };
  const Store = fastify.fastifyStore(await newClient(), { name: 'bench_fastify' });
  const store = new Store({ timeWindow: WINDOW_MS, max: LIMIT });
  const incr = (key) => new Promise((resolve, reject) => {
    store.incr(key, (err, answer) => (err ? reject(err) : resolve(answer.current <= LIMIT)), WINDOW_MS, LIMIT);
  });
  return { check: incr };
});

// rate-limiter-flexible's consume: resolves when admitted, rejects with a
// RateLimiterRes (not an Error) when denied.
function consumer(limiter) {
  return async (key) => {
    try {
      await limiter.consume(key);
      return true;
    } catch (answer) {
      if (answer instanceof Error) throw answer;
      return false;
    }
  };
}

contender('fw_flexible', 'fixed_window, rate-limiter-flexible adapter (`consume`)', async () => {
  const flexible = packageFile('flexible.cjs');
  if (!flexible) return { skip: 'lib/flexible.cjs does not exist yet' };
  const client = await newClient();
  const options = { keyPrefix: 'bench_flexible', points: LIMIT, duration: WINDOW_MS / 1000 };
  const limiter = firstMade('RateLimiterFixedWindow', [
    () => new flexible.RateLimiterFixedWindow({ ...options, client }),
    () => new flexible.RateLimiterFixedWindow(client, options),
    () => new flexible.RateLimiterFixedWindow({ ...options, storeClient: client }),
    () => new flexible.RateLimiterFixedWindow({ ...options, storeClient: pool }),
  ]);
  return { check: consumer(limiter) };
});

// rate-limiter-flexible's RateLimiterPostgres on the same pool.  It creates
// its table at construction; the unlogged contender's table is then made
// unlogged by hand.
function rateLimiterPostgres(tableName) {
  return async () => {
    const { RateLimiterPostgres } = require('rate-limiter-flexible');
    const limiter = await new Promise((resolve, reject) => {
      const made = new RateLimiterPostgres({
        storeClient: pool, points: LIMIT, duration: WINDOW_MS / 1000, ...(tableName ? { tableName } : {}),
      }, (err) => (err ? reject(err) : resolve(made)));
    });
    if (tableName) await pool.query(`ALTER TABLE "${tableName}" SET UNLOGGED`);
    return { check: consumer(limiter) };
  };
}
contender('rlflx', '`RateLimiterPostgres` (rate-limiter-flexible), its default table', rateLimiterPostgres(undefined));
contender('rlflx_unlogged', '`RateLimiterPostgres`, its table made `UNLOGGED`', rateLimiterPostgres('rlflx_unlogged'));

// @acpr/rate-limit-postgresql's express-rate-limit store.  It makes a pool
// of its own from the connection settings (the same size as the others')
// and migrates its schema in the background: the bench waits for the last
// migration before it starts.
contender('acpr', '`@acpr/rate-limit-postgresql` (express-rate-limit store, `increment`)', async () => {
  const { PostgresStore } = require('@acpr/rate-limit-postgresql');
  const migrations = require('node:fs').readdirSync(
    path.join(path.dirname(require.resolve('@acpr/rate-limit-postgresql')), 'migrations'),
  ).length;
  const store = new PostgresStore({ ...connection, max: POOL_SIZE }, 'bench_acpr');
  await waitFor(async () => {
    const { rows } = await pool.query("SELECT to_regclass('public.migrations') IS NOT NULL AS made");
    if (!rows[0].made) return false;
    return (await pool.query('SELECT count(*)::int AS n FROM public.migrations')).rows[0].n >= migrations;
  });
  store.init({ windowMs: WINDOW_MS, limit: LIMIT });
  return { check: async (key) => (await store.increment(key)).totalHits <= LIMIT, close: () => store.pool.end() };
});

contender('memory', 'express-rate-limit `MemoryStore` (`increment`, in the process)', async () => {
  const { MemoryStore } = require('express-rate-limit');
  const store = new MemoryStore();
  store.init({ windowMs: WINDOW_MS, limit: LIMIT });
  return { check: async (key) => (await store.increment(key)).totalHits <= LIMIT, close: () => store.shutdown() };
}, { limiter: 'memory' });

async function waitFor(condition, { tries = 300 } = {}) {
  for (let i = 0; i < tries; i += 1) {
    if (await condition()) return;
    await new Promise((resolve) => { setTimeout(resolve, 100); });
  }
  throw new Error('timed out waiting for the store to be ready');
}

// One run: `checks` checks of random keys among KEYS under `prefix`,
// IN_FLIGHT at a time.  Resolves to { perSecond, p50, p99, admitted, errors }.
async function run(check, prefix, checks) {
  const keys = Array.from({ length: checks }, () => `${prefix}${Math.floor(Math.random() * KEYS)}`);
  const latencies = new Float64Array(checks);
  let next = 0;
  let admitted = 0;
  let errors = 0;
  let firstError = null;
  async function worker() {
    while (next < checks) {
      const i = next;
      next += 1;
      const t0 = process.hrtime.bigint();
      try {
        if (await check(keys[i])) admitted += 1;
      } catch (err) {
        errors += 1;
        firstError ??= err;
      }
      latencies[i] = Number(process.hrtime.bigint() - t0) / 1e6;
    }
  }
  const server0 = serverCpu();
  const node0 = nodeCpu();
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const nodeMicros = (nodeCpu() - node0) / checks;
  const server1 = serverCpu();
  latencies.sort();
  return {
    perSecond: checks / seconds,
    nodeMicros,
    serverMicros: server0 === null ? null : (server1 - server0) / checks,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    admitted,
    errors,
    firstError,
  };
}

function percentile(sorted, share) {
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * share) - 1)];
}

// Exactness: HITS checks of one key, all started at once (the pool runs
// POOL_SIZE of them at a time); how many were admitted.
async function exactness(check, key) {
  const answers = await Promise.allSettled(Array.from({ length: HITS }, () => check(key)));
  const failed = answers.filter((answer) => answer.status === 'rejected');
  return {
    admitted: answers.filter((answer) => answer.status === 'fulfilled' && answer.value).length,
    errors: failed.length,
    firstError: failed[0]?.reason ?? null,
  };
}

// A dependency's version, from its package.json (which not every package
// exports): the nearest one above its main file.
function versionOf(name) {
  let dir = path.dirname(require.resolve(name));
  while (!existsSync(path.join(dir, 'package.json')) || require(path.join(dir, 'package.json')).name !== name) {
    dir = path.dirname(dir);
  }
  return require(path.join(dir, 'package.json')).version;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

async function main() {
  await findPostmaster();
  const ready = [];
  for (const each of contenders) {
    try {
      const made = await each.setup();
      if (made.skip) {
        log(`${each.id}: skipped, ${made.skip}`);
        each.skip = made.skip;
      } else {
        Object.assign(each, made, { samples: [], errors: 0, firstError: null });
        ready.push(each);
      }
    } catch (err) {
      log(`${each.id}: setup failed: ${err.stack ?? err}`);
      each.skip = `setup failed: ${err.message}`;
    }
  }

  log(`warming up ${ready.length} contenders, ${WARMUP_CHECKS} checks each`);
  for (const each of ready) await run(each.check, `${TAG}.w.${each.id}.`, WARMUP_CHECKS);

  for (let round = 0; round < ROUNDS; round += 1) {
    // Rotate the order: each contender runs early in one round, late in another.
    const order = ready.map((_, i) => ready[(i + round) % ready.length]);
    for (const each of order) {
      const result = await run(each.check, `${TAG}.r${round}.${each.id}.`, CHECKS);
      each.samples.push(result);
      each.errors += result.errors;
      each.firstError ??= result.firstError;
      log(`round ${round + 1} of ${ROUNDS}, ${each.id}: ${result.perSecond.toFixed(0)} checks/s, `
        + `p50 ${result.p50.toFixed(3)} ms, p99 ${result.p99.toFixed(3)} ms, ${result.admitted} admitted, `
        + `CPU per check: Node ${result.nodeMicros.toFixed(1)} µs, server ${result.serverMicros?.toFixed(1)} µs`
        + (result.errors ? `, ${result.errors} errors (${result.firstError?.message})` : ''));
    }
  }

  // Exactness of the database-backed limiters.  MemoryStore's is not
  // measured so: its increment answers with its own counter object, which
  // 1,000 increments started in one tick have all moved before any reads it.
  for (const each of ready.filter((contender) => contender.limiter === 'database')) {
    const answers = [];
    for (let round = 0; round < ROUNDS; round += 1) answers.push(await exactness(each.check, `${TAG}.hot${round}.${each.id}`));
    each.exact = answers;
    log(`exactness, ${each.id}: ${answers.map((a) => a.admitted).join(', ')} of ${HITS} admitted`
      + (answers.some((a) => a.errors) ? `, errors: ${answers.map((a) => a.errors).join(', ')}` : ''));
  }
  for (const each of ready) await each.close?.();
  await pool.end();

  const markdown = await table(ready);
  process.stdout.write(markdown);
  if (process.env.BENCH_NODE_OUT) writeFileSync(process.env.BENCH_NODE_OUT, markdown);
  log(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

const fmt = (value, digits) => value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

async function table(ready) {
  const medians = new Map(ready.map((each) => [each.id, {
    perSecond: median(each.samples.map((s) => s.perSecond)),
    p50: median(each.samples.map((s) => s.p50)),
    p99: median(each.samples.map((s) => s.p99)),
    nodeMicros: median(each.samples.map((s) => s.nodeMicros)),
    serverMicros: each.samples[0].serverMicros === null ? null : median(each.samples.map((s) => s.serverMicros)),
  }]));
  const ratio = (id, base) => (medians.has(id) && medians.has(base)
    ? (medians.get(id).perSecond / medians.get(base).perSecond).toFixed(2) : '');
  const versions = ['pg', 'express-rate-limit', 'rate-limiter-flexible', '@acpr/rate-limit-postgresql']
    .map((name) => `${name} ${versionOf(name)}`).join(', ');
  // The server's version, on a connection of its own: the pool has ended.
  const client = new pg.Client(connection);
  await client.connect();
  const setting = async (name) => (await client.query(`SELECT current_setting('${name}') AS value`)).rows[0].value;
  const server = await setting('server_version');
  const durability = `fsync ${await setting('fsync')}, synchronous_commit ${await setting('synchronous_commit')}`;
  await client.end();

  const lines = [];
  lines.push('## Node.js: fixed-window-pg beside the limiters Node applications use (bench/node)', '');
  lines.push(`${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; ${os.cpus().length} cores `
    + `(${os.cpus()[0]?.model.trim()}), ${Math.round(os.totalmem() / 2 ** 30)} GiB; PostgreSQL ${server} (${durability}); `
    + `Node ${process.version}; ${versions}. One Node process, one \`pg.Pool\` of ${POOL_SIZE} on the Unix socket; `
    + `${fmt(CHECKS, 0)} checks over ${fmt(KEYS, 0)} random keys (fresh keys each round), limit ${LIMIT} in `
    + `${WINDOW_MS / 1000} s, ${IN_FLIGHT} in flight; median of ${ROUNDS} interleaved rounds; client and server share the cores. `
    + `CPU µs per check: the Node process's (\`process.cpuUsage\`) and the server's, all its processes' (/proc), medians; `
    + `on ${os.cpus().length} cores the two bound the checks per second together, and the Node process alone at 1,000,000 / its µs. `
    + `Exactness: ${fmt(HITS, 0)} hits on one key at once, limit ${LIMIT}, one try a round (each round's count).`, '');
  lines.push('| contender | checks/s | p50 ms | p99 ms | x `SELECT 1` | x prepared `SELECT 1` | x `RateLimiterPostgres` '
    + `| CPU µs per check, Node | CPU µs per check, server | admitted of ${fmt(HITS, 0)} on one key |`);
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const each of contenders) {
    if (each.skip) {
      lines.push(`| ${each.label} | skipped: ${each.skip} | | | | | | | | |`);
      continue;
    }
    const m = medians.get(each.id);
    let exact = each.limiter === 'memory' ? 'not measured (in the process)' : '';
    if (each.exact) {
      // Every round's count: a burst that straddles the end of a window may
      // rightly admit twice the limit, once in each window.
      exact = each.exact.map((a) => a.admitted).join(', ');
      const errors = each.exact.reduce((sum, a) => sum + a.errors, 0);
      if (errors) exact += ` (${errors} errors: ${each.exact.find((a) => a.firstError).firstError.message})`;
    }
    const errors = each.errors ? ` (${each.errors} errors: ${each.firstError?.message})` : '';
    lines.push(`| ${each.label} | ${fmt(m.perSecond, 0)}${errors} | ${m.p50.toFixed(2)} | ${m.p99.toFixed(2)} | `
      + `${ratio(each.id, 'select1')} | ${ratio(each.id, 'select1_prepared')} | ${ratio(each.id, 'rlflx')} | `
      + `${m.nodeMicros.toFixed(0)} | ${m.serverMicros === null ? '' : m.serverMicros.toFixed(0)} | ${exact} |`);
  }
  lines.push('');
  return `${lines.join('\n')}\n`;
}

main().catch((err) => {
  log(err.stack ?? String(err));
  process.exit(1);
});
