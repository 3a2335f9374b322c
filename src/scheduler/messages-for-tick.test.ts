import { describe, expect, it } from 'vitest';
import { FerryError } from '../core/errors.js';
import { DEFAULT_PLANS } from '../core/plans.js';
import type { Schedule } from '../core/schedule.js';
import type { Account } from '../core/types.js';
import { messagesForTick } from './messages-for-tick.js';

const TICK = Date.UTC(2026, 0, 1, 3, 0);
const account: Account = {
  id: 'acct_1',
  plan: 'free',
  passwordHash: '',
  currentSigningKey: 'sig_a',
  nextSigningKey: 'sig_b',
  createdAt: 0,
};

function schedule(headers: Record<string, string[]>, overrides: Partial<Schedule> = {}): Schedule {
  return {
    id: 'nightly',
    accountId: account.id,
    cron: '0 3 * * *',
    destination: 'https://example.com/report?x=1',
    createdAt: 0,
    paused: false,
    request: { headers, query: [] },
    spec: { method: 'POST', headers: {}, retries: 3 },
    body: new TextEncoder().encode('{"a":1}'),
    callerIp: '203.0.113.9',
    ...overrides,
  };
}

const tick = (s: Schedule, now = TICK + 5_000) =>
  messagesForTick({
    schedule: s,
    account,
    plan: DEFAULT_PLANS.free,
    prefix: 'Svc',
    tick: TICK,
    now,
  });

describe('messagesForTick', () => {
  it('keeps a flow-control key ".." stored before such keys were refused', () => {
    const [message] = tick(
      schedule({ 'svc-flow-control-key': ['..'], 'svc-flow-control-value': ['parallelism=1'] }),
    );
    expect(message?.spec.flowControl?.key).toBe('..');
  });

  it('reads a delay stored before durations had to be written d, h, m, s once each', () => {
    // Accepted when the schedule was made; refusing it now would fail every tick.
    const [message] = tick(schedule({ 'svc-delay': ['30m1h'] }));
    expect(message?.notBefore).toBe(TICK + 90 * 60_000);
  });

  it('builds one message as a publish of the stored request at the tick', () => {
    const [message, ...rest] = tick(
      schedule(
        {
          'content-type': ['application/json'],
          'svc-method': ['PUT'],
          'svc-forward-x-tenant': ['acme'],
          'svc-retries': ['1'],
          'svc-label': ['a,b'],
        },
        { queueName: 'reports' },
      ),
    );
    expect(rest).toEqual([]);
    expect(message).toMatchObject({
      accountId: 'acct_1',
      url: 'https://example.com/report?x=1',
      scheduleId: 'nightly',
      queueName: 'reports',
      callerIp: '203.0.113.9',
      maxRetries: 1,
      retried: 0,
      notBefore: TICK,
      createdAt: TICK + 5_000,
      dueAt: TICK + 5_000,
      spec: {
        method: 'PUT',
        headers: { 'Content-Type': ['application/json'], 'X-Tenant': ['acme'] },
        labels: ['a', 'b'],
      },
    });
    expect(new TextDecoder().decode(message?.body)).toBe('{"a":1}');
  });

  it('counts Svc-Delay from the tick; query-parameter settings count too', () => {
    const s = schedule({}, { request: { headers: {}, query: [['svc-delay', '2m']] } });
    const [message] = tick(s);
    expect(message?.notBefore).toBe(TICK + 120_000);
    expect(message?.dueAt).toBe(TICK + 120_000);
  });

  it('makes a new message id at every tick and ignores deduplication settings', () => {
    const s = schedule({ 'svc-deduplication-id': ['same'] });
    const ids = new Set([...tick(s), ...tick(s)].map((m) => m.id));
    expect(ids.size).toBe(2);
  });

  it.each([
    ['a setting the plan no longer allows', { 'svc-retries': ['10'] }, {}, 412, /max_retries/],
    ['a URL-group destination (groups are not built yet)', {}, { destination: 'ops' }, 404, /ops/],
  ])('throws a FerryError for %s', (_name, headers, overrides, status, message) => {
    let error: unknown;
    try {
      tick(schedule(headers, overrides));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FerryError);
    expect((error as FerryError).status).toBe(status);
    expect((error as FerryError).message).toMatch(message);
  });
});
