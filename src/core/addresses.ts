import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Address classification for production mode, which refuses to deliver to anything but the
 * public internet (a queue that POSTs wherever it is told is otherwise a server-side request
 * forgery tool against its own network). Pure string work: the caller resolves names first and
 * checks every resolved address.
 *
 * The ranges come from ipaddr.js (`range()`), which names the blocks of the IANA IPv4 and IPv6
 * Special-Purpose Address Registries (RFC 6890 and its updates). Only the names below are
 * allowed; every other range, and any name a later ipaddr.js adds, is refused, so the rule fails
 * closed. See docs/security.md "Destinations (SSRF)" for the table.
 */

/**
 * IPv4 ranges that are globally reachable unicast: ordinary addresses (`unicast`) and the
 * special-purpose blocks the registry marks "Globally Reachable: True" (AS112 192.31.196.0/24 and
 * 192.175.48.0/24, AMT 192.52.193.0/24). Everything else (`0.0.0.0/8`, RFC 1918, `100.64.0.0/10`,
 * loopback, link-local, `192.0.0.0/24`, documentation, `198.18.0.0/15`, `192.88.99.0/24`,
 * multicast, `240.0.0.0/4`, broadcast) is refused.
 */
const GLOBAL_V4: ReadonlySet<string> = new Set(['unicast', 'as112', 'amt']);

/**
 * IPv6 ranges that are globally reachable unicast: ordinary addresses inside the global unicast
 * space `2000::/3` (IANA IPv6 Address Space; everything outside it is reserved, local or
 * multicast) and the registry's "Globally Reachable: True" blocks (AMT `2001:3::/32`, AS112
 * `2001:4:112::/48` and `2620:4f:8000::/48`, ORCHIDv2 `2001:20::/28`, drone remote ID
 * `2001:30::/28`). `64:ff9b::/96` (NAT64) and `2002::/16` (6to4) embed an IPv4 address and are
 * judged by it. Everything else (`::`, `::1`, `::ffff:0:0/96`, `64:ff9b:1::/48`, `100::/64`,
 * `2001::/23` with Teredo, `2001:db8::/32`, `3fff::/20`, `5f00::/16`, `fc00::/7`, `fe80::/10`,
 * `fec0::/10`, multicast) is refused.
 */
const GLOBAL_V6: ReadonlySet<string> = new Set([
  'unicast',
  'amt',
  'as112v6',
  'orchid2',
  'droneRemoteIdProtocolEntityTags',
]);

function isGlobalV4(address: ipaddr.IPv4): boolean {
  return GLOBAL_V4.has(address.range());
}

/** The IPv4 address in bytes `from`…`from + 3` of an IPv6 address. */
function embeddedV4(address: ipaddr.IPv6, from: number): ipaddr.IPv4 {
  return new ipaddr.IPv4(address.toByteArray().slice(from, from + 4));
}

function isGlobalV6(address: ipaddr.IPv6): boolean {
  const range: string = address.range();
  const [g0 = 0, , g2 = 0, g3 = 0, g4 = 0, g5 = 0] = address.parts;
  // 64:ff9b::/96 (not 64:ff9b:1::/48, which ipaddr.js files under the same name).
  if (range === 'rfc6052' && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return isGlobalV4(embeddedV4(address, 12));
  }
  if (range === '6to4') return isGlobalV4(embeddedV4(address, 2)); // 2002:AABB:CCDD::/48
  if (!GLOBAL_V6.has(range)) return false;
  return range !== 'unicast' || (g0 & 0xe000) === 0x2000; // inside 2000::/3
}

/**
 * True when `ip` is an address production mode must not deliver to: anything but globally
 * reachable unicast (see {@link GLOBAL_V4} and {@link GLOBAL_V6}). Accepts `[…]` brackets and a
 * `%zone` suffix. Returns false for text that is not an IP address (a host name is the caller's
 * to resolve); Node's `isIP` decides what is one, so legacy IPv4 forms (`0x7f.1`) are not.
 */
export function isPrivateAddress(ip: string): boolean {
  let text = ip.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  if (isIPv4(text)) return !isGlobalV4(ipaddr.IPv4.parse(text));
  if (isIPv6(text)) return !isGlobalV6(ipaddr.IPv6.parse(text));
  return false;
}

/**
 * True for `localhost` and `*.localhost` (RFC 6761 reserves them for loopback), case-insensitive,
 * with any number of trailing dots (`localhost..` resolves like `localhost`). Checked before DNS
 * because resolvers may answer them locally.
 */
export function isLocalHostname(host: string): boolean {
  const name = host.trim().toLowerCase().replace(/\.+$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * True when a URL's host (`new URL(…).hostname`, brackets allowed) is refused without a DNS
 * lookup: a local name or an IP literal that is not globally reachable.
 */
export function isRefusedHost(hostname: string): boolean {
  return isLocalHostname(hostname) || isPrivateAddress(hostname);
}
