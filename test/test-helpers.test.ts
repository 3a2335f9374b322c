/** The test harness itself: a node whose start fails leaves nothing behind. */
import { existsSync } from 'node:fs';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { pgUrl, startFerry, STORAGES } from './helpers/ferry.js';

describe.each(STORAGES)('startFerry on %s', (storage) => {
  it('removes the data directory and the schema when the start throws', async () => {
    let dataDir = '';
    const schemaName = `ferry_test_failed_${Date.now()}`;
    await expect(
      startFerry({
        storage,
        schemaName,
        configure: (config) => {
          dataDir = config.dataDir;
          config.port = -1; // listen refuses it, after storage is open and migrated
        },
      }),
    ).rejects.toThrow();
    expect(dataDir).not.toBe('');
    expect(existsSync(dataDir)).toBe(false);
    if (storage === 'postgres') {
      const sql = postgres(pgUrl ?? '', { onnotice: () => undefined });
      try {
        expect(await sql`SELECT 1 FROM pg_namespace WHERE nspname = ${schemaName}`).toHaveLength(0);
      } finally {
        await sql.end();
      }
    }
  });
});
