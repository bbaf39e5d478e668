// The database restarts, or ends the service's connections, while requests
// are in flight, again and again.  1.5's service exited in 3 of 4 such
// restarts with 50 requests in flight (an 'error' event of a connection
// checked out of the pool, which pg-pool does not listen to), and answered
// 500 to "Client has encountered a connection error and is not queryable";
// a listener added by the request that checks a connection out still
// missed, in about one round in ten of ended sessions, the error of a new
// connection ended in the same data that made it ready.
// Here every request must be answered 200, or 503 with Retry-After, the
// service must answer 200 again once the database is back, and no
// connection may leak: in the end the pool holds only idle connections,
// each one a session on the server (or a client of the pooler).
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T0, hello, pgCtl, poolerAdmin, pooler, service, sql, until } from './helpers.js';

const ROUNDS = 20;              // half of them restart the database, half end its sessions
const IN_FLIGHT = 50;
const POOL_SIZE = 8;            // the service's default

let next = 0;
// A request of its own address each time: 200 unless the database fails.
const request = () => {
  const n = next++;
  return hello(undefined, T0, `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`);
};

// IN_FLIGHT clients, each sending a request as soon as the last was
// answered, until stop(); what each was answered, or how it failed (a
// client that gets no answer stops: the service died, or dropped it).
function load() {
  const answers = [];
  let stopping = false;
  let running = IN_FLIGHT;
  const client = async () => {
    while (!stopping) {
      try {
        const r = await request();
        answers.push(`${r.status}${r.status === 503 ? ` Retry-After: ${r.headers.get('retry-after')}` : ''}`);
      } catch (err) {
        answers.push(`no answer: ${err.cause?.code ?? err.message}`);
        break;
      }
    }
    running--;
  };
  const clients = Array.from({ length: IN_FLIGHT }, client);
  const ok = () => answers.filter((a) => a === '200').length;
  return {
    answers,
    // waits until n more requests than now were answered 200
    more: (n, what) => {
      const goal = ok() + n;
      return until(what, 30, () => {
        if (running === 0) throw new Error(`no request is answered any more: ${JSON.stringify(tally(answers))}`);
        return ok() >= goal ? true : undefined;
      });
    },
    stop: async () => { stopping = true; await Promise.all(clients); },
  };
}

// How many answers of each kind.
const tally = (answers) => answers.reduce((t, a) => ({ ...t, [a]: (t[a] ?? 0) + 1 }), {});

// The service's sessions on the server: behind a pooler, its clients there.
async function sessions() {
  if (pooler === 'pgbouncer') {
    return (await poolerAdmin('SHOW CLIENTS')).filter((r) => r.application_name === 'fixed-window-example').length;
  }
  const rows = await sql(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'fixed-window-example'`);
  return Number(rows[0].n);
}

const terminate = () => sql(`SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity
                             WHERE application_name = 'fixed-window-example'`);

test(`${ROUNDS} rounds of a restart or of ended sessions, ${IN_FLIGHT} requests in flight: every answer a 200 or a 503 with Retry-After, 200 after, no connection leaked`, async () => {
  for (let round = 1; round <= ROUNDS; round++) {
    const restart = round % 2 === 1;
    const traffic = load();
    try {
      await traffic.more(IN_FLIGHT, `200s before round ${round}`);
      if (restart) {
        await pgCtl('stop', '-m', 'fast');
        try {
          const down = await request();
          assert.equal(down.status, 503, `round ${round}: while the database is down`);
          assert.equal(down.headers.get('retry-after'), '2');
          assert.deepEqual(down.body, { error: 'service unavailable' });
        } finally {
          await pgCtl('start');
        }
      } else {
        for (let i = 0; i < 3; i++) await terminate();
      }
      await traffic.more(IN_FLIGHT, `200s after round ${round}`);     // once the database is back
    } finally {
      await traffic.stop();
    }
    const kinds = tally(traffic.answers);
    console.log(`round ${round} (${restart ? 'restart' : 'sessions ended'}): ${JSON.stringify(kinds)}`);
    for (const kind of Object.keys(kinds)) {
      assert.ok(['200', '503 Retry-After: 2'].includes(kind), `round ${round}: ${JSON.stringify(kinds)}`);
    }
  }

  // Quiet: every connection of the pool idle, and each one a session.
  const pool = await until('the pool to be idle', 10, async () => {
    const p = await (await fetch(`${service}/test/pool`)).json();
    return p.waiting === 0 && p.idle === p.total ? p : undefined;
  });
  assert.ok(pool.total <= POOL_SIZE, `the pool holds ${pool.total} connections`);
  await until(`${pool.total} sessions of the service, as many as its pool holds`, 10,
    async () => ((await sessions()) === pool.total ? true : undefined));
  // and it serves
  const again = await Promise.all(Array.from({ length: IN_FLIGHT }, request));
  assert.deepEqual(tally(again.map((r) => String(r.status))), { 200: IN_FLIGHT });
});
