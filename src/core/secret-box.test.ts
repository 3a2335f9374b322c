import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseSecretKey, SecretBox } from './secret-box.js';

const key = randomBytes(32);

describe('SecretBox', () => {
  it('opens what it sealed, with a fresh IV each time and no plaintext in the sealed text', () => {
    const box = new SecretBox(key);
    const a = box.seal('hunter2-password', 'account-password:acct_1');
    const b = box.seal('hunter2-password', 'account-password:acct_1');
    expect(a).not.toBe(b);
    expect(a).toMatch(/^v1\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/);
    expect(a).not.toContain('hunter2');
    expect(box.open(a, 'account-password:acct_1')).toBe('hunter2-password');
    expect(box.open(b, 'account-password:acct_1')).toBe('hunter2-password');
    expect(box.open(box.seal('', 'c'), 'c')).toBe('');
  });

  it('refuses another key, another context, an altered value and garbage', () => {
    const box = new SecretBox(key);
    const sealed = box.seal('secret', 'index-token:idx_1');
    expect(new SecretBox(randomBytes(32)).open(sealed, 'index-token:idx_1')).toBeUndefined();
    expect(box.open(sealed, 'index-token:idx_2')).toBeUndefined();
    expect(box.open(sealed, 'index-read-only-token:idx_1')).toBeUndefined();
    const [v, iv, tag, data] = sealed.split('.') as [string, string, string, string];
    const flipped = Buffer.from(data, 'base64url');
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(
      box.open([v, iv, tag, flipped.toString('base64url')].join('.'), 'index-token:idx_1'),
    ).toBeUndefined();
    for (const bad of ['', 'v1', 'v2.a.b.c', `${sealed}.x`, 'v1.AAAA.BBBB.CCCC']) {
      expect(box.open(bad, 'index-token:idx_1')).toBeUndefined();
    }
  });

  it('takes only 32-byte keys', () => {
    expect(() => new SecretBox(randomBytes(16))).toThrow(/32 bytes/);
  });
});

describe('parseSecretKey', () => {
  it('reads 64 hex digits, base64 and base64url of 32 bytes', () => {
    expect(parseSecretKey(key.toString('hex'))).toEqual(key);
    expect(parseSecretKey(key.toString('base64'))).toEqual(key);
    expect(parseSecretKey(`${key.toString('base64url')}\n`)).toEqual(key);
  });

  it('refuses other lengths and alphabets', () => {
    for (const bad of [
      '',
      'secret',
      randomBytes(31).toString('hex'),
      randomBytes(33).toString('base64'),
      randomBytes(16).toString('base64'),
      `${key.toString('hex').slice(0, 63)}g`,
    ]) {
      expect(parseSecretKey(bad)).toBeUndefined();
    }
  });
});
