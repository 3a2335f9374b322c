import { describe, expect, it } from 'vitest';
import { FerryError } from './errors.js';
import { MAX_HOPS, hopsHeader, hopsOf } from './hops.js';

describe('hopsOf', () => {
  it.each([
    ['a request that is no delivery', {}, undefined],
    ['a hop count without a message id', { 'svc-hops': '3' }, undefined],
    ['a first delivery (no hop count)', { 'svc-message-id': 'msg_1' }, 1],
    ['a delivery of a republished message', { 'svc-message-id': 'msg_1', 'svc-hops': '3' }, 4],
    ['a garbled count', { 'svc-message-id': 'msg_1', 'svc-hops': 'lots' }, 1],
    ['a repeated count', { 'svc-message-id': 'msg_1', 'svc-hops': ['2', '2'] }, 1],
    [
      'the last pass allowed',
      { 'svc-message-id': 'm', 'svc-hops': String(MAX_HOPS - 1) },
      MAX_HOPS,
    ],
  ])('%s', (_, headers, expected) => {
    expect(hopsOf('Svc', headers)).toBe(expected);
  });

  it('reads the names of the configured prefix', () => {
    expect(hopsOf('Upstash', { 'upstash-message-id': 'm', 'upstash-hops': '2' })).toBe(3);
    expect(hopsOf('Upstash', { 'svc-message-id': 'm' })).toBeUndefined();
    expect(hopsHeader('Upstash')).toBe('Upstash-Hops');
  });

  it('refuses a publish past MAX_HOPS with a 400 naming the header', () => {
    let error: unknown;
    try {
      hopsOf('Svc', { 'svc-message-id': 'm', 'svc-hops': String(MAX_HOPS) });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FerryError);
    expect((error as FerryError).status).toBe(400);
    expect((error as FerryError).message).toMatch(/^publish loop: .*\(Svc-Hops: 8; at most 8\)/);
  });
});
