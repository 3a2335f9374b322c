/**
 * Builders for the conformance suite. Every builder makes fresh random ids, so tests sharing one
 * database (a PostgreSQL test database keeps rows between runs) never see each other's rows.
 */
import type {
  Account,
  ClaimedMessage,
  DlqEntry,
  EventRecord,
  Message,
  MessageRef,
} from '../../core/types.js';
import { newDlqId, newId, newMessageId, newSigningKey } from '../../core/ids.js';
import type { Executor, Lease } from '../driver.js';

/** The suite's "now": 2026-01-01T00:00:00Z. */
export const T0 = Date.UTC(2026, 0, 1);

/** The largest valid JavaScript date; used to claim (and so clear) every message. */
export const FAR_FUTURE = 8_640_000_000_000_000;

/** A body that a text or JSON mapping would corrupt: NUL, 0xff, invalid UTF-8. */
export const BINARY_BODY = new Uint8Array([0x00, 0xff, 0x7b, 0x00, 0xc3, 0x28, 0xfe, 0x0a]);

export function makeAccount(overrides: Partial<Account> = {}): Account {
  return {
    id: newId('acct'),
    plan: 'free',
    passwordHash: 'a'.repeat(64),
    currentSigningKey: newSigningKey(),
    nextSigningKey: newSigningKey(),
    createdAt: T0,
    ...overrides,
  };
}

/** A message with every optional field absent, due at its creation time. */
export function makeMessage(accountId: string, overrides: Partial<Message> = {}): Message {
  const createdAt = overrides.createdAt ?? T0;
  return {
    id: newMessageId(createdAt),
    accountId,
    url: 'https://example.com/hook',
    callerIp: '203.0.113.7',
    retried: 0,
    maxRetries: 3,
    notBefore: createdAt,
    createdAt,
    dueAt: createdAt,
    spec: { method: 'POST', headers: { 'Content-Type': ['application/json'] } },
    body: new TextEncoder().encode('{"hello":"world"}'),
    ...overrides,
  };
}

/** A message with every optional field present, a binary body and nested spec JSON. */
export function makeFullMessage(accountId: string, overrides: Partial<Message> = {}): Message {
  return makeMessage(accountId, {
    url: 'http://api.example.com:8080/v1/hooks?x=1&y=%20',
    topicName: 'orders',
    endpointName: 'billing',
    queueName: 'fifo-1',
    scheduleId: newId('scd'),
    callerIp: '2001:db8::1',
    retried: 2,
    maxRetries: 5,
    notBefore: T0 + 1_000,
    createdAt: T0,
    dueAt: T0 + 60_000,
    spec: {
      method: 'PUT',
      headers: {
        'Content-Type': ['application/octet-stream'],
        'X-Multi': ['one', 'two, with comma', ''],
        'X-Unicode': ['héllo ✓'],
      },
      labels: ['red', 'blue'],
      retryDelayExpression: 'pow(2, retried) * 1000',
      timeoutMs: 15_000,
      flowControl: { key: 'fc-key', parallelism: 2, rate: 10, periodSec: 60 },
    },
    body: BINARY_BODY,
    ...overrides,
  });
}

/** The message fields an event or DLQ entry copies. */
export function messageRef(message: Message): MessageRef {
  const ref: MessageRef = {
    messageId: message.id,
    accountId: message.accountId,
    url: message.url,
    method: message.spec.method,
    callerIp: message.callerIp,
  };
  if (message.topicName !== undefined) ref.topicName = message.topicName;
  if (message.endpointName !== undefined) ref.endpointName = message.endpointName;
  if (message.queueName !== undefined) ref.queueName = message.queueName;
  if (message.scheduleId !== undefined) ref.scheduleId = message.scheduleId;
  if (message.spec.labels !== undefined) ref.labels = message.spec.labels;
  if (message.spec.flowControl !== undefined) ref.flowControlKey = message.spec.flowControl.key;
  return ref;
}

/** An event of `message`; a CREATED event carries the message's headers and body. */
export function makeEvent(message: Message, overrides: Partial<EventRecord> = {}): EventRecord {
  const state = overrides.state ?? 'CREATED';
  const event: EventRecord = {
    ...messageRef(message),
    time: message.createdAt,
    state,
    retried: message.retried,
    maxRetries: message.maxRetries,
    ...overrides,
  };
  if (state === 'CREATED' && !('header' in overrides)) event.header = message.spec.headers;
  if (state === 'CREATED' && !('body' in overrides)) event.body = message.body;
  return event;
}

export function makeDlqEntry(message: Message, overrides: Partial<DlqEntry> = {}): DlqEntry {
  const createdAt = overrides.createdAt ?? T0;
  return {
    dlqId: newDlqId(createdAt),
    message,
    createdAt,
    expiresAt: createdAt + 7 * 86_400_000,
    ...overrides,
  };
}

export const leaseOf = (m: ClaimedMessage): Lease => ({ id: m.id, leaseToken: m.leaseToken });

/**
 * Deletes every message in the database (by claiming them all with a lease far in the future).
 * Claiming has no account scope, so the claim cases start from an empty table; run the suite on
 * a database no one else uses meanwhile.
 */
export async function clearMessages(executor: Executor): Promise<void> {
  for (;;) {
    // Waiting messages of flow-control keys and queues are admitted first (a round at a time,
    // as their limits allow); a gate with nothing left waiting is then no longer ready.
    const { admitted } = await executor.flowGateAdmit({ now: FAR_FUTURE, limit: 10_000 });
    const claimed = await executor.messageClaimDue({
      now: FAR_FUTURE,
      limit: 1_000,
      leaseUntil: FAR_FUTURE,
    });
    if (claimed.length === 0 && admitted === 0) return;
    await executor.messageDeleteLeasedMany({ leases: claimed.map(leaseOf) });
  }
}

/**
 * A deep copy where every byte array (a driver may return a Buffer, a Uint8Array subclass) is a
 * plain Uint8Array, so `toEqual` compares bytes rather than classes.
 */
export function plain<T>(value: T): T {
  return normalize(value) as T;
}

function normalize(value: unknown): unknown {
  if (value instanceof Uint8Array) return Uint8Array.from(value);
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v)]));
  }
  return value;
}

/**
 * When the engine would claim next as of `after` (the claim's `nextDueAt`), read by a claim that
 * takes nothing; without `after`, counting every waiting message.
 */
export async function nextDueAt(
  ex: Executor,
  after = Number.MIN_SAFE_INTEGER,
): Promise<number | undefined> {
  const claim = await ex.messageClaimDueLimited({
    now: after,
    limit: 0,
    leaseUntil: after,
    maxInFlightByPlan: {},
  });
  return claim.nextDueAt;
}
