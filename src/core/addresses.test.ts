import { describe, expect, it } from 'vitest';
import { isLocalHostname, isPrivateAddress } from './addresses.js';

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
    ['fec0::1', false], // outside fe80::/10
    ['fbff::1', false], // outside fc00::/7
    ['::2', true], // ::/96 (IPv4-compatible) → 0.0.0.2, "this network"
    // IPv6 forms carrying an IPv4 address
    ['::ffff:127.0.0.1', true],
    ['::ffff:10.1.2.3', true],
    ['::FFFF:192.168.0.1', true],
    ['::ffff:7f00:1', true], // 127.0.0.1 in hex
    ['::ffff:8.8.8.8', false],
    ['::ffff:0808:0808', false],
    ['0:0:0:0:0:ffff:127.0.0.1', true],
    ['::127.0.0.1', true], // deprecated IPv4-compatible
    ['::8.8.8.8', false],
    ['64:ff9b::10.0.0.1', true], // NAT64
    ['64:ff9b::8.8.8.8', false],
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
