/**
 * Production mode at connect time, with real receivers on 127.0.0.1:
 * - the dispatcher refuses every spelling of a loopback address in a stored URL (a URL stored
 *   before production mode was on is not checked at request time), while the same URLs reach
 *   the receiver in development mode (so the refusal is the check, not a bad URL);
 * - DNS rebinding: a host name is resolved only when connecting, through a resolver the test
 *   controls (the lookup Ferry's dispatcher uses); an answer with a loopback address fails the
 *   attempt with a clear error in the events log, the DLQ and Ferry's log, and nothing reaches
 *   the receiver;
 * - redirects: a destination answering 301, 302, 303, 307 or 308 is not followed; the attempt's
 *   outcome is the 3xx and the redirect's target receives nothing.
 */
import type { LookupAddress, lookup as dnsLookup } from 'node:dns';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { silentLogger, type Logger } from '../src/core/logger.js';
import { createHttpDispatcher, PRIVATE_ADDRESS_ERROR } from '../src/engine/dispatcher.js';
import { startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/** Spellings of 127.0.0.1 as a URL host (port added by the test). */
const LOOPBACK_SPELLINGS = [
  '127.0.0.1',
  '2130706433',
  '0177.0.0.1',
  '017700000001',
  '0x7f.0.0.1',
  '0x7f000001',
  '127.1',
  '0x7f.1',
  '0177.0.1',
  '127.000.000.001',
  '127.0.0.1.',
  '2130706433.',
  '%31%32%37.0.0.1',
];
/** IPv6 spellings that embed 127.0.0.1 or are loopback (no IPv4 receiver to compare with). */
const LOOPBACK_V6 = ['[::1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::127.0.0.1]'];

let receiver: Receiver;
beforeEach(async () => {
  receiver = await startReceiver();
});
afterEach(async () => {
  await receiver.close();
});

const port = (): string => new URL(receiver.url).port;

describe('the dispatcher at connect time', () => {
  const send = (refusePrivate: boolean, url: string) => {
    const dispatcher = createHttpDispatcher({ refusePrivate });
    return dispatcher
      .send({
        url,
        method: 'POST',
        headers: {},
        body: new Uint8Array(),
        timeoutMs: 10_000,
        maxResponseBytes: 1024,
      })
      .finally(() => dispatcher.close());
  };

  it.each(LOOPBACK_SPELLINGS)(
    'refuses %s in production mode, reaches it in development mode',
    async (host) => {
      const url = `http://${host}:${port()}/x`;
      expect(await send(true, url)).toEqual({ kind: 'error', error: PRIVATE_ADDRESS_ERROR });
      expect(receiver.requests).toHaveLength(0);
      expect(await send(false, url)).toMatchObject({ kind: 'response', status: 200 });
      expect(receiver.requests).toHaveLength(1);
    },
  );

  it.each(LOOPBACK_V6)('refuses %s in production mode', async (host) => {
    expect(await send(true, `http://${host}:${port()}/x`)).toEqual({
      kind: 'error',
      error: PRIVATE_ADDRESS_ERROR,
    });
    expect(receiver.requests).toHaveLength(0);
  });
});

/** A resolver whose answer the test sets; it records the names it was asked. */
function controlledResolver(): {
  lookup: typeof dnsLookup;
  asked: string[];
  answer: (addresses: string[]) => void;
} {
  let current: LookupAddress[] = [];
  const asked: string[] = [];
  const lookup = (
    hostname: string,
    options: { all?: boolean },
    callback: (e: Error | null, a: LookupAddress[] | string, f?: number) => void,
  ): void => {
    asked.push(hostname);
    const addresses = [...current];
    setImmediate(() => {
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(new Error(`no answer for ${hostname}`), '', 0);
      callback(null, first.address, first.family);
    });
  };
  return {
    lookup: lookup as unknown as typeof dnsLookup,
    asked,
    answer(addresses) {
      current = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
  };
}

describe('DNS rebinding: the name is checked on the address the socket connects to', () => {
  let t: TestFerry;
  let clock: ManualClock;
  let resolver: ReturnType<typeof controlledResolver>;
  const logged: { msg: string; fields: Record<string, unknown> }[] = [];
  const record =
    (level: string) =>
    (obj: object | string, msg?: string): void => {
      if (typeof obj === 'object') logged.push({ msg: `${level} ${msg}`, fields: { ...obj } });
    };
  const logger: Logger = { ...silentLogger, debug: record('debug'), info: record('info') };

  async function start(production: boolean): Promise<void> {
    clock = new ManualClock(Date.now());
    resolver = controlledResolver();
    t = await startFerry({
      clock,
      engine: false,
      logger,
      args: production ? ['--production'] : [],
      dispatcher: createHttpDispatcher({ refusePrivate: production, lookup: resolver.lookup }),
    });
  }
  afterEach(async () => {
    await t.close();
    logged.length = 0;
  });

  it('production mode: a name that answers 127.0.0.1 when connecting is refused, counted as a failed attempt', async () => {
    await start(true);
    // At publish time the name would resolve to a public address: Ferry does not ask (a name is
    // resolved only when connecting), so that answer can never be the one that was checked.
    resolver.answer(['93.184.215.14']);
    const res = await t.api(`/v2/publish/http://rebind.test:${port()}/hook`, {
      method: 'POST',
      headers: { 'Svc-Retries': '1', 'Svc-Retry-Delay': '1000' },
      body: 'x',
    });
    expect(res.status).toBe(200);
    const { messageId } = (await res.json()) as { messageId: string };
    expect(resolver.asked).toEqual([]);

    // Rebound: the connect-time answer is loopback.
    resolver.answer(['127.0.0.1']);
    await t.ferry.engine.runOnce();
    expect(resolver.asked).toContain('rebind.test');
    // Then a mixed answer: one private address among public ones is enough to refuse.
    resolver.answer(['93.184.215.14', '127.0.0.1']);
    clock.advance(1_000);
    await t.ferry.engine.runOnce();
    expect(receiver.requests).toHaveLength(0);

    const events = (await (await t.api(`/v2/events?messageId=${messageId}`)).json()) as {
      events: { state: string; error?: string }[];
    };
    const failures = events.events.filter((e) => e.error === PRIVATE_ADDRESS_ERROR);
    // Two attempts, each an ERROR with the reason, then the message FAILED (to the DLQ).
    expect(failures.map((e) => e.state).sort()).toEqual(['ERROR', 'ERROR', 'FAILED']);
    const dlq = (await (await t.api('/v2/dlq')).json()) as {
      messages: { messageId: string; error?: string }[];
    };
    expect(dlq.messages).toMatchObject([{ messageId, error: PRIVATE_ADDRESS_ERROR }]);
    const attempts = logged.filter((l) => l.msg === 'debug delivery attempt');
    expect(attempts.map((l) => l.fields)).toEqual([
      expect.objectContaining({ messageId, outcome: 'retried', error: PRIVATE_ADDRESS_ERROR }),
      expect.objectContaining({ messageId, outcome: 'failed', error: PRIVATE_ADDRESS_ERROR }),
    ]);
    expect(
      logged.find((l) => l.msg === 'info message failed: moved to the DLQ')?.fields,
    ).toMatchObject({ messageId, error: PRIVATE_ADDRESS_ERROR });
  });

  it('development mode: the same resolver and name reach the receiver (the lookup is the one used)', async () => {
    await start(false);
    resolver.answer(['127.0.0.1']);
    const res = await t.api(`/v2/publish/http://rebind.test:${port()}/hook`, {
      method: 'POST',
      body: 'x',
    });
    expect(res.status).toBe(200);
    await t.ferry.engine.runOnce();
    expect(receiver.requests.map((r) => r.path)).toEqual(['/hook']);
    expect(resolver.asked).toContain('rebind.test');
  });
});

describe('redirects are never followed', () => {
  let t: TestFerry;
  let target: Receiver;
  beforeEach(async () => {
    target = await startReceiver();
    // Development mode (loopback receivers), with the dispatcher the configuration builds.
    t = await startFerry({ clock: new ManualClock(Date.now()), engine: false });
  });
  afterEach(async () => {
    await t.close();
    await target.close();
  });

  it.each([301, 302, 303, 307, 308])(
    '%i: the attempt is the 3xx, the target gets nothing',
    async (status) => {
      receiver.respond(() => ({ status, headers: { location: `${target.url}/elsewhere` } }));
      const res = await t.api(`/v2/publish/${receiver.url}/moved`, {
        method: 'POST',
        headers: { 'Svc-Retries': '0' },
        body: 'x',
      });
      expect(res.status).toBe(200);
      const { messageId } = (await res.json()) as { messageId: string };
      await t.ferry.engine.runOnce();
      expect(receiver.requests).toHaveLength(1);
      expect(target.requests).toHaveLength(0);
      const dlq = (await (await t.api('/v2/dlq')).json()) as {
        messages: { messageId: string; responseStatus?: number }[];
      };
      expect(dlq.messages).toMatchObject([{ messageId, responseStatus: status }]);
    },
  );
});
