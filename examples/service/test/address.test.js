// Unit tests of the client address (address.js): forwarded addresses count
// only from trusted proxies, and only the hops they added.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addressKey, clientAddress, trustedProxies } from '../address.js';

const request = (peer, forwarded) => ({
  socket: { remoteAddress: peer },
  headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
});

test('without trusted proxies the peer is the client, whatever it forwards', () => {
  const none = trustedProxies(undefined);
  assert.equal(clientAddress(request('192.0.2.1'), none), '192.0.2.1');
  assert.equal(clientAddress(request('192.0.2.1', '203.0.113.9'), none), '192.0.2.1');
  assert.equal(clientAddress(request('::ffff:192.0.2.1', '203.0.113.9'), none), '192.0.2.1');
});

test('behind a trusted proxy, the hop it added: the rightmost entry', () => {
  const proxy = trustedProxies('10.0.0.1');
  assert.equal(clientAddress(request('10.0.0.1', '198.51.100.7'), proxy), '198.51.100.7');
  assert.equal(clientAddress(request('10.0.0.1', 'forged, 203.0.113.9, 198.51.100.7'), proxy), '198.51.100.7');
  // a peer that is not the proxy forwards nothing
  assert.equal(clientAddress(request('198.51.100.8', '203.0.113.9'), proxy), '198.51.100.8');
  // the proxy without the header: the proxy itself
  assert.equal(clientAddress(request('10.0.0.1'), proxy), '10.0.0.1');
});

test('a chain of trusted proxies, read from the right', () => {
  const chain = trustedProxies('10.0.0.1, 10.0.0.2,::1');
  assert.equal(clientAddress(request('10.0.0.1', '203.0.113.9, 198.51.100.7, 10.0.0.2'), chain), '198.51.100.7');
  assert.equal(clientAddress(request('::1', '2001:db8::5'), chain), '2001:db8::5');
});

test('an entry that is no address stops the walk at the last proxy', () => {
  const proxy = trustedProxies('10.0.0.1');
  assert.equal(clientAddress(request('10.0.0.1', '198.51.100.7, unknown'), proxy), '10.0.0.1');
  assert.deepEqual([...trustedProxies('nonsense, 10.0.0.1')], ['10.0.0.1']);
});

test('an entry with a port is the address without it, where the form says which part is the port', () => {
  // 1.5 took these for no address and stopped at the proxy: every client
  // behind a proxy that adds ports shared the proxy's quota
  const proxy = trustedProxies('10.0.0.1');
  const hop = (forwarded) => clientAddress(request('10.0.0.1', forwarded), proxy);
  assert.equal(hop('203.0.113.7:4711'), '203.0.113.7');
  assert.equal(hop('[2001:db8::1]:443'), '2001:db8::1');
  assert.equal(hop('[2001:db8::1]'), '2001:db8::1');
  assert.equal(hop('[::ffff:192.0.2.1]:80'), '192.0.2.1');
  // a trusted proxy's own entry may carry a port too
  const chain = trustedProxies('10.0.0.1, 10.0.0.2');
  assert.equal(clientAddress(request('10.0.0.1', '198.51.100.7:1234, 10.0.0.2:8080'), chain), '198.51.100.7');
  // IPv6 without brackets has no port: its last group is part of it
  assert.equal(hop('2001:db8::1:443'), '2001:db8::1:443');
  // what is neither an address nor an address and a port stops the walk
  for (const bad of ['203.0.113.7:', '203.0.113.7:65536', '203.0.113.7:44a', '[203.0.113.7]:80',
    '[2001:db8::1]:', '[2001:db8::1]x', '2001:db8::1]:443', 'example.com:80']) {
    assert.equal(hop(bad), '10.0.0.1', bad);
  }
});

test('IPv4 addresses are keys as they are; IPv6 ones by their /64 network', () => {
  assert.equal(addressKey('192.0.2.1'), '192.0.2.1');
  assert.equal(addressKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd'), '2001:db8:1:2::/64');
  assert.equal(addressKey('2001:db8:1:2::5'), '2001:db8:1:2::/64');
  assert.equal(addressKey('2001:0DB8:0001:0002::ffff'), '2001:db8:1:2::/64');
  assert.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
  assert.equal(addressKey('::1'), '0:0:0:0::/64');
  // two hosts of one network share a key; of two networks, not
  assert.equal(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:2:ffff::9'));
  assert.notEqual(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:3::1'));
});
