'use strict';
// Routing on the application's side: the shard of (name, key) as the router
// extension fixed_window_proxy computes it (docs/scaling-out.md, "Routing on
// the application's side"), so that an application holding one pool per
// shard calls the shard directly and skips the router's hop; and the
// router's shard list, libpq connection strings, read as pg's settings.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

const crypto = require('node:crypto');

const SLOTS = 16384n;                  // the router's slots, each routed by jump
const MASK64 = (1n << 64n) - 1n;
const JUMP_MULTIPLIER = 2862933555777941757n;

// fw_shard_hash(name, key): the first 32 bits of MD5(<bytes of name>:<name><key>),
// big-endian, with the top bit cleared.  Strings are UTF-8, the encoding of
// the database (as the router assumes too).
function shardHash(name, key) {
  const nameBytes = Buffer.from(name, 'utf8');
  const digest = crypto.createHash('md5')
    .update(`${nameBytes.length}:`).update(nameBytes).update(Buffer.from(key, 'utf8'))
    .digest();
  return digest.readUInt32BE(0) & 0x7fffffff;
}

// fw_jump_hash(key, n): jump consistent hashing (Lamport and Veach, 2014) of
// a 64-bit key among n buckets, dividing in integers as the router does: the
// paper's floating-point division rounds some exact quotients down.
function jumpHash(key, count) {
  let state = BigInt.asUintN(64, BigInt(key));
  let bucket = -1n;
  let next = 0n;
  const buckets = BigInt(count);
  while (next < buckets) {
    bucket = next;
    state = (state * JUMP_MULTIPLIER + 1n) & MASK64;
    next = ((bucket + 1n) << 31n) / ((state >> 33n) + 1n);
  }
  return Number(bucket);
}

// fw_shard(name, key, n, method): the shard, from 0, of (name, key).
function shardOf(name, key, count, method = 'jump') {
  if (method === 'jump') return jumpHash(BigInt(shardHash(name, key)) % SLOTS, count);
  if (method === 'modulo') return shardHash(name, key) % count;
  throw new RangeError(`routing must be "jump" or "modulo", not ${JSON.stringify(method)}`);
}

// The pg settings of a libpq connection string in keyword=value form, the
// form of the router's shard list ('host=shard0.example dbname=fw').  Values
// may be single-quoted, with \' and \\ inside.  A keyword pg has no setting
// for is refused rather than dropped: a dropped sslmode would connect
// without TLS.
const KEYWORDS = {
  host: ['host', String],
  hostaddr: ['host', String],
  port: ['port', Number],
  dbname: ['database', String],
  user: ['user', String],
  password: ['password', String],
  application_name: ['application_name', String],
  connect_timeout: ['connectionTimeoutMillis', (v) => Number(v) * 1000],
  options: ['options', String],
  sslmode: ['ssl', sslOf],
};
// libpq's sslmode as pg's ssl setting; prefer and allow, which fall back
// to a connection without TLS, have no counterpart in pg and are refused.
function sslOf(mode) {
  if (mode === 'disable') return false;
  if (mode === 'require') return { rejectUnauthorized: false };
  if (mode === 'verify-ca' || mode === 'verify-full') return {};
  throw new RangeError(`sslmode "${mode}" cannot be passed on to pg: use disable, require, verify-ca or verify-full`);
}

function parseConninfo(text) {
  const settings = {};
  const pattern = /\s*([A-Za-z_]+)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|([^\s']+))/y;
  let rest = text.trim();
  while (rest !== '') {
    pattern.lastIndex = 0;
    const match = pattern.exec(rest);
    if (match === null) throw new SyntaxError(`cannot read the connection string "${text}" at "${rest}"`);
    const [, keyword, quoted, bare] = match;
    const value = quoted !== undefined ? quoted.replace(/\\(.)/g, '$1') : bare;
    const known = KEYWORDS[keyword];
    if (known === undefined) {
      throw new RangeError(`the connection string "${text}" has the keyword "${keyword}", which this client cannot pass on; give the shard's pg.Pool instead`);
    }
    settings[known[0]] = known[1](value);
    rest = rest.slice(pattern.lastIndex).trim();
  }
  return settings;
}

module.exports = { shardHash, jumpHash, shardOf, parseConninfo };
