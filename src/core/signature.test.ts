import { createHash } from 'node:crypto';
import { Receiver as UpstashReceiver } from '@upstash/qstash';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { hashBody, signRequest, SIGNATURE_TTL_SEC } from './signature.js';

const KEY = 'sig_current_0123456789abcdef';
const NEXT = 'sig_next_fedcba9876543210';
const URL = 'https://example.com/hook?a=1&b=two';
const enc = new TextEncoder();

/** Independent expectation: Node's base64 with `+/` mapped and padding removed. */
function expectedBodyHash(body: Uint8Array): string {
  return createHash('sha256')
    .update(body)
    .digest('base64')
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

describe('signRequest', () => {
  it('produces an HS256 JWT that jose verifies, with exactly the specified claims', async () => {
    const nowMs = Date.now();
    const body = enc.encode('{"hello":"world"}');
    const token = signRequest({ signingKey: KEY, issuer: 'Ferry', url: URL, body, nowMs });

    expect(decodeProtectedHeader(token)).toEqual({ alg: 'HS256', typ: 'JWT' });
    const { payload } = await jwtVerify(token, enc.encode(KEY), {
      issuer: 'Ferry',
      algorithms: ['HS256'],
    });
    const iat = Math.floor(nowMs / 1000);
    expect(Object.keys(payload).sort()).toEqual(['body', 'exp', 'iat', 'iss', 'jti', 'nbf', 'sub']);
    expect(payload).toMatchObject({
      iss: 'Ferry',
      sub: URL,
      iat,
      exp: iat + SIGNATURE_TTL_SEC,
      nbf: 0,
      body: expectedBodyHash(body),
    });
    expect(payload.jti).toMatch(/^jwt_[0-9a-f]{32}$/);
  });

  it('gives every token a distinct jti', () => {
    const p = { signingKey: KEY, issuer: 'Ferry', url: URL, body: new Uint8Array(), nowMs: 0 };
    const jtis = new Set(
      Array.from({ length: 200 }, () => {
        const claims = JSON.parse(
          Buffer.from(signRequest(p).split('.')[1] ?? '', 'base64url').toString('utf8'),
        ) as { jti: string };
        return claims.jti;
      }),
    );
    expect(jtis.size).toBe(200);
  });

  it('rejects verification with the wrong key or issuer', async () => {
    const token = signRequest({
      signingKey: KEY,
      issuer: 'Ferry',
      url: URL,
      body: new Uint8Array(),
      nowMs: Date.now(),
    });
    await expect(jwtVerify(token, enc.encode(NEXT), { issuer: 'Ferry' })).rejects.toThrow();
    await expect(jwtVerify(token, enc.encode(KEY), { issuer: 'Upstash' })).rejects.toThrow();
  });

  it.each([
    ['empty', new Uint8Array()],
    ['binary', Uint8Array.from([0, 255, 1, 254, 0x80, 0x7f, 0, 0, 13, 10])],
    ['UTF-8 text', enc.encode('héllo wörld ✓')],
  ])('hashes a %s body without padding', (_name, body) => {
    const token = signRequest({ signingKey: KEY, issuer: 'Ferry', url: URL, body, nowMs: 0 });
    const claims = JSON.parse(
      Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'),
    ) as { body: string };
    expect(claims.body).toBe(expectedBodyHash(body));
    expect(claims.body).not.toContain('=');
    expect(hashBody(body)).toBe(claims.body);
  });

  it('hashes the empty body to the well-known SHA-256 of nothing', () => {
    expect(hashBody(new Uint8Array())).toBe('47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU');
  });
});

describe('signRequest with the official @upstash/qstash Receiver', () => {
  const body = '{"order":42}';
  const sign = (signingKey: string, signedBody = body): string =>
    signRequest({
      signingKey,
      issuer: 'Upstash',
      url: URL,
      body: enc.encode(signedBody),
      nowMs: Date.now(),
    });

  it('verifies a token signed with the current key', async () => {
    const receiver = new UpstashReceiver({ currentSigningKey: KEY, nextSigningKey: NEXT });
    await expect(receiver.verify({ signature: sign(KEY), body, url: URL })).resolves.toBe(true);
  });

  it('falls back to the next key when the current one does not match', async () => {
    const receiver = new UpstashReceiver({ currentSigningKey: 'sig_wrong', nextSigningKey: NEXT });
    await expect(receiver.verify({ signature: sign(NEXT), body, url: URL })).resolves.toBe(true);
  });

  // Its `body` is a string (hashed as UTF-8), so binary bodies are covered by the jose tests above.
  it('verifies an empty body', async () => {
    const receiver = new UpstashReceiver({ currentSigningKey: KEY, nextSigningKey: NEXT });
    await expect(receiver.verify({ signature: sign(KEY, ''), body: '', url: URL })).resolves.toBe(
      true,
    );
  });

  it('rejects a tampered body', async () => {
    const receiver = new UpstashReceiver({ currentSigningKey: KEY, nextSigningKey: NEXT });
    await expect(
      receiver.verify({ signature: sign(KEY), body: '{"order":43}', url: URL }),
    ).rejects.toThrow(/body hash does not match/);
  });

  it('rejects a token signed with neither key', async () => {
    const receiver = new UpstashReceiver({ currentSigningKey: KEY, nextSigningKey: NEXT });
    await expect(
      receiver.verify({ signature: sign('sig_other'), body, url: URL }),
    ).rejects.toThrow();
  });
});
