// What the service's tests share: requests as a client sends them, SQL on
// the database as a superuser, the server's pg_ctl, and more instances of
// the service.  The harness (examples/service/test.sh) starts PostgreSQL with
// the schema and the service with FW_TEST=1, and passes its address in
// SERVICE_URL; SERVICE_PGHOST and SERVICE_PGPORT say where the service
// connects (PostgreSQL, or a pooler in front of it), the usual PG* variables
// where the tests do (PostgreSQL itself).
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import { execFile, spawn } from 'node:child_process';
import { appendFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';

export const service = process.env.SERVICE_URL;
export const pooler = process.env.POOLER ?? '';       // '' or 'pgbouncer'
export const T0 = Date.parse('2026-05-01T10:00:00Z');

export const clock = (ms) => new Date(ms).toISOString();

// GET /hello with an API key (or none: undefined), from the address a
// proxy forwards (or from the test's own, 127.0.0.1), at a time of the
// debug clock.  A header's value is a string of bytes, one character each.
export async function hello(key, at, forwarded, url = service) {
  const headers = { 'X-Test-Clock': clock(at) };
  if (key !== undefined) headers['X-Api-Key'] = key;
  if (forwarded !== undefined) headers['X-Forwarded-For'] = forwarded;
  const res = await fetch(`${url}/hello`, {
    headers,
    signal: AbortSignal.timeout(10_000),       // a client that gives up, as clients do
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

// GET url with Node's http module, for what fetch does not let a test
// choose: the connections (an http.Agent of the caller's, which keeps them
// alive), the local address to connect from.  Resolves to the status, the
// headers and the body parsed.
export function get(url, { headers = {}, agent, localAddress } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent, localAddress, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: JSON.parse(body) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
  });
}

// What the service answers to the bytes given, sent on a connection of
// their own, as the text it sends until it closes the connection.
export function raw(url, bytes) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port) });
    let answer = '';
    socket.setEncoding('latin1');
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (chunk) => { answer += chunk; });
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
    socket.write(bytes, 'latin1');
  });
}

// SQL on the service's database, as a superuser, on a connection of its own.
export async function sql(text, params) {
  const db = new pg.Client();
  await db.connect();
  try {
    return (await db.query(text, params)).rows;
  } finally {
    await db.end();
  }
}

// What a client of the policy "api" holds at a time, spending nothing.
export async function tokens(key, at) {
  const rows = await sql(`SELECT set_config('fixed_window.debug_now', $2, false),
                                 (fw_check('api', $1, 0)).remaining`, [key, clock(at)]);
  return Number(rows[0].remaining);
}

// Registers API keys, each the key of a client of the same name.
export async function addKeys(keys) {
  await sql(`INSERT INTO api_keys SELECT sha256(convert_to(k, 'UTF8')), k FROM unnest($1::text[]) AS k
             ON CONFLICT DO NOTHING`, [keys]);
}

// A command of the pooler's admin console (behind pgbouncer): its rows.
export async function poolerAdmin(command) {
  const admin = new pg.Client({ host: process.env.SERVICE_PGHOST, port: process.env.SERVICE_PGPORT, database: 'pgbouncer' });
  await admin.connect();
  try {
    return (await admin.query(command)).rows;
  } finally {
    await admin.end();
  }
}

// A login role of the service's database server that the service may log
// in as, behind pgbouncer too: the pooler lets in the roles its auth_file
// names, and reads it again on RELOAD.
export async function createLoginRole(name) {
  await sql(`CREATE ROLE "${name}" LOGIN`);
  if (pooler !== 'pgbouncer') return;
  const file = (await poolerAdmin('SHOW CONFIG')).find((row) => row.key === 'auth_file').value;
  await appendFile(file, `"${name}" ""\n`);
  await poolerAdmin('RELOAD');
}

// pg_ctl on the service's database server, which the harness started.
export async function pgCtl(...args) {
  const data = process.env.PG_DATA;
  if (args[0] === 'start') args.push('-l', path.join(path.dirname(data), 'server.log'));
  await promisify(execFile)('pg_ctl', ['-D', data, '-w', ...args]);
}

// Polls fn() until it returns a value that is not undefined, for at most
// `seconds`; fails saying what it waited for.
export async function until(what, seconds, fn) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`waited ${seconds} s for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// Another instance of the service with the environment given, on a free
// port, connecting where the harness's instance does: the child process,
// its log so far (log()) and how it ended (a promise of its exit code and
// signal).
function spawnService(env) {
  const server = fileURLToPath(new URL('../server.js', import.meta.url));
  const child = spawn(process.execPath, [server], {
    env: {
      ...process.env, PGHOST: process.env.SERVICE_PGHOST, PGPORT: process.env.SERVICE_PGPORT,
      PORT: '0', FW_TEST: '1', ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.on('data', (chunk) => { log += chunk; });
  child.stderr.on('data', (chunk) => { log += chunk; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, log: () => log, exited };
}

// Starts another instance (spawnService) and waits until it listens.
// Returns its url, its log so far (log()), kill(signal), exited (a promise
// of its exit code and signal) and stop(), which sends SIGTERM and waits
// for it to end.
export async function startService(env) {
  const { child, log, exited } = spawnService(env);
  const url = await until('the service to listen', 10, () =>
    log().match(/^listening on (\S+)/m)?.[1] ?? (child.exitCode !== null ? Promise.reject(new Error(log())) : undefined));
  return {
    url,
    log,
    exited,
    kill: (signal) => child.kill(signal),
    stop: async () => { child.kill('SIGTERM'); await exited; },
  };
}

// An instance whose settings are refused: it must end by itself, before
// listening, within 10 s.  Returns its exit code and its log.
export async function refusedService(env) {
  const { child, log, exited } = spawnService(env);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  const { code } = await exited;
  clearTimeout(timer);
  return { code, log: log() };
}
