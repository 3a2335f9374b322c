import { describe, expect, it } from 'vitest';
import { signRequest } from '../core/signature.js';
import { SignatureError } from './errors.js';
import type { SignatureErrorCode } from './errors.js';
import { Receiver } from './receiver.js';

const CURRENT = 'sig_current_key';
const NEXT = 'sig_next_key';
const URL = 'https://example.com/hook?x=1';
const BODY = '{"hello":"world"}';
const enc = new TextEncoder();

function sign(
  opts: { key?: string; body?: string | Uint8Array; nowMs?: number; issuer?: string } = {},
): string {
  const body = opts.body ?? BODY;
  return signRequest({
    signingKey: opts.key ?? CURRENT,
    issuer: opts.issuer ?? 'Ferry',
    url: URL,
    body: typeof body === 'string' ? enc.encode(body) : body,
    nowMs: opts.nowMs ?? Date.now(),
  });
}

const receiver = new Receiver({ currentSigningKey: CURRENT, nextSigningKey: NEXT });

async function codeOf(promise: Promise<unknown>): Promise<SignatureErrorCode | 'resolved'> {
  try {
    await promise;
    return 'resolved';
  } catch (err) {
    expect(err).toBeInstanceOf(SignatureError);
    return (err as SignatureError).code;
  }
}

describe('Receiver', () => {
  it('accepts a token signed with the current key', async () => {
    await expect(receiver.verify({ signature: sign(), body: BODY, url: URL })).resolves.toBe(true);
  });

  it('accepts a token signed with the next key only', async () => {
    await expect(
      receiver.verify({ signature: sign({ key: NEXT }), body: BODY, url: URL }),
    ).resolves.toBe(true);
  });

  it('accepts a binary body given as bytes, and an empty body', async () => {
    const bytes = Uint8Array.from([0, 255, 128, 10, 13]);
    await expect(receiver.verify({ signature: sign({ body: bytes }), body: bytes })).resolves.toBe(
      true,
    );
    await expect(receiver.verify({ signature: sign({ body: '' }), body: '' })).resolves.toBe(true);
  });

  it('checks the URL only when one is given', async () => {
    await expect(receiver.verify({ signature: sign(), body: BODY })).resolves.toBe(true);
  });

  it('honours a custom issuer', async () => {
    const upstash = new Receiver({
      currentSigningKey: CURRENT,
      nextSigningKey: NEXT,
      issuer: 'Upstash',
    });
    const token = sign({ issuer: 'Upstash' });
    await expect(upstash.verify({ signature: token, body: BODY, url: URL })).resolves.toBe(true);
    expect(await codeOf(receiver.verify({ signature: token, body: BODY }))).toBe('invalid_claim');
  });

  it.each<[string, () => Promise<unknown>, SignatureErrorCode]>([
    [
      'a tampered body',
      () => receiver.verify({ signature: sign(), body: '{"hello":"there"}', url: URL }),
      'body_mismatch',
    ],
    [
      'a tampered body on a next-key token',
      () => receiver.verify({ signature: sign({ key: NEXT }), body: 'x', url: URL }),
      'body_mismatch',
    ],
    [
      'a wrong URL',
      () => receiver.verify({ signature: sign(), body: BODY, url: 'https://example.com/other' }),
      'url_mismatch',
    ],
    [
      'an expired token',
      () => receiver.verify({ signature: sign({ nowMs: Date.now() - 3_600_000 }), body: BODY }),
      'expired',
    ],
    [
      'an expired token signed with the next key',
      () =>
        receiver.verify({
          signature: sign({ key: NEXT, nowMs: Date.now() - 3_600_000 }),
          body: BODY,
        }),
      'expired',
    ],
    [
      'a token signed with neither key',
      () => receiver.verify({ signature: sign({ key: 'sig_other' }), body: BODY, url: URL }),
      'invalid_signature',
    ],
    [
      'a token whose payload was edited',
      () => {
        const [header, , sig] = sign().split('.');
        const forged = Buffer.from(
          JSON.stringify({ iss: 'Ferry', sub: URL, exp: 9e9, body: 'AAAA' }),
        ).toString('base64url');
        return receiver.verify({ signature: `${header}.${forged}.${sig}`, body: BODY });
      },
      'invalid_signature',
    ],
    ['not a JWT', () => receiver.verify({ signature: 'not-a-jwt', body: BODY }), 'malformed'],
    ['an empty signature', () => receiver.verify({ signature: '', body: BODY }), 'malformed'],
    [
      'a JWT without the body claim',
      () => {
        const [header, , sig] = sign().split('.');
        const payload = Buffer.from(JSON.stringify({ iss: 'Ferry', sub: URL, exp: 9e9 })).toString(
          'base64url',
        );
        return receiver.verify({ signature: `${header}.${payload}.${sig}`, body: BODY });
      },
      'malformed',
    ],
  ])('rejects %s', async (_name, run, code) => {
    expect(await codeOf(run())).toBe(code);
  });

  it('accepts an expired token within the clock tolerance', async () => {
    const tolerant = new Receiver({
      currentSigningKey: CURRENT,
      nextSigningKey: NEXT,
      clockToleranceSec: 120,
    });
    const token = sign({ nowMs: Date.now() - 360_000 }); // expired 60 s ago
    await expect(tolerant.verify({ signature: token, body: BODY })).resolves.toBe(true);
  });
});
