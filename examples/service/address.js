// The address a request comes from, for limits keyed by client address.
//
// X-Forwarded-For is a list that every proxy on the way appends to, and a
// client can put anything at its left: a service that believes it gives
// every forged address a fresh quota.  So the header counts only when the
// connection comes from a proxy the service is told to trust
// (TRUSTED_PROXIES), and then only the entries trusted proxies added, read
// from the right: the first address that is not one of them is the client.
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

export function clientAddress(req, trusted) {
  let address = normalize(req.socket.remoteAddress);
  const forwarded = String(req.headers['x-forwarded-for'] ?? '')
    .split(',').map(normalize).filter(Boolean);
  while (trusted.has(address) && forwarded.length > 0) {
    const hop = forwarded.pop();
    if (!net.isIP(hop)) break;        // not an address: the proxy is the client we know
    address = hop;
  }
  return address;
}
