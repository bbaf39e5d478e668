// An HTTP service limited by fixed_window, on Node's http module, the pg
// driver's connection pool, and this repository's Node.js package
// fixed-window-pg (clients/node), which makes fixed_window's calls and
// tells its failures apart by class.
//
//   GET  /hello    one call of the policy "api" per request, keyed by the
//                  client the X-Api-Key header names (a key of the table
//                  api_keys), else by the client's address: 200, or 429
//                  with Retry-After; both with the RateLimit headers.  An
//                  unknown key is a 401, after spending a token of the
//                  address's quota, so that keys cannot be guessed freely
//   POST /signup   {"email": "..."} inserts a row; the table's trigger
//                  fw_trigger('signup', 'ip') refuses the fourth signup of an
//                  address in a day with SQLSTATE RL429, answered as 429
//
// What a copy of it must keep:
//
// - The database may restart, or end a connection, at any time, idle in
//   the pool or checked out with requests in flight: every connection's
//   errors are handled (an 'error' event nobody listens to ends Node), and
//   while the database cannot be reached requests get 503 with
//   Retry-After, then 200 again once it is back.  A connection that failed
//   is never reused.
// - Every statement has a deadline (STATEMENT_TIMEOUT_MS), enforced by the
//   server, which cancels the statement, and set inside each transaction
//   (SET LOCAL) so that it holds behind a transaction pooler such as
//   pgbouncer too: a pooler refuses a startup parameter it does not know or
//   drops it, and a session's SET would stay on a server connection other
//   clients use next.  A call held up (behind a lock, say) is cancelled
//   before it spends, and the request answers 503.  A call that has spent
//   has answered: it takes microseconds.
// - A failure is a 503 with Retry-After only when the database cannot
//   answer now (down, restarting, closed to connections by its admin, out
//   of connections, out of time); a setting that does not fit the database
//   or the pooler (a database, role or schema that is missing, a privilege
//   not granted, a parameter the pooler refuses) is a 500 and the log says
//   "database configuration error": retrying would not help.  Either way
//   the log holds the server's message; a stack trace means a bug.
// - X-Forwarded-For counts only from proxies named in TRUSTED_PROXIES
//   (address.js): otherwise every forged address would get its own quota.
//   An entry it cannot read stops the service at startup: ignored, it
//   would give every client behind that proxy the proxy's quota.  An IPv6
//   client is limited by its /64 network.
// - Whatever a client may choose freely is not a quota of its own: API keys
//   are checked (api_keys holds the SHA-256 digests of their UTF-8 bytes),
//   and the quota is the client's, "key:<client>", never the secret
//   itself; addresses are "ip:<address>", so that a key cannot be named
//   after someone's address.
// - A request body is read up to MAX_BODY_BYTES (413 beyond): an unbounded
//   one would end the process.
// - Bad input is a 4xx saying what is wrong; a failure is a 5xx saying
//   nothing of the internals (they go to the log).
// - SIGTERM or SIGINT ends it: no new connection is taken, the requests in
//   flight are answered, each answer closing its connection, and the
//   process exits 0 once the last is sent (1 if one takes longer than a
//   request may).
//
// Behind pgbouncer in transaction mode it runs unchanged, with pgbouncer's
// usual ignore_startup_parameters.  After PostgreSQL restarts, pgbouncer
// fails logins for server_login_retry seconds more (15 by default: the
// service answered 503 for 13 s after PostgreSQL was back); set it to 1.
//
// Settings: the usual PG* environment variables; HOST, the address to
// listen on (127.0.0.1; 0.0.0.0 or :: for every address of the host); PORT
// (0: any free one, printed at start); POOL_SIZE (8);
// STATEMENT_TIMEOUT_MS (2000); CONNECT_TIMEOUT_MS (2000); TRUSTED_PROXIES
// (addresses and networks such as 10.0.0.0/8, separated by commas or
// spaces).  A setting it cannot use stops it at startup, saying why (exit 2).
// With FW_TEST=1, a request's X-Test-Clock header sets fixed_window's debug
// clock for it (the service's tests use it to step past a window without
// sleeping; it needs a superuser), and GET /test/pool shows the pool's
// connections.  It is for tests only.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import http from 'node:http';
import net from 'node:net';
import pg from 'pg';
import {
  FixedWindow, FixedWindowError, fromDriver, FixedWindowUnavailableError, FixedWindowConfigurationError,
  FixedWindowPermissionError, FixedWindowUndefinedPolicyError,
} from 'fixed-window-pg';
import { addressKey, clientAddress, trustedProxies } from './address.js';

// A setting the service cannot use stops it before it listens: exit 2,
// saying why.
function refuse(message) {
  console.error(message);
  process.exit(2);
}

// A setting that is a whole number, or the default.
function setting(name, fallback) {
  const text = process.env[name] ?? String(fallback);
  if (!/^[0-9]+$/.test(text)) refuse(`${name} must be a whole number, not "${text}"`);
  return Number(text);
}

const statementTimeout = setting('STATEMENT_TIMEOUT_MS', 2000);
const connectTimeout = setting('CONNECT_TIMEOUT_MS', 2000);
const pool = new pg.Pool({
  max: setting('POOL_SIZE', 8),
  application_name: 'fixed-window-example',
  connectionTimeoutMillis: connectTimeout,
  idleTimeoutMillis: 30_000,
  // The server cancels a statement after statementTimeout (see BEGIN); if
  // the server cannot, the client stops waiting a second later.
  query_timeout: statementTimeout + 1000,
});
// A pooled connection the server ended while idle (a restart,
// pg_terminate_backend): the pool drops it and connects anew when needed.
// Without this handler Node would exit on the 'error' event.
pool.on('error', (err) => console.error('an idle database connection ended:', err.message));
// The pool listens to a connection's errors only while it is idle: one the
// server ends while a request holds it would emit an 'error' nobody
// handles, and Node would exit.  A new connection is even handed out from
// inside the handler of the data that made it ready, so that the server's
// ending it in the same data found no listener at all.  So every
// connection has a listener of its own from the start, which notes how it
// ended; the query running, or the next, fails too.
const ended = new WeakMap();
pool.on('connect', (client) => client.on('error', (err) => {
  if (!ended.has(client)) ended.set(client, err);
}));

// Every request is one transaction, which starts with its deadline.
const BEGIN = `BEGIN; SET LOCAL statement_timeout = ${statementTimeout}`;

// fixed_window's calls, by the package.  Each runs on the connection the
// request holds (the option connection), inside its transaction, so that
// the deadline and the test clock hold for it, and no call waits for a
// second connection of the pool; such a call is an unnamed statement,
// which a transaction pooler passes as it is.  At the first call the
// package looks up the extension's schema there too, whatever the
// search_path.
const limiter = new FixedWindow({ pool });

const testing = process.env.FW_TEST === '1';
let trusted;
try {
  trusted = trustedProxies(process.env.TRUSTED_PROXIES);
} catch (err) {
  refuse(err.message);
}
const host = process.env.HOST ?? '127.0.0.1';
if (!net.isIP(host)) refuse(`HOST must be an IPv4 or IPv6 address, not "${host}"`);
const port = setting('PORT', 8080);
const MAX_KEY_BYTES = 1024;
const MAX_BODY_BYTES = 16 * 1024;
const RETRY_UNAVAILABLE = '2';          // seconds, for 503

class BadRequest extends Error {}
class TooLarge extends Error {}

// What a failure means.  'unavailable': the database cannot answer now
// (it is down, restarting, refusing connections, closed to them by its
// admin, ended the connection, or the statement ran out of time), a 503.
// 'configuration': the service's settings do not fit the database or the
// pooler in front of it (a role, database or schema that is missing, the
// extension not installed, a privilege not granted, a policy not defined, a
// parameter refused), a 500 that retrying will not cure.  Anything else is
// undefined: a bug, a 500 with its stack logged.
//
// The package reads every error as fixed_window's calls fail, by class
// (fromDriver): the service's own statements (the transaction, the test
// clock, the key lookup, the signup) and logging in too.  A database closed
// to connections (ALLOW_CONNECTIONS false) is an outage its admin will end,
// as a restart is; a role without CONNECT on the database (42501) is
// configuration.  PgBouncer before 1.20 reports its own errors, and the
// server's at login, as 08P01 with the server's message, which the package
// reads as long as the server writes its messages in English (lc_messages).
function failure(err) {
  const known = fromDriver(err);
  if (known instanceof FixedWindowUnavailableError) return 'unavailable';
  if (known instanceof FixedWindowConfigurationError || known instanceof FixedWindowPermissionError
      || known instanceof FixedWindowUndefinedPolicyError) return 'configuration';
  return undefined;
}

// Runs fn(client) in a transaction on a pooled connection, with the
// deadline, and the request's test clock when there is one.
async function withDatabase(req, fn) {
  const clock = testing ? req.headers['x-test-clock'] : undefined;
  const client = await pool.connect();
  let broken;
  try {
    await client.query(BEGIN);
    if (clock !== undefined) await client.query("SELECT set_config('fixed_window.debug_now', $1, true)", [clock]);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    // After an ERROR the server reported, the connection rolls back and
    // serves again; after anything else (a FATAL, a connection lost, a
    // query the client stopped waiting for) its state is unknown.  The
    // package's error carries the driver's as its cause; one without a
    // cause is the package's own finding (the extension not installed),
    // on a sound connection.
    const driverError = err instanceof FixedWindowError ? err.cause : err;
    if (driverError === undefined || (driverError instanceof pg.DatabaseError && driverError.severity === 'ERROR')) {
      await client.query('ROLLBACK').catch((e) => { broken = e; });
    } else {
      broken = err;
    }
    throw err;
  } finally {
    client.release(ended.get(client) ?? broken);    // a connection that failed is not reused
  }
}

// The API key of a request, as the UTF-8 text it is; undefined when none.
// Node reads a header's bytes as Latin-1, one character each.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
function apiKeyOf(req) {
  const header = req.headers['x-api-key'];
  if (header === undefined) return undefined;
  const bytes = Buffer.from(header, 'latin1');
  if (bytes.length > MAX_KEY_BYTES) throw new BadRequest(`X-Api-Key must be at most ${MAX_KEY_BYTES} bytes`);
  try {
    return utf8.decode(bytes);
  } catch {
    throw new BadRequest('X-Api-Key must be UTF-8');
  }
}

// Once the service is stopping, every answer closes its connection: Node
// ends it as soon as the answer is sent, and no request follows there.
let stopping = false;
function send(res, status, headers, body) {
  res.writeHead(status, { ...headers, 'Content-Type': 'application/json', ...(stopping ? { Connection: 'close' } : {}) });
  res.end(JSON.stringify(body));
}

function retryAfter(headers) {
  return headers['Retry-After'] === undefined ? null : Number(headers['Retry-After']);
}

// The client an API key belongs to, or null for an unknown key.
const CLIENT = 'SELECT client FROM api_keys WHERE key_digest = sha256(convert_to($1, \'UTF8\'))';

async function hello(req, res) {
  const apiKey = apiKeyOf(req);
  const address = `ip:${addressKey(clientAddress(req, trusted))}`;
  const answer = await withDatabase(req, async (db) => {
    const client = apiKey === undefined ? null : (await db.query(CLIENT, [apiKey])).rows[0]?.client;
    const key = client == null ? address : `key:${client}`;
    // one call of the policy: all its windows at once, and the headers to send
    return { client, ...(await limiter.limitWindows('api', key, { connection: db })) };
  });
  const { client, ok, headers } = answer;
  if (!ok) send(res, 429, headers, { error: 'rate limit exceeded', retry_after: retryAfter(headers) });
  else if (apiKey !== undefined && client == null) send(res, 401, headers, { error: 'unknown API key' });
  else send(res, 200, headers, { hello: client ?? 'anonymous' });
}

async function signup(req, res, body) {
  const ip = addressKey(clientAddress(req, trusted));
  let email;
  try {
    ({ email } = JSON.parse(body));
  } catch {
    throw new BadRequest('the body must be JSON');
  }
  if (typeof email !== 'string' || email === '') throw new BadRequest('email is required');
  if (Buffer.byteLength(email) > MAX_KEY_BYTES)
    throw new BadRequest(`email must be at most ${MAX_KEY_BYTES} bytes`);
  try {
    const id = await withDatabase(req, async (db) =>
      (await db.query('INSERT INTO signups (email, ip) VALUES ($1, $2) RETURNING id', [email, ip])).rows[0].id);
    send(res, 201, {}, { id: Number(id) });
  } catch (err) {
    if (err.code !== 'RL429') throw err;
    // the trigger refused the row: tell the client when it may try again
    // what a call would answer now, spending nothing: the headers of a refusal
    const { headers } = await withDatabase(req, (db) => limiter.checkWindows('signup', ip, { connection: db }));
    send(res, 429, headers, { error: 'too many signups from this address', retry_after: retryAfter(headers) });
  }
}

// The path of a request's target, which HTTP/1.1 lets be a path
// ("/hello?x=1") or a whole URL ("http://service/hello").
function pathOf(req) {
  try {
    return new URL(req.url, 'http://service').pathname;
  } catch {
    throw new BadRequest('the request target is not a URL');
  }
}

const server = http.createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  });
  req.on('end', async () => {
    try {
      if (size > MAX_BODY_BYTES) throw new TooLarge();
      const body = Buffer.concat(chunks).toString();
      const path = pathOf(req);
      if (req.method === 'GET' && path === '/hello') await hello(req, res);
      else if (req.method === 'POST' && path === '/signup') await signup(req, res, body);
      else if (testing && req.method === 'GET' && path === '/test/pool')
        send(res, 200, {}, { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });
      else send(res, 404, {}, { error: 'not found' });
    } catch (err) {
      if (err instanceof BadRequest) return send(res, 400, {}, { error: err.message });
      if (err instanceof TooLarge)
        return send(res, 413, {}, { error: `the body must be at most ${MAX_BODY_BYTES} bytes` });
      const kind = failure(err);
      if (kind === 'unavailable') {
        console.error('database unavailable:', err.code ?? '', err.message);
        return send(res, 503, { 'Retry-After': RETRY_UNAVAILABLE }, { error: 'service unavailable' });
      }
      if (kind === 'configuration') {
        console.error('database configuration error (fix the settings; retrying will not help):',
          err.code ?? '', err.message);
      } else {
        console.error(err);
      }
      send(res, 500, {}, { error: 'internal error' });
    }
  });
});

// An idle connection stays open longer than proxies keep theirs (60 s for
// nginx and most load balancers), so that the proxy closes it first: with
// Node's 5 s, a request a proxy sends as the service closes the connection
// fails without an answer.
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;
function cannotListen(err) {
  console.error(`cannot listen on ${host} port ${port}: ${err.message}`);
  process.exit(1);
}
server.once('error', cannotListen);
server.listen(port, host, () => {
  server.off('error', cannotListen);
  if (String(trusted) !== '') console.log(`X-Forwarded-For counts from ${trusted}`);
  console.log(`listening on http://${net.isIPv6(host) ? `[${host}]` : host}:${server.address().port}`);
});

// SIGTERM or SIGINT: no new connection is taken, the idle ones are closed
// (server.close does so too from Node 19 on), and each request in flight
// is answered, closing its connection (send): the process ends as soon as
// the last is answered, or after as long as a request may take, cutting
// what is left.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    console.log(`stopping (${signal}): answering the requests in flight`);
    stopping = true;
    const deadline = connectTimeout + statementTimeout + 1000;
    setTimeout(() => {
      console.error(`requests still in flight ${deadline} ms after ${signal}: exiting without their answers`);
      process.exit(1);
    }, deadline).unref();
    server.close(() => pool.end().then(() => process.exit(0)));
    server.closeIdleConnections();
  });
}
