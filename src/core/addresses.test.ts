import { describe, expect, it } from 'vitest';
import { isLocalHostname, isPrivateAddress, isRefusedHost } from './addresses.js';

describe('isPrivateAddress', () => {
  it.each<[string, boolean]>([
    // IPv4 private and special ranges, at their edges
    ['127.0.0.1', true],
    ['127.255.255.255', true],
    ['10.0.0.0', true],
    ['10.255.255.255', true],
    ['172.16.0.1', true],
    ['172.31.255.255', true],
    ['192.168.1.1', true],
    ['169.254.169.254', true], // cloud metadata
    ['0.0.0.0', true],
    ['0.1.2.3', true],
    ['100.64.0.1', true],
    ['100.127.255.255', true],
    ['224.0.0.1', true], // multicast
    ['239.255.255.250', true],
    ['240.0.0.1', true], // reserved
    ['255.255.255.255', true], // broadcast
    // IPv4 public, just outside the ranges
    ['8.8.8.8', false],
    ['1.1.1.1', false],
    ['11.0.0.0', false],
    ['9.255.255.255', false],
    ['172.15.255.255', false],
    ['172.32.0.0', false],
    ['192.167.255.255', false],
    ['192.169.0.0', false],
    ['169.253.255.255', false],
    ['100.63.255.255', false],
    ['100.128.0.0', false],
    ['126.255.255.255', false],
    ['128.0.0.0', false],
    ['223.255.255.255', false],
    // IPv6
    ['::1', true],
    ['::', true],
    ['0:0:0:0:0:0:0:1', true],
    ['fc00::1', true],
    ['fd12:3456:789a::1', true],
    ['fe80::1', true],
    ['febf::1', true],
    ['FE80::1', true],
    ['fe80::1%eth0', true],
    ['ff02::1', true],
    ['[::1]', true],
    ['2001:4860:4860::8888', false],
    ['2606:4700:4700::1111', false],
    ['fbff::1', true], // outside fc00::/7, but outside 2000::/3 too
    ['::2', true], // ::/96 (IPv4-compatible) → 0.0.0.2, "this network"
    // IPv6 forms carrying an IPv4 address
    ['::ffff:127.0.0.1', true],
    ['::ffff:10.1.2.3', true],
    ['::FFFF:192.168.0.1', true],
    ['::ffff:7f00:1', true], // 127.0.0.1 in hex
    // IPv4-mapped ::ffff:0:0/96 is not globally reachable (IANA), whatever it maps to
    ['::ffff:8.8.8.8', true],
    ['::ffff:0808:0808', true],
    ['0:0:0:0:0:ffff:127.0.0.1', true],
    ['::127.0.0.1', true], // deprecated IPv4-compatible
    ['::8.8.8.8', true], // ::/96 is outside 2000::/3
    ['64:ff9b::10.0.0.1', true], // NAT64
    ['64:ff9b::8.8.8.8', false],
    // The IANA special-purpose registries, at their edges (issue 21.5)
    ['192.0.0.1', true], // 192.0.0.0/24 IETF protocol assignments
    ['192.0.0.255', true],
    ['192.0.1.0', false],
    ['191.255.255.255', false],
    ['192.0.2.1', true], // TEST-NET-1
    ['198.51.100.7', true], // TEST-NET-2
    ['203.0.113.9', true], // TEST-NET-3
    ['198.18.0.1', true], // benchmarking 198.18.0.0/15
    ['198.19.255.255', true],
    ['198.17.255.255', false],
    ['198.20.0.0', false],
    ['192.88.99.1', true], // deprecated 6to4 relay anycast
    ['192.31.196.1', false], // AS112, globally reachable
    ['192.52.193.1', false], // AMT, globally reachable
    ['192.175.48.1', false], // AS112, globally reachable
    ['64:ff9b:1::1', true], // local-use NAT64 64:ff9b:1::/48
    ['64:ff9b:1::8.8.8.8', true],
    ['64:ff9b::192.168.1.1', true],
    ['2002:0a00:0001::1', true], // 6to4 of 10.0.0.1
    ['2002:c0a8:0101::1', true], // 6to4 of 192.168.1.1
    ['2002:7f00:0001::1', true], // 6to4 of 127.0.0.1
    ['2002:0808:0808::1', false], // 6to4 of 8.8.8.8
    ['fec0::1', true], // deprecated site-local fec0::/10
    ['feff::1', true],
    ['::ffff:0:0', true],
    ['::ffff:0:808:808', true], // IPv4-translated ::ffff:0:0:0/96
    ['100::1', true], // discard-only 100::/64
    ['2001::1', true], // Teredo 2001::/32
    ['2001:1::1', true], // 2001::/23 IETF protocol assignments
    ['2001:2::1', true], // benchmarking
    ['2001:db8::1', true], // documentation
    ['3fff::1', true], // documentation 3fff::/20
    ['3fff:1000::1', false],
    ['5f00::1', true], // SRv6 SIDs
    ['2001:3::1', false], // AMT, globally reachable
    ['2620:4f:8000::1', false], // AS112, globally reachable
    ['2001:200::1', false], // just past 2001::/23
    ['4000::1', true], // outside 2000::/3
    ['1fff:ffff::1', true],
    ['2000::1', false],
    ['3ffe:ffff::1', false],
    // not an IP address
    ['localhost', false],
    ['example.com', false],
    ['', false],
    ['127.0.0.1.nip.io', false],
    ['0x7f.0.0.1', false],
  ])('%j → %s', (ip, expected) => {
    expect(isPrivateAddress(ip)).toBe(expected);
  });
});

describe('isLocalHostname', () => {
  it.each<[string, boolean]>([
    ['localhost', true],
    ['LOCALHOST', true],
    ['localhost.', true],
    ['localhost..', true],
    ['LocalHost...', true],
    ['api.localhost..', true],
    ['api.localhost', true],
    ['a.b.localhost', true],
    ['localhost.example.com', false],
    ['mylocalhost', false],
    ['example.com', false],
    ['127.0.0.1', false],
    ['', false],
  ])('%j → %s', (host, expected) => {
    expect(isLocalHostname(host)).toBe(expected);
  });
});

describe('isRefusedHost', () => {
  // Hosts as `new URL(…).hostname` gives them (IPv6 in brackets, IPv4 normalised).
  it.each<[string, boolean]>([
    ['http://localhost../', true],
    ['http://127.1/', true],
    ['http://0x7f000001/', true],
    ['http://[::ffff:127.0.0.1]/', true],
    ['http://[::ffff:8.8.8.8]/', true],
    ['http://[2002:a00:1::1]/', true],
    ['http://[fec0::1]/', true],
    ['http://198.18.0.1/', true],
    ['http://192.0.0.8/', true],
    ['http://[2606:4700:4700::1111]/', false],
    ['http://8.8.8.8/', false],
    ['https://example.com./', false],
  ])('%s → %s', (url, expected) => {
    expect(isRefusedHost(new URL(url).hostname)).toBe(expected);
  });
});
