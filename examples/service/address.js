// The address a request comes from, for limits keyed by client address.
//
// A client is limited by its address: an IPv4 address, or the /64 network
// of an IPv6 one, since a single IPv6 host commonly holds a whole /64 and
// would otherwise have 2^64 quotas (addressKey).
//
// An address is a number, whatever its text: "2001:DB8::1", "2001:db8:0::1"
// and "2001:db8::1" are one address, and an IPv4-mapped IPv6 address
// ("::ffff:192.0.2.1", "::ffff:c000:201": how a dual-stack socket shows an
// IPv4 peer) is that IPv4 address.  A client's address is written in one
// form: IPv4 dotted, IPv6 as RFC 5952 writes it (lower case, no leading
// zeros, the longest run of zero groups as "::").
//
// X-Forwarded-For is a list that every proxy on the way appends to, and a
// client can put anything at its left: a service that believes it gives
// every forged address a fresh quota.  So the header counts only when the
// connection comes from a proxy the service is told to trust
// (TRUSTED_PROXIES: addresses and networks, "10.0.0.0/8"), and then only
// the entries trusted proxies added, read from the right: the first address
// that is not one of them is the client.  An entry of TRUSTED_PROXIES that
// is not understood is refused (trustedProxies throws): dropped silently, it
// would leave every client behind that proxy with the proxy's quota.
// Some proxies add the client's port: "203.0.113.7:4711", or with IPv6
// "[2001:db8::1]:443" (RFC 7239's form); the address is the part before it.
// An IPv6 address without brackets is taken whole ("2001:db8::1:443" is an
// address), and an entry that is neither form is no address.
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

import net from 'node:net';

// An address is { bits, width }: its number, of 32 bits (IPv4) or 128 (IPv6).
const IPV4_MAPPED = 0xffffn;            // ::ffff:0:0/96, above the IPv4 address

function ipv4Bits(text) {
  return text.split('.').reduce((bits, octet) => (bits << 8n) | BigInt(octet), 0n);
}

// The address a text writes, as it is written (an IPv4-mapped IPv6 address
// stays IPv6: see unmapped); undefined when it writes none.  An IPv6
// address with a zone ("fe80::1%eth0") is none: a zone is of one host.
function number(text) {
  if (net.isIPv4(text)) return { bits: ipv4Bits(text), width: 32 };
  if (!net.isIPv6(text) || text.includes('%')) return undefined;
  let ipv6 = text;
  if (ipv6.includes('.')) {             // "::ffff:192.0.2.1": the last two groups in IPv4's form
    const at = ipv6.lastIndexOf(':') + 1;
    const low = ipv4Bits(ipv6.slice(at));
    ipv6 = `${ipv6.slice(0, at)}${(low >> 16n).toString(16)}:${(low & 0xffffn).toString(16)}`;
  }
  // "::" stands for as many zero groups as the others leave of eight
  const [head, tail] = ipv6.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  const bits = [...left, ...zeros, ...right].reduce((n, group) => (n << 16n) | BigInt(parseInt(group, 16)), 0n);
  return { bits, width: 128 };
}

// An IPv4-mapped IPv6 address as the IPv4 address it is.
function unmapped(address) {
  return address.width === 128 && address.bits >> 32n === IPV4_MAPPED
    ? { bits: address.bits & 0xffffffffn, width: 32 } : address;
}

// The address of a text, in any of its forms; undefined when it is none.
function parse(text) {
  const address = number(String(text ?? '').trim());
  return address && unmapped(address);
}

// The groups of 16 bits of an IPv6 address, first to last.
function groups(bits) {
  return Array.from({ length: 8 }, (_, i) => Number((bits >> BigInt(112 - 16 * i)) & 0xffffn));
}

// An address's text in its one form (RFC 5952 for IPv6).
function format({ bits, width }) {
  if (width === 32) return [24n, 16n, 8n, 0n].map((shift) => String((bits >> shift) & 0xffn)).join('.');
  const g = groups(bits);
  // the longest run of two or more zero groups, the first of equals, is "::"
  let at = -1;
  let length = 1;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > length) [at, length] = [i, j - i];
  }
  const hex = (list) => list.map((group) => group.toString(16)).join(':');
  return at < 0 ? hex(g) : `${hex(g.slice(0, at))}::${hex(g.slice(at + length))}`;
}

// A network's text: its address in its one form, and its prefix unless it
// is one address.
function showNetwork(n) {
  return n.prefix === n.width ? format(n) : `${format(n)}/${n.prefix}`;
}

// The addresses and networks of TRUSTED_PROXIES.  has(address) says whether
// a parsed address is one of them; String() lists them in their one form.
class TrustedProxies {
  constructor(networks) {
    this.networks = networks;
  }

  has(address) {
    return this.networks.some(({ bits, width, prefix }) => address.width === width
      && address.bits >> BigInt(width - prefix) === bits >> BigInt(width - prefix));
  }

  toString() {
    return this.networks.map(showNetwork).join(', ');
  }
}

// One entry of TRUSTED_PROXIES: an address, or a network as address/prefix.
// Returns the network { bits, width, prefix } (an IPv4-mapped one as IPv4's:
// ::ffff:10.0.0.0/104 is 10.0.0.0/8), or a string saying why it is none.
function network(entry) {
  const [text, prefixText, ...more] = entry.split('/');
  const address = number(text);
  if (address === undefined || more.length > 0) return 'not an IPv4 or IPv6 address, nor a network address/prefix';
  const { width } = address;
  if (prefixText !== undefined && (!/^[0-9]{1,3}$/.test(prefixText) || Number(prefixText) > width)) {
    return `the prefix of an IPv${width === 32 ? 4 : 6} network is 0 to ${width}`;
  }
  const prefix = prefixText === undefined ? width : Number(prefixText);
  const host = BigInt(width - prefix);
  const base = unmapped({ bits: (address.bits >> host) << host, width });
  const n = { ...base, prefix: prefix - (width - base.width) };
  return (address.bits >> host) << host === address.bits ? n
    : `the address has bits set past the prefix; the network is ${showNetwork(n)}`;
}

// The trusted proxies of a list of addresses and networks, separated by
// commas or spaces.  Throws an Error naming every entry not understood.
export function trustedProxies(list) {
  const networks = [];
  const refused = [];
  for (const entry of String(list ?? '').split(/[\s,]+/).filter((e) => e !== '')) {
    const n = network(entry);
    if (typeof n === 'string') refused.push(`  "${entry}": ${n}`);
    else networks.push(n);
  }
  if (refused.length > 0) {
    throw new Error(['TRUSTED_PROXIES: entries not understood (each is an IPv4 or IPv6 address, or a network '
      + 'such as 10.0.0.0/8 or 2001:db8::/32):', ...refused].join('\n'));
  }
  return new TrustedProxies(networks);
}

// The address of a forwarded entry, without its port; undefined when it is none.
const BRACKETED = /^\[([^\]]*)\](?::([0-9]{1,5}))?$/;     // [IPv6], [IPv6]:port
const IPV4_PORT = /^([0-9.]+):([0-9]{1,5})$/;              // IPv4:port
function forwardedAddress(entry) {
  let host = entry.trim();
  let port;
  const bracketed = host.match(BRACKETED);
  if (bracketed) {
    [, host, port] = bracketed;
    if (!net.isIPv6(host)) return undefined;
  } else {
    [, host, port] = host.match(IPV4_PORT) ?? [, host];
  }
  if (port !== undefined && Number(port) > 65535) return undefined;
  return parse(host);
}

// The client's address, in its one form ('' when the connection has
// already closed and its peer is gone).
export function clientAddress(req, trusted) {
  let address = parse(req.socket.remoteAddress);
  if (address === undefined) return '';
  const forwarded = String(req.headers['x-forwarded-for'] ?? '')
    .split(',').filter((e) => e.trim() !== '');
  while (trusted.has(address) && forwarded.length > 0) {
    const hop = forwardedAddress(forwarded.pop());
    if (hop === undefined) break;       // not an address: the proxy is the client we know
    address = hop;
  }
  return format(address);
}

// The key a client's address is limited by: an IPv4 address as it is, an
// IPv6 address as its /64 network ("2001:db8:1:2::/64").  The /64 of the
// loopback address ::1 is ::/64, written "0:0:0:0::/64", which holds no
// other client's address: "::" is no one's, and IPv4's mapped addresses
// are IPv4's.  A text that is no address is its own key.
export function addressKey(text) {
  const address = parse(text);
  if (address === undefined) return String(text ?? '');
  if (address.width === 32) return format(address);
  return `${groups(address.bits).slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}
