import { isIPv4, isIPv6 } from 'node:net';

/**
 * Address classification for production mode, which refuses to deliver to anything but the
 * public internet (a queue that POSTs wherever it is told is otherwise a server-side request
 * forgery tool against its own network). Pure string work: the caller resolves names first and
 * checks every resolved address.
 */

/** IPv4 ranges as [network, prefix length]. */
const PRIVATE_V4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services live here)
  ['172.16.0.0', 12], // RFC 1918
  ['192.168.0.0', 16], // RFC 1918
  ['224.0.0.0', 4], // multicast: never a unicast destination
  ['240.0.0.0', 4], // reserved, and 255.255.255.255 broadcast
];

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function isPrivateV4(ip: string): boolean {
  const value = v4ToInt(ip);
  return PRIVATE_V4.some(([network, bits]) => {
    const size = 2 ** (32 - bits);
    return Math.floor(value / size) === Math.floor(v4ToInt(network) / size);
  });
}

/** The eight 16-bit groups of a valid IPv6 address (embedded dotted IPv4 allowed). */
function v6Groups(ip: string): number[] {
  let text = ip;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (last.includes('.')) {
    const v = v4ToInt(last);
    tail.push(Math.floor(v / 65_536), v % 65_536);
    // Keep "…::" intact; otherwise drop the colon that separated the dotted part.
    text = text.slice(0, lastColon + 1);
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const parse = (part: string): number[] =>
    part === '' ? [] : part.split(':').map((g) => parseInt(g, 16));
  const [head = '', rest] = text.split('::');
  const left = parse(head);
  const right = [...parse(rest ?? ''), ...tail];
  if (rest === undefined) return [...left, ...right];
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function groupsToV4(high: number, low: number): string {
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

function isPrivateV6(ip: string): boolean {
  const g = v6Groups(ip);
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const firstSixZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (firstSixZero && g5 === 0 && g6 === 0 && (g7 === 0 || g7 === 1)) return true; // :: and ::1
  // IPv4-mapped ::ffff:a.b.c.d and the deprecated IPv4-compatible ::a.b.c.d reach IPv4 hosts.
  if (firstSixZero && (g5 === 0xffff || g5 === 0)) return isPrivateV4(groupsToV4(g6, g7));
  // NAT64 well-known prefix 64:ff9b::/96 also embeds an IPv4 address.
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return isPrivateV4(groupsToV4(g6, g7));
  }
  if ((g0 & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local
  if ((g0 & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((g0 & 0xff00) === 0xff00) return true; // ff00::/8 multicast
  return false;
}

/**
 * True when `ip` is an address production mode must not deliver to: loopback, RFC 1918,
 * link-local, carrier-grade NAT, "this network", multicast and reserved IPv4; IPv6 `::`, `::1`,
 * unique-local `fc00::/7`, link-local `fe80::/10`, multicast, and IPv6 forms that embed an IPv4
 * address (`::ffff:a.b.c.d`, `64:ff9b::a.b.c.d`), which are judged by that IPv4 address.
 * Accepts `[…]` brackets and a `%zone` suffix. Returns false for text that is not an IP address
 * (a host name is the caller's to resolve).
 */
export function isPrivateAddress(ip: string): boolean {
  let text = ip.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  if (isIPv4(text)) return isPrivateV4(text);
  if (isIPv6(text)) return isPrivateV6(text.toLowerCase());
  return false;
}

/**
 * True for `localhost` and `*.localhost` (RFC 6761 reserves them for loopback), case-insensitive,
 * with or without a trailing dot. Checked before DNS because resolvers may answer them locally.
 */
export function isLocalHostname(host: string): boolean {
  const name = host.trim().toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}
