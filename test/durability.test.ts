/**
 * Nothing acknowledged is lost when Ferry is killed: publish a few hundred messages to a slow,
 * sometimes failing receiver, SIGKILL Ferry mid-way, restart it on the same data, and check that
 * every acknowledged message is delivered. A message may arrive twice only if its delivery was
 * in flight at the kill (answered by the receiver but not yet recorded by Ferry).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startFerryProcess } from './helpers/process.js';
import { startReceiver } from './helpers/receiver.js';

const dataDir = mkdtempSync(join(tmpdir(), 'ferry-durability-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('durability', () => {
  it(
    'delivers every acknowledged message after a SIGKILL and restart',
    { timeout: 120_000 },
    async () => {
      const TOTAL = 400;
      const KILL_AFTER = 120; // receiver requests before the kill
      // Short lease so the test does not wait the default 30 s for the dead process's leases.
      const args = ['--lease', '2s'];

      const successAt = new Map<string, number[]>(); // message id → times answered 200
      let phase: 'before' | 'after' = 'before';
      const deliveredBeforeKill = new Set<string>();
      let onProgress: () => void = () => undefined;
      const dest = await startReceiver(async (req, index) => {
        const id = req.headers['svc-message-id'] as string;
        await new Promise((r) => setImmediate(r)); // a little latency, so deliveries overlap
        const retried = Number(req.headers['svc-retried']);
        // Every 7th request fails once, so retries are in play around the kill.
        const ok = !(index % 7 === 0 && retried === 0);
        if (ok) {
          successAt.set(id, [...(successAt.get(id) ?? []), index]);
          if (phase === 'before') deliveredBeforeKill.add(id);
        }
        onProgress();
        return { status: ok ? 200 : 500 };
      });

      const first = await startFerryProcess({ dataDir, args });
      const { baseUrl, token } = first.credentials;
      const acked = new Set<string>();
      let killed = false;
      const killedAt = new Promise<void>((resolve) => {
        onProgress = () => {
          if (!killed && dest.requests.length >= KILL_AFTER) {
            killed = true;
            first.proc.kill('SIGKILL');
            resolve();
          }
        };
      });

      // 8 concurrent publishers; publishes after the kill fail and are not acknowledged.
      let next = 0;
      const publisher = async (): Promise<void> => {
        while (next < TOTAL && !killed) {
          const i = next++;
          try {
            const res = await fetch(`${baseUrl}/v2/publish/${dest.url}/m${i}`, {
              method: 'POST',
              headers: {
                authorization: `Bearer ${token}`,
                'Svc-Retry-Delay': '50',
                'Svc-Retries': '3',
              },
              body: `message ${i}`,
            });
            if (res.status === 200)
              acked.add(((await res.json()) as { messageId: string }).messageId);
          } catch {
            // connection refused after the kill: not acknowledged, so not owed
          }
        }
      };
      await Promise.all(Array.from({ length: 8 }, publisher));
      await killedAt;
      await first.exited;
      phase = 'after';
      const inFlightAtKill = new Set(deliveredBeforeKill);
      expect(acked.size).toBeGreaterThan(KILL_AFTER / 2);

      const second = await startFerryProcess({ dataDir, args });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          const missing = [...acked].filter((id) => !successAt.has(id));
          reject(
            new Error(
              `${missing.length} acknowledged messages not delivered, e.g. ${missing.slice(0, 3).join(', ')}`,
            ),
          );
        }, 60_000);
        const check = (): void => {
          if ([...acked].every((id) => successAt.has(id))) {
            clearTimeout(timer);
            resolve();
          }
        };
        onProgress = check;
        check();
      });
      expect(await second.kill('SIGTERM')).toBe(0);

      const duplicates = [...successAt.entries()]
        .filter(([, times]) => times.length > 1)
        .map(([id]) => id);
      // A duplicate is only allowed for a delivery that had reached the receiver before the kill.
      expect(duplicates.filter((id) => !inFlightAtKill.has(id))).toEqual([]);
      console.log(
        `durability: ${acked.size} acknowledged, all delivered; ${duplicates.length} delivered twice ` +
          `(in flight at the kill); ${dest.requests.length} requests in all`,
      );
      await dest.close();
    },
  );
});
