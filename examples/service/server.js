// An HTTP service limited by fixed_window, on Node's http module and the
// pg driver's connection pool.
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
// - The database may restart, or end a pooled connection, at any time: the
//   pool's errors are handled, and while the database cannot be reached
//   requests get 503 with Retry-After, then 200 again once it is back.
// - Every query has a deadline (STATEMENT_TIMEOUT_MS, enforced by the
//   server, which cancels the statement), shorter than clients wait: a call
//   held up (behind a lock, say) is cancelled before it spends, and the
//   request answers 503.  A call that has spent has answered: it takes
//   microseconds.
// - X-Forwarded-For counts only from proxies named in TRUSTED_PROXIES
//   (address.js): otherwise every forged address would get its own quota.
//   An IPv6 client is limited by its /64 network.
// - Whatever a client may choose freely is not a quota of its own: API keys
//   are checked (api_keys holds their SHA-256 digests), and the quota is
//   the client's, "key:<client>", never the secret itself; addresses are
//   "ip:<address>", so that a key cannot be named after someone's address.
// - A request body is read up to MAX_BODY_BYTES (413 beyond): an unbounded
//   one would end the process.
// - Bad input is a 4xx saying what is wrong; a failure is a 5xx saying
//   nothing of the internals (they go to the log).
//
// Settings: the usual PG* environment variables; PORT (0: any free one,
// printed at start); POOL_SIZE; STATEMENT_TIMEOUT_MS (2000);
// CONNECT_TIMEOUT_MS (2000); TRUSTED_PROXIES (comma-separated addresses).
// With FW_TEST_CLOCK=1, a request's X-Test-Clock header sets fixed_window's
// debug clock for it: the service's tests use it to step past a window
// without sleeping.  It needs a superuser and is for tests only.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import http from 'node:http';
import pg from 'pg';
import { addressKey, clientAddress, trustedProxies } from './address.js';

const statementTimeout = Number(process.env.STATEMENT_TIMEOUT_MS ?? 2000);
const pool = new pg.Pool({
  max: Number(process.env.POOL_SIZE ?? 8),
  application_name: 'fixed-window-example',
  connectionTimeoutMillis: Number(process.env.CONNECT_TIMEOUT_MS ?? 2000),
  idleTimeoutMillis: 30_000,
  statement_timeout: statementTimeout,          // the server cancels the statement
  query_timeout: statementTimeout + 1000,       // and if the server cannot, the client stops waiting
});
// A pooled connection the server ended while idle (a restart,
// pg_terminate_backend): the pool drops it and connects anew when needed.
// Without this handler Node would exit on the 'error' event.
pool.on('error', (err) => console.error('an idle database connection ended:', err.message));

const testClock = process.env.FW_TEST_CLOCK === '1';
const trusted = trustedProxies(process.env.TRUSTED_PROXIES);
const MAX_KEY_BYTES = 1024;
const MAX_BODY_BYTES = 16 * 1024;
const RETRY_UNAVAILABLE = '2';          // seconds, for 503

class BadRequest extends Error {}
class TooLarge extends Error {}

// Whether an error means the database cannot answer now: it is down,
// restarting, refusing connections, or the statement ran out of time.
function unavailable(err) {
  const code = String(err.code ?? '');
  return code.startsWith('08')                                  // connection exceptions
    || ['57P01', '57P02', '57P03', '57014', '53300'].includes(code) // shutdown, crash, starting, cancelled, too many connections
    || ['ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'EPIPE', 'ETIMEDOUT'].includes(code)
    || /Connection terminated|timeout exceeded|Query read timeout/i.test(err.message ?? '');
}

// Runs fn(client) on a pooled connection, in a transaction carrying the
// request's test clock when there is one.
async function withDatabase(req, fn) {
  const clock = testClock ? req.headers['x-test-clock'] : undefined;
  const client = await pool.connect();
  let broken;
  try {
    if (!clock) return await fn(client);
    await client.query('BEGIN');
    await client.query("SELECT set_config('fixed_window.debug_now', $1, true)", [clock]);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    broken = unavailable(err) ? err : undefined;
    if (clock) await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release(broken);             // a connection that failed is not reused
  }
}

function send(res, status, headers, body) {
  res.writeHead(status, { ...headers, 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

// One call of a policy: all its windows at once, and the headers to send.
const LIMIT = `
  SELECT bool_and(w.ok OR w.shadow) AS ok, fw_headers($1, array_agg(w)) AS headers
  FROM fw_limit_windows($1, $2) AS w`;
// What a call would answer now, spending nothing: the headers of a refusal.
const CHECK = `
  SELECT fw_headers($1, ARRAY(SELECT w FROM fw_check_windows($1, $2) AS w)) AS headers`;

function retryAfter(headers) {
  return headers['Retry-After'] === undefined ? null : Number(headers['Retry-After']);
}

// The client an API key belongs to, or null for an unknown key.
const CLIENT = 'SELECT client FROM api_keys WHERE key_digest = sha256(convert_to($1, \'UTF8\'))';

async function hello(req, res) {
  const apiKey = req.headers['x-api-key'];
  if (apiKey !== undefined && Buffer.byteLength(apiKey) > MAX_KEY_BYTES)
    throw new BadRequest(`X-Api-Key must be at most ${MAX_KEY_BYTES} bytes`);
  const address = `ip:${addressKey(clientAddress(req, trusted))}`;
  const answer = await withDatabase(req, async (db) => {
    const client = apiKey === undefined ? null : (await db.query(CLIENT, [apiKey])).rows[0]?.client;
    const key = client == null ? address : `key:${client}`;
    return { client, ...(await db.query(LIMIT, ['api', key])).rows[0] };
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
    const { headers } = await withDatabase(req, async (db) => (await db.query(CHECK, ['signup', ip])).rows[0]);
    send(res, 429, headers, { error: 'too many signups from this address', retry_after: retryAfter(headers) });
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
      const path = new URL(req.url, 'http://service').pathname;
      if (req.method === 'GET' && path === '/hello') await hello(req, res);
      else if (req.method === 'POST' && path === '/signup') await signup(req, res, body);
      else send(res, 404, {}, { error: 'not found' });
    } catch (err) {
      if (err instanceof BadRequest) return send(res, 400, {}, { error: err.message });
      if (err instanceof TooLarge)
        return send(res, 413, {}, { error: `the body must be at most ${MAX_BODY_BYTES} bytes` });
      if (unavailable(err)) {
        console.error('database unavailable:', err.code ?? '', err.message);
        return send(res, 503, { 'Retry-After': RETRY_UNAVAILABLE }, { error: 'service unavailable' });
      }
      console.error(err);
      send(res, 500, {}, { error: 'internal error' });
    }
  });
});

server.listen(Number(process.env.PORT ?? 8080), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => server.close(() => pool.end().then(() => process.exit(0))));
}
