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
  // an IPv6 client is written in one form, whichever it was given in
  assert.equal(clientAddress(request('::1', '2001:DB8:0:0::5'), chain), '2001:db8::5');
});

test('an entry that is no address stops the walk at the last proxy', () => {
  const proxy = trustedProxies('10.0.0.1');
  assert.equal(clientAddress(request('10.0.0.1', '198.51.100.7, unknown'), proxy), '10.0.0.1');
});

test('TRUSTED_PROXIES: addresses in any of their forms, and networks', () => {
  // 1.5 matched an entry only by its text as the peer's was written, and
  // dropped a network silently: behind such a proxy every client had the
  // proxy's quota
  const list = '10.0.0.0/8, 2001:DB8::1, 2001:db8:0::2, ::FFFF:192.0.2.9, ::ffff:c000:20a, 2001:db8:5::/48,'
    + ' 2001:db8:6::1/128 198.51.100.128/25';
  const proxies = trustedProxies(list);
  assert.equal(String(proxies),
    '10.0.0.0/8, 2001:db8::1, 2001:db8::2, 192.0.2.9, 192.0.2.10, 2001:db8:5::/48, 2001:db8:6::1, 198.51.100.128/25');
  const client = (peer) => clientAddress(request(peer, '203.0.113.7'), proxies);
  for (const peer of ['10.0.0.0', '10.1.2.3', '10.255.255.255', '::ffff:10.0.0.1', '2001:db8::1', '2001:db8::2',
    '192.0.2.9', '192.0.2.10', '2001:db8:5::', '2001:db8:5:ffff:ffff:ffff:ffff:ffff', '2001:db8:6::1', '198.51.100.200']) {
    assert.equal(client(peer), '203.0.113.7', `${peer} is a trusted proxy`);
  }
  for (const peer of ['9.255.255.255', '11.0.0.0', '2001:db8::3', '192.0.2.11', '2001:db8:4:ffff::1', '2001:db8:6::2',
    '198.51.100.127']) {
    assert.equal(client(peer), peer, `${peer} is not`);
  }
  // a proxy's own entry in X-Forwarded-For, written in another form, is that proxy
  assert.equal(clientAddress(request('10.0.0.1', '198.51.100.7, 2001:DB8:0:0::0:1'), proxies), '198.51.100.7');
  // IPv4 addresses match IPv4 networks, IPv6 ones IPv6 networks: ::/0 is
  // every IPv6 address, not IPv4's mapped ones too
  const v6 = trustedProxies('::/0');
  assert.equal(clientAddress(request('2001:db8:9::1', '203.0.113.7'), v6), '203.0.113.7');
  assert.equal(clientAddress(request('::ffff:192.0.2.1', '203.0.113.7'), v6), '192.0.2.1');
  assert.equal(String(trustedProxies('::ffff:10.0.0.0/104')), '10.0.0.0/8');
  assert.equal(String(trustedProxies(' , ')), '');
});

test('TRUSTED_PROXIES: an entry that is not understood is refused, each one named', () => {
  assert.throws(() => trustedProxies('nonsense, 10.0.0.1, 10.0.0.0/33, 2001:db8::/129, ::1/-1'),
    { message: /"nonsense".*"10\.0\.0\.0\/33".*"2001:db8::\/129".*"::1\/-1"/s });
  for (const bad of ['proxy.example.com', '10.0.0.1:80', '[2001:db8::1]', 'fe80::1%eth0', '010.0.0.1',
    '10.0.0.0/', '10.0.0.0/8/8', '/8', '10.0.0.0/08x', '2001:db8::1::2']) {
    assert.throws(() => trustedProxies(bad), { message: new RegExp(`"${bad.replace(/[.[\]]/g, '\\$&')}"`) }, bad);
  }
  // a network whose host part is not zero: which one was meant is not clear
  assert.throws(() => trustedProxies('10.0.0.1/8'), { message: /"10\.0\.0\.1\/8".*10\.0\.0\.0\/8/ });
  assert.throws(() => trustedProxies('2001:db8::1/64'), { message: /"2001:db8::1\/64".*2001:db8::\/64/ });
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
  assert.equal(hop('[::ffff:c000:201]:80'), '192.0.2.1');
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
  // ::/64 holds the loopback address ::1 and the unspecified ::, never a
  // remote client's; IPv4-mapped addresses are IPv4 in any form
  assert.equal(addressKey('::1'), '0:0:0:0::/64');
  assert.equal(addressKey('::'), '0:0:0:0::/64');
  assert.equal(addressKey('::ffff:192.0.2.1'), '192.0.2.1');
  assert.equal(addressKey('::ffff:c000:201'), '192.0.2.1');     // 1.5: 0:0:0:0::/64, every IPv4 client's
  assert.equal(addressKey('::FFFF:C000:0202'), '192.0.2.2');
  // two hosts of one network share a key; of two networks, not
  assert.equal(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:2:ffff::9'));
  assert.notEqual(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:3::1'));
});

test('an IPv6 address is written in one form, the one the WHATWG URL standard writes too (RFC 5952)', () => {
  // 10,000 addresses of a fixed sequence, a third of their groups zero, so
  // that runs of zeros of every length come up, each in upper case
  const none = trustedProxies(undefined);
  let seed = 1;
  const next = (n) => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n; };
  for (let i = 0; i < 10_000; i++) {
    const text = Array.from({ length: 8 }, () => (next(3) === 0 ? 0 : next(65536)).toString(16)).join(':');
    const expected = new URL(`http://[${text}]/`).hostname.slice(1, -1);
    if (expected.startsWith('::ffff:')) continue;        // IPv4-mapped: IPv4 here
    assert.equal(clientAddress(request(text.toUpperCase()), none), expected, text);
  }
});
