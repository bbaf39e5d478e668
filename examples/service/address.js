// The address a request comes from, for limits keyed by client address.
//
// A client is limited by its address: an IPv4 address, or the /64 network
// of an IPv6 one, since a single IPv6 host commonly holds a whole /64 and
// would otherwise have 2^64 quotas (addressKey).
//
// X-Forwarded-For is a list that every proxy on the way appends to, and a
// client can put anything at its left: a service that believes it gives
// every forged address a fresh quota.  So the header counts only when the
// connection comes from a proxy the service is told to trust
// (TRUSTED_PROXIES), and then only the entries trusted proxies added, read
// from the right: the first address that is not one of them is the client.
// Some proxies add the client's port: "203.0.113.7:4711", or with IPv6
// "[2001:db8::1]:443" (RFC 7239's form); the address is the part before it.
// An IPv6 address without brackets is taken whole ("2001:db8::1:443" is an
// address), and an entry that is neither form is no address.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import net from 'node:net';

// "::ffff:192.0.2.1" is IPv4's 192.0.2.1 on an IPv6 socket.
function normalize(address) {
  const a = String(address ?? '').trim();
  return a.startsWith('::ffff:') && net.isIPv4(a.slice(7)) ? a.slice(7) : a;
}

// The trusted proxies of a comma-separated list of addresses.
export function trustedProxies(list) {
  return new Set(String(list ?? '').split(',').map(normalize).filter((a) => net.isIP(a)));
}

// The address of a forwarded entry, without its port; '' when it is none.
const BRACKETED = /^\[([^\]]*)\](?::([0-9]{1,5}))?$/;     // [IPv6], [IPv6]:port
const IPV4_PORT = /^([0-9.]+):([0-9]{1,5})$/;              // IPv4:port
function forwardedAddress(entry) {
  let host = entry.trim();
  let port;
  const bracketed = host.match(BRACKETED);
  if (bracketed) {
    [, host, port] = bracketed;
    if (!net.isIPv6(host)) return '';
  } else {
    [, host, port] = host.match(IPV4_PORT) ?? [, host];
  }
  if (port !== undefined && Number(port) > 65535) return '';
  const address = normalize(host);
  return net.isIP(address) ? address : '';
}

export function clientAddress(req, trusted) {
  let address = normalize(req.socket.remoteAddress);
  const forwarded = String(req.headers['x-forwarded-for'] ?? '')
    .split(',').filter((e) => e.trim() !== '');
  while (trusted.has(address) && forwarded.length > 0) {
    const hop = forwardedAddress(forwarded.pop());
    if (hop === '') break;            // not an address: the proxy is the client we know
    address = hop;
  }
  return address;
}

// The key a client's address is limited by: an IPv4 address as it is, an
// IPv6 address as its /64 network ("2001:db8:1:2::/64").
export function addressKey(address) {
  if (!net.isIPv6(address)) return address;
  // expand "::" into the zero groups it stands for, then keep four groups
  const [head, tail] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : (tail ? tail.split(':') : []);
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}
