/**
 * SQLite with no room left: the database file reaches its size limit (`--sqlite-max-size`,
 * SQLite's `max_page_count`, which fails writes with the same `SQLITE_FULL` as a full disk) under
 * publishing. Publishes are then answered 503 with Retry-After and nothing is stored, `/ready`
 * says storage is full, nothing acknowledged is lost, and once space returns (deliveries and the
 * events log's retention free pages) publishing and delivery go on without a restart.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/core/clock.js';
import { startFerry, type TestFerry } from './helpers/ferry.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

/** Small enough to fill in a few hundred publishes, larger than the empty schema. */
const MAX_SIZE = 1024 * 1024;
/** Under the 4 KiB from which bodies are stored apart: each publish adds two copies inline. */
const BODY = 'x'.repeat(3_000);

describe('SQLite full (size limit)', () => {
  let t: TestFerry;
  let clock: ManualClock;
  let receiver: Receiver;

  beforeEach(async () => {
    clock = new ManualClock(Date.now());
    receiver = await startReceiver();
    t = await startFerry({
      clock,
      engine: false,
      args: ['--sqlite-max-size', String(MAX_SIZE), '--event-retention', '1h'],
    });
  });
  afterEach(async () => {
    await t.close();
    await receiver.close();
  });

  const publish = (path: string): Promise<Response> =>
    t.api(`/v2/publish/${receiver.url}${path}`, { method: 'POST', body: BODY });

  async function ready(): Promise<{ status: number; body: { status: string; error?: string } }> {
    const res = await fetch(`${t.url}/ready`);
    return { status: res.status, body: (await res.json()) as { status: string; error?: string } };
  }

  /** The message ids the receiver has been sent. */
  const delivered = (): Set<string> =>
    new Set(receiver.requests.map((r) => String(r.headers['svc-message-id'])));

  it('answers 503 once full, loses nothing acknowledged, and resumes when space returns', async () => {
    const acked: string[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 2_000 && !refused; i++) {
      const res = await publish(`/m${i}`);
      if (res.status === 200) acked.push(((await res.json()) as { messageId: string }).messageId);
      else refused = res;
    }
    if (!refused) throw new Error('the database never filled up');
    const text = await refused.text();
    expect(refused.status, text).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(JSON.parse(text)).toEqual({
      error: 'storage is unavailable; nothing was stored, try again later',
    });
    expect(acked.length).toBeGreaterThan(20);

    // Full: every further publish and batch is refused the same way, and /ready says why.
    for (let i = 0; i < 5; i++) expect((await publish(`/refused${i}`)).status).toBe(503);
    const batch = await t.api('/v2/batch', {
      method: 'POST',
      body: JSON.stringify([{ destination: `${receiver.url}/batch`, body: BODY }]),
    });
    expect(batch.status).toBe(503);
    const whileFull = await ready();
    expect(whileFull.status).toBe(503);
    expect(whileFull.body.error).toMatch(/storage is full/);
    // Reads still work, and every acknowledged message is still there.
    for (const id of acked) expect((await t.api(`/v2/messages/${id}`)).status).toBe(200);

    // Delivering frees the messages' rows; the events log's retention frees the rest.
    for (let round = 0; round < 10 && acked.some((id) => !delivered().has(id)); round++) {
      await t.ferry.engine.runOnce();
    }
    const deliveredWhileFull = acked.filter((id) => delivered().has(id)).length;
    const stillFull = (await ready()).status;
    clock.advance(2 * 3_600_000);
    const pruned = await t.ferry.pruner.runOnce();
    expect(pruned.events).toBeGreaterThan(0);
    console.log(
      `sqlite full: ${acked.length} acknowledged before the first 503; delivered while full ` +
        `${deliveredWhileFull}; /ready after those deliveries ${stillFull}; ` +
        `pruned ${pruned.events} events`,
    );

    // Space has returned: publishing and delivery go on, without a restart.
    const after = await publish('/after');
    expect(after.status, await after.clone().text()).toBe(200);
    const { messageId } = (await after.json()) as { messageId: string };
    await t.ferry.engine.runOnce();
    expect([...acked, messageId].filter((id) => !delivered().has(id))).toEqual([]);
    expect(receiver.requests.some((r) => r.path.startsWith('/refused'))).toBe(false);
    expect(receiver.requests.some((r) => r.path === '/batch')).toBe(false);
    expect((await ready()).status).toBe(200);
  });
});
