/**
 * Graceful stop: in-flight deliveries get the grace period; what is still running after it is
 * released (due again, no attempt counted) and delivered after a restart on the same data.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createFerry } from '../src/app.js';
import { loadConfig } from '../src/cli/config.js';
import { createAccount } from '../src/cli/credentials.js';
import { silentLogger } from '../src/core/logger.js';
import { FerryClient } from '../src/sdk/index.js';
import { startReceiver } from './helpers/receiver.js';

const dataDir = mkdtempSync(join(tmpdir(), 'ferry-shutdown-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('graceful stop', () => {
  it('releases a delivery still in flight after the grace period, without counting an attempt', async () => {
    const config = loadConfig(
      ['--port', '0', '--data-dir', dataDir, '--log-level', 'silent', '--shutdown-grace', '1s'],
      {},
    );
    const dest = await startReceiver((_req, i) => (i === 0 ? { hang: true } : { status: 200 }));
    const first = await createFerry({ config, logger: silentLogger });
    await first.start();
    const { token } = await createAccount({
      executor: first.driver.executor,
      plan: 'paid',
      now: Date.now(),
    });
    const client = new FerryClient({ baseUrl: first.url, token });
    const { messageId } = (await client.publish({
      destination: `${dest.url}/slow`,
      body: 'x',
    })) as {
      messageId: string;
    };
    await dest.waitFor(1); // the first attempt is in flight and will never be answered
    await first.stop();

    const second = await createFerry({ config, logger: silentLogger });
    await second.start();
    try {
      const [, retry] = await dest.waitFor(2);
      expect(retry?.headers['svc-message-id']).toBe(messageId);
      expect(retry?.headers['svc-retried']).toBe('0'); // the interrupted attempt did not count
      const client2 = new FerryClient({ baseUrl: second.url, token });
      const { events } = await client2.events.list({ filter: { messageId } });
      expect(events.map((e) => e.state)).not.toContain('ERROR');
    } finally {
      await second.stop();
      await dest.close();
    }
  });
});
