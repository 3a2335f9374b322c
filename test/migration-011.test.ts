/**
 * Migration 011 (bodies stored once) moves the bodies of existing rows: a database at version 10
 * with large bodies in messages, events and the DLQ reads the same bytes after the upgrade, with
 * each large body in `bodies` (a waiting message and its CREATED event sharing one), small ones
 * left inline, and every moved body freed once its rows go.
 */
import { describe, expect, it } from 'vitest';
import type { Driver } from '../src/storage/driver.js';
import { dlqMessageJson } from '../src/storage/sql/rows.js';
import { makeMessage } from '../src/storage/conformance/fixtures.js';
import { STORAGES } from './helpers/ferry.js';
import { upgradedFrom } from './helpers/old-database.js';

const BIG = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 31 + 7) % 256));
const SMALL = Buffer.from('{"small":true}');
const T = 1_700_000_000_000;
const ACCOUNT = 'acct_migrated';

/** The rows a version-10 database holds: [table, columns, values] with `?` placeholders. */
function oldRows(): [string, string[], unknown[]][] {
  const message = (id: string, body: Buffer): [string, string[], unknown[]] => [
    'messages',
    [
      'id',
      'account_id',
      'url',
      'url_host',
      'url_path',
      'caller_ip',
      'retried',
      'max_retries',
      'not_before',
      'created_at',
      'due_at',
      'spec',
      'body',
    ],
    [
      id,
      ACCOUNT,
      'https://example.com/x',
      'example.com',
      '/x',
      '127.0.0.1',
      0,
      3,
      T,
      T,
      T,
      '{"method":"POST","headers":{}}',
      body,
    ],
  ];
  const event = (messageId: string, body: Buffer): [string, string[], unknown[]] => [
    'events',
    [
      'account_id',
      'message_id',
      'time',
      'state',
      'url',
      'url_host',
      'url_path',
      'method',
      'caller_ip',
      'retried',
      'max_retries',
      'header',
      'body',
    ],
    [
      ACCOUNT,
      messageId,
      T,
      'CREATED',
      'https://example.com/x',
      'example.com',
      '/x',
      'POST',
      '127.0.0.1',
      0,
      3,
      '{}',
      body,
    ],
  ];
  const failed = makeMessage(ACCOUNT, { id: 'msg_failed', body: BIG });
  return [
    message('msg_waiting', BIG),
    event('msg_waiting', BIG),
    message('msg_small', SMALL),
    event('msg_small', SMALL),
    event('msg_failed', BIG),
    [
      'dlq',
      [
        'dlq_id',
        'account_id',
        'message_id',
        'created_at',
        'expires_at',
        'url',
        'url_host',
        'url_path',
        'caller_ip',
        'message',
        'body',
      ],
      [
        'dlq_1',
        ACCOUNT,
        'msg_failed',
        T,
        T + 86_400_000,
        failed.url,
        'example.com',
        '/hook',
        '127.0.0.1',
        dlqMessageJson(failed),
        BIG,
      ],
    ],
  ];
}

async function checkMigrated(driver: Driver): Promise<void> {
  await driver.migrate();
  const ex = driver.executor;
  expect(await ex.bodyUsage()).toEqual({ count: 3, bytes: 300_000 });
  const waiting = await ex.messageGet({ accountId: ACCOUNT, id: 'msg_waiting' });
  expect(Buffer.from(waiting?.body ?? []).equals(BIG)).toBe(true);
  const small = await ex.messageGet({ accountId: ACCOUNT, id: 'msg_small' });
  expect(Buffer.from(small?.body ?? []).equals(SMALL)).toBe(true);
  const entry = await ex.dlqGet({ accountId: ACCOUNT, dlqId: 'dlq_1' });
  expect(Buffer.from(entry?.message.body ?? []).equals(BIG)).toBe(true);
  const events = await ex.eventList({ accountId: ACCOUNT, filter: {}, count: 10, bodyCut: 1_000 });
  expect(events.items).toHaveLength(3);
  for (const event of events.items) {
    const whole = event.messageId === 'msg_small' ? SMALL : BIG;
    expect(Buffer.from(event.body ?? []).equals(whole.subarray(0, 1_000))).toBe(true);
  }

  // Everything deleted: every moved body is freed.
  await ex.messageDeleteMany({ accountId: ACCOUNT, filter: {} });
  await ex.eventDeleteBefore({ before: T + 1, limit: 100 });
  await ex.dlqDeleteMany({ accountId: ACCOUNT, dlqIds: ['dlq_1'] });
  expect(await ex.bodyDeleteUnreferenced({ limit: 100 })).toBe(3);
  expect(await ex.bodyUsage()).toEqual({ count: 0, bytes: 0 });
}

describe.each(STORAGES)('migration 011 on %s', (storage) => {
  it('moves large bodies of existing messages, events and DLQ entries into bodies', async () => {
    await upgradedFrom(storage, 11, oldRows(), checkMigrated);
  });
});
