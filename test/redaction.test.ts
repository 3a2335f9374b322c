/**
 * Svc-Redact-Fields end to end: a planted secret (in the body and in a header) reaches the
 * destination, and never appears in any read endpoint or in the server's own log output.
 */
import { Writable } from 'node:stream';
import { createHash } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { STORAGES, startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const SECRET = 'sk_live_planted_secret_4242';
const sha = (v: string) => createHash('sha256').update(v).digest('hex');

describe.each(STORAGES)('on %s', (storage) => {
  let t: TestFerry;
  let clock: ManualClock;
  let dest: Receiver;
  let log: string;

  beforeEach(async () => {
    log = '';
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        log += chunk.toString();
        done();
      },
    });
    clock = new ManualClock(Date.now());
    t = await startFerry({
      clock,
      engine: false,
      storage,
      logger: pino({ level: 'debug' }, sink),
    });
    // The destination fails, so the message also goes through ERROR events and into the DLQ.
    dest = await startReceiver(() => ({ status: 500, body: 'no' }));
  });
  afterEach(async () => {
    await t.close();
    await dest.close();
  });

  /** Every read endpoint that can show a message, concatenated. */
  async function everythingReadable(messageIds: string[]): Promise<string> {
    const paths = [
      ...messageIds.map((id) => `/v2/messages/${id}`),
      '/v2/events',
      '/v2/logs',
      '/v2/dlq',
      '/v2/topics',
    ];
    const dlq = (await (await t.api('/v2/dlq')).json()) as { messages: { dlqId: string }[] };
    paths.push(...dlq.messages.map((m) => `/v2/dlq/${m.dlqId}`));
    const bodies = await Promise.all(paths.map(async (p) => (await t.api(p)).text()));
    return bodies.join('\n');
  }

  it('body and header[Authorization]: the destination gets them, no API response or log line shows them', async () => {
    const body = JSON.stringify({ card: SECRET });
    const res = await t.api(`/v2/publish/${dest.url}/pay`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'Svc-Forward-Authorization': `Basic ${SECRET}`,
        'Svc-Forward-X-Visible': 'shown',
        'Svc-Redact-Fields': 'body, header[Authorization]',
        'Svc-Retries': '1',
        'Svc-Retry-Delay': '1000',
      },
      body,
    });
    expect(res.status).toBe(200);
    const { messageId } = (await res.json()) as { messageId: string };

    // Before delivery: the message as the API shows it.
    const message = (await (await t.api(`/v2/messages/${messageId}`)).json()) as Record<
      string,
      unknown
    >;
    expect(message.body).toBe(`REDACTED:${sha(body)}`);
    expect(message.header).toEqual({
      'Content-Type': ['application/json'],
      Authorization: [`REDACTED:${sha(`Basic ${SECRET}`)}`],
      'X-Visible': ['shown'],
    });
    const before = await everythingReadable([messageId]);

    await t.ferry.engine.runOnce();
    clock.advance(1_000);
    await t.ferry.engine.runOnce();
    const [got] = await dest.waitFor(2);
    expect(got?.body.toString()).toBe(body);
    expect(got?.headers.authorization).toBe(`Basic ${SECRET}`);

    // After: events of every state and the DLQ entry (and a retry of it from the DLQ).
    const dlq = (await (await t.api('/v2/dlq')).json()) as { messages: Record<string, unknown>[] };
    expect(dlq.messages).toHaveLength(1);
    expect(dlq.messages[0]?.body).toBe(`REDACTED:${sha(body)}`);
    const retried = await t.api(`/v2/dlq/retry/${String(dlq.messages[0]?.dlqId)}`, {
      method: 'POST',
    });
    expect(retried.status).toBe(201);
    const { messageId: retryId } = (await retried.json()) as { messageId: string };

    const events = (await (await t.api('/v2/events')).json()) as {
      events: Record<string, unknown>[];
    };
    expect(new Set(events.events.map((e) => e.state))).toEqual(
      new Set(['CREATED', 'ACTIVE', 'ERROR', 'RETRY', 'FAILED']),
    );
    for (const event of events.events) {
      expect(event.body).toBe(`REDACTED:${sha(body)}`);
      expect((event.header as Record<string, string[]>).Authorization).toEqual([
        `REDACTED:${sha(`Basic ${SECRET}`)}`,
      ]);
    }

    const after = await everythingReadable([retryId]);
    for (const text of [before, after, log]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(Buffer.from(SECRET).toString('base64').slice(0, 16));
      expect(text).not.toContain(Buffer.from(body).toString('base64'));
    }
    expect(after).toContain(`REDACTED:${sha(body)}`);
  });

  it('header (all headers) set as a URL group default applies to every endpoint message', async () => {
    await t.api('/v2/topics/secret-group/endpoints', {
      method: 'POST',
      body: JSON.stringify({ endpoints: [{ url: `${dest.url}/a` }, { url: `${dest.url}/b` }] }),
    });
    await t.api('/v2/topics/secret-group', {
      method: 'PATCH',
      body: JSON.stringify({ headers: { 'Svc-Redact-Fields': 'headers' } }),
    });
    const res = await t.api('/v2/publish/secret-group', {
      method: 'POST',
      headers: { 'Svc-Forward-X-Api-Key': SECRET, 'Svc-Retries': '0' },
      body: 'public body',
    });
    const results = (await res.json()) as { messageId: string }[];
    expect(results).toHaveLength(2);
    const shown = await everythingReadable(results.map((r) => r.messageId));
    expect(shown).toContain(`REDACTED:${sha(SECRET)}`);
    expect(shown).not.toContain(SECRET);

    await t.ferry.engine.runOnce();
    const got = await dest.waitFor(2);
    expect(got.map((r) => r.headers['x-api-key'])).toEqual([SECRET, SECRET]);
    const all = await everythingReadable([]);
    expect(all).not.toContain(SECRET);
    expect(all).toContain(Buffer.from('public body').toString('base64')); // the body is not redacted
    expect(log).not.toContain(SECRET);
  });
});
