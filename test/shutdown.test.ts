/**
 * Graceful stop: in-flight deliveries get the grace period; what is still running after it is
 * released (due again, no attempt counted) and delivered after a restart on the same data.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { connect } from 'node:net';
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

  it('stops within the grace period while a client does not read the answers it asked for', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-shutdown-reader-'));
    const config = loadConfig(
      ['--port', '0', '--data-dir', dir, '--log-level', 'silent', '--shutdown-grace', '1s'],
      {},
    );
    const ferry = await createFerry({ config, logger: silentLogger });
    await ferry.start();
    const html = await (await fetch(`${ferry.url}/console`)).text();
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1] ?? '';
    expect(asset).not.toBe('');
    // 100 pipelined requests for a 150 KB asset on one connection, never read: far more than
    // the sockets' buffers hold, so the server is still writing an answer when it is stopped.
    const { port } = new URL(ferry.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(`GET ${asset} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`.repeat(100));
    await once(socket, 'data'); // the server is answering; nothing more is read
    socket.pause();
    const started = performance.now();
    await ferry.stop();
    expect(performance.now() - started).toBeLessThan(5_000);
    socket.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
});
