// An HTTP service limited by fixed_window, on Node's http module and the
// pg driver's connection pool.
//
//   GET  /hello    one call of the policy "api" per request, keyed by the
//                  X-Api-Key header (else the client's address): 200, or
//                  429 with Retry-After; both with the RateLimit headers
//   POST /signup   {"email": "..."} inserts a row; the table's trigger
//                  fw_trigger('signup', 'ip') refuses the fourth signup of an
//                  address in a day with SQLSTATE RL429, answered as 429
//
// Connection settings come from the usual PG* environment variables; PORT
// chooses the port (0: any free one, printed at start).  With
// FW_TEST_CLOCK=1, a request's X-Test-Clock header sets fixed_window's
// debug clock for it: the service's tests use it to step past a window
// without sleeping.  It needs a superuser and is for tests only.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import http from 'node:http';
import pg from 'pg';

const pool = new pg.Pool({ max: Number(process.env.POOL_SIZE ?? 8) });
const testClock = process.env.FW_TEST_CLOCK === '1';

// Runs fn(client) on a pooled connection, in a transaction carrying the
// request's test clock when there is one.
async function withDatabase(req, fn) {
  const clock = testClock ? req.headers['x-test-clock'] : undefined;
  const client = await pool.connect();
  try {
    if (!clock) return await fn(client);
    await client.query('BEGIN');
    await client.query("SELECT set_config('fixed_window.debug_now', $1, true)", [clock]);
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    if (clock) await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

function clientAddress(req) {
  const forwarded = req.headers['x-forwarded-for'];
  return forwarded ? forwarded.split(',')[0].trim() : req.socket.remoteAddress;
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

async function hello(req, res) {
  const key = req.headers['x-api-key'] ?? clientAddress(req);
  const { ok, headers } = await withDatabase(req, async (db) =>
    (await db.query(LIMIT, ['api', key])).rows[0]);
  if (ok) send(res, 200, headers, { hello: key });
  else send(res, 429, headers, { error: 'rate limit exceeded', retry_after: Number(headers['Retry-After']) });
}

async function signup(req, res, body) {
  const ip = clientAddress(req);
  let email;
  try {
    ({ email } = JSON.parse(body));
  } catch {
    return send(res, 400, {}, { error: 'the body must be JSON' });
  }
  try {
    const id = await withDatabase(req, async (db) =>
      (await db.query('INSERT INTO signups (email, ip) VALUES ($1, $2) RETURNING id', [email ?? null, ip])).rows[0].id);
    send(res, 201, {}, { id: Number(id) });
  } catch (err) {
    if (err.code === 'RL429') {
      // the trigger refused the row: tell the client when it may try again
      const { headers } = await withDatabase(req, async (db) => (await db.query(CHECK, ['signup', ip])).rows[0]);
      return send(res, 429, headers, { error: err.message, retry_after: Number(headers['Retry-After']) });
    }
    if (err.code === '23502') return send(res, 400, {}, { error: 'email is required' });
    throw err;
  }
}

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => { body += chunk; });
  req.on('end', async () => {
    try {
      const path = new URL(req.url, 'http://service').pathname;
      if (req.method === 'GET' && path === '/hello') await hello(req, res);
      else if (req.method === 'POST' && path === '/signup') await signup(req, res, body);
      else send(res, 404, {}, { error: 'not found' });
    } catch (err) {
      console.error(err);
      send(res, 500, {}, { error: 'internal error', code: err.code });
    }
  });
});

server.listen(Number(process.env.PORT ?? 8080), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => server.close(() => pool.end().then(() => process.exit(0))));
}
