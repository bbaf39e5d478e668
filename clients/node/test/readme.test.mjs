// The READMEs' JavaScript runs as written: each block marked
// "<!-- test: node ... -->" in the project's README (its Node.js section)
// and in the package's, saved as a module in the package's directory (where
// 'fixed-window-pg' names the package itself) and run with the test
// cluster's PG* variables, at a fixed clock.  A block that serves HTTP
// (listen on PORT) is asked until it answers; the Express block must admit
// its limit and refuse the next request with 429.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sql } from './helpers.mjs';

const pkg = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const readmes = [process.env.README_MAIN, path.join(pkg, 'README.md')];

// The marked blocks of a Markdown file: [{ where, what, code }].
function markedBlocks(file) {
  const lines = readFileSync(file, 'utf8').split('\n');
  const blocks = [];
  lines.forEach((line, i) => {
    const mark = /^<!-- test: node (.+) -->$/.exec(line);
    if (mark === null) return;
    assert.match(lines[i + 1], /^```javascript$/, `${file}:${i + 1}: the mark must precede a javascript block`);
    const end = lines.indexOf('```', i + 2);
    blocks.push({ where: `${path.basename(file)}:${i + 3}`, what: mark[1], code: lines.slice(i + 2, end).join('\n') });
  });
  return blocks;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    }).on('error', reject);
  });
}

// Runs a block as a module; resolves to the child process and its output so far.
function run(block, env) {
  const file = path.join(pkg, `readme-${block.where.replace(/[^a-z0-9]/gi, '-')}.mjs`);
  writeFileSync(file, `${block.code}\n`);
  const child = spawn(process.execPath, [file], {
    env: { ...process.env, PGUSER: 'postgres', PGOPTIONS: '-c fixed_window.debug_now=2026-05-01T10:00:10Z', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { text: '' };
  child.stdout.on('data', (d) => { output.text += d; });
  child.stderr.on('data', (d) => { output.text += d; });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output, exited };
}

const blocks = readmes.flatMap(markedBlocks);

test('the READMEs mark their runnable blocks', () => {
  assert.ok(blocks.some((b) => b.what.startsWith('express')), 'the Express block is marked');
  assert.ok(blocks.length >= 2);
});

for (const block of blocks) {
  test(`${block.where}: ${block.what}`, async () => {
    await sql("SELECT fw.fw_define('api', 100, interval '1 minute') WHERE NOT EXISTS (SELECT FROM fw.fw_policies WHERE name = 'api')");
    if (!block.what.startsWith('express')) {
      const { output, exited } = run(block, {});
      assert.equal(await exited, 0, output.text);
      return;
    }
    // an HTTP server: its limit (from the block's "limit: N") admits N
    // requests, then 429; each block starts with no counters of the store
    await sql("SELECT fw.fw_reset('express-rate-limit')");
    const limit = Number(/limit: (\d+)/.exec(block.code)[1]);
    const port = await freePort();
    const { child, output, exited } = run(block, { PORT: String(port) });
    try {
      let first;
      for (let i = 0; i < 100 && first === undefined; i += 1) {
        first = await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined);
        if (first === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(first !== undefined, `the block did not serve:\n${output.text}`);
      assert.equal(first.status, 200, output.text);
      const statuses = [];
      for (let i = 1; i <= limit; i += 1) statuses.push((await fetch(`http://127.0.0.1:${port}/`)).status);
      assert.deepEqual(statuses.slice(0, limit - 1), Array(limit - 1).fill(200));
      assert.equal(statuses[limit - 1], 429);
    } finally {
      child.kill();
      await exited;
    }
  });
}
