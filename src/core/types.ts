/**
 * Domain types shared by every layer. Pure data: no I/O, no classes.
 *
 * Times are Unix milliseconds unless a name says otherwise (`…Sec`). Durations carry their unit
 * in the name (`timeoutMs`, `periodSec`).
 */

import type { Redaction } from './redaction.js';
import type { MessageWorkflow } from './workflow.js';

/** Header map as stored and shown by the API: canonical name (`Content-Type`) → values. */
export type HeaderMap = Record<string, string[]>;

export type PlanName = 'free' | 'paid';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A messaging account: the tenant that publishes and owns messages, DLQ entries and keys. */
export interface Account {
  id: string;
  plan: PlanName;
  /** SHA-256 hex of the account password; the token embeds the password itself. */
  passwordHash: string;
  /**
   * The password sealed with Ferry's secret key (core/secret-box.ts), so its owner can read it
   * again; absent for an account from before the secret key (only its hash was kept).
   */
  passwordSealed?: string;
  /** HS256 key (UTF-8 bytes of this string) that signs every outgoing request. */
  currentSigningKey: string;
  /** The key that becomes current on rotation; receivers verify with it as a fallback. */
  nextSigningKey: string;
  createdAt: number;
  /** The management user that owns the account; absent for accounts no user owns. */
  ownerId?: string;
  /** Region label shown by the management API; absent means the default (`us-east-1`). */
  region?: AccountRegion;
  /** Monthly spending budget in dollars; absent or 0 means no limit. */
  budget?: number;
  /** When the plan was last changed (ms); absent when it never was. */
  planChangedAt?: number;
}

export type AccountRegion = 'eu-central-1' | 'us-east-1';
export const ACCOUNT_REGIONS: readonly AccountRegion[] = ['eu-central-1', 'us-east-1'];

/** Flow-control settings of a message (`Svc-Flow-Control-Key/-Value`; see core/flow-control.ts). */
export interface FlowControl {
  key: string;
  parallelism?: number;
  rate?: number;
  /** Rate period in seconds (default 1). */
  periodSec?: number;
}

/**
 * Where and how a callback (`<P>-Callback`) or failure callback (`<P>-Failure-Callback`) is
 * sent. Each callback is a message of its own, built from this when the source's attempt ends.
 */
export interface CallbackSpec {
  url: string;
  method: HttpMethod;
  /** `<P>-Callback-Forward-<Name>` headers, canonical names. */
  headers: HeaderMap;
  /** `<P>-Callback-Retries`; absent: the source message's retries. */
  retries?: number;
  retryDelayExpression?: string;
  /** Shorter than the plan's timeout, ms. */
  timeoutMs?: number;
  /** `<P>-Callback-Delay`, ms after the source's attempt ended. */
  delayMs?: number;
}

/**
 * Everything about a message that is not an index or filter column. Stored as JSON, so later
 * features (callbacks, redaction, workflows) add optional fields here without a migration.
 */
export interface MessageSpec {
  method: HttpMethod;
  /** Headers the destination receives (forwarded headers, Content-Type), canonical names. */
  headers: HeaderMap;
  /** Every label of `Svc-Label`, in order; `labels[0]` is the legacy `label`. */
  labels?: string[];
  /** `Svc-Retry-Delay` expression source, validated at publish time. */
  retryDelayExpression?: string;
  /** Delivery timeout in ms when `Svc-Timeout` shortened the plan's; else the plan's applies. */
  timeoutMs?: number;
  flowControl?: FlowControl;
  /** `Svc-Redact-Fields`: what the API, events and DLQ never show (the destination gets it). */
  redact?: Redaction;
  /** Called after every attempt (`Svc-Callback`). Callback messages have none: no loops. */
  callback?: CallbackSpec;
  /** Called once retries are exhausted (`Svc-Failure-Callback`), with the DLQ id. */
  failureCallback?: CallbackSpec;
  /** Set on callback messages: which kind, for the log and the API. */
  callbackOf?: { kind: 'callback' | 'failure-callback'; sourceMessageId: string };
  /** Set on every message of a workflow run: the run and what the message is to it. */
  workflow?: MessageWorkflow;
  /**
   * Set on a callback message of a queued message: the queue whose slot it holds until it is
   * final, so the queue's next message waits for its source's callbacks (see flow-control.ts).
   */
  holdsQueue?: string;
  /**
   * Times the message was republished by one of Ferry's own deliveries (see core/hops.ts);
   * absent for a first publish. Its deliveries carry it as `<P>-Hops`.
   */
  hops?: number;
}

/** A message that is not final yet: one row of the hot `messages` table. */
export interface Message {
  id: string;
  accountId: string;
  /** The exact destination URL (a URL-group message has its endpoint's URL). */
  url: string;
  topicName?: string;
  endpointName?: string;
  queueName?: string;
  scheduleId?: string;
  /** IP address the message was published from. */
  callerIp: string;
  /** Retries already done; 0 before and during the first attempt. */
  retried: number;
  /** Retries allowed after the first attempt (total attempts = 1 + maxRetries). */
  maxRetries: number;
  /** When the message was first due (from `Svc-Delay`/`Svc-Not-Before`), ms. */
  notBefore: number;
  createdAt: number;
  /** When the next attempt may start, ms; while leased, when the lease expires. */
  dueAt: number;
  spec: MessageSpec;
  body: Uint8Array;
}

/** A message claimed for delivery, with the fencing token its completion must present. */
export interface ClaimedMessage extends Message {
  leaseToken: string;
}

/**
 * `m` leased until `dueAt`, as a new object (with another `body` or `spec` when given). Every
 * claimed message but SQLite's read from its row (`claimedFromColumns`, the same order) is built
 * here, with its fields in one order, so that the engine's code sees one object shape for them: a
 * spread (`{ ...m, leaseToken }`) gave another, and measured several per cent more CPU per
 * message (docs/benchmarks-log.md).
 */
export function leasedMessage(
  m: Message,
  dueAt: number,
  leaseToken: string,
  body: Uint8Array = m.body,
  spec: MessageSpec = m.spec,
): ClaimedMessage {
  const leased: ClaimedMessage = {
    id: m.id,
    accountId: m.accountId,
    url: m.url,
    callerIp: m.callerIp,
    retried: m.retried,
    maxRetries: m.maxRetries,
    notBefore: m.notBefore,
    createdAt: m.createdAt,
    dueAt,
    spec,
    body,
    leaseToken,
  };
  if (m.topicName !== undefined) leased.topicName = m.topicName;
  if (m.endpointName !== undefined) leased.endpointName = m.endpointName;
  if (m.queueName !== undefined) leased.queueName = m.queueName;
  if (m.scheduleId !== undefined) leased.scheduleId = m.scheduleId;
  return leased;
}

/** True for a message given with its lease (claimed, or published leased: Engine.reserve). */
export function isLeased(message: Message): message is ClaimedMessage {
  return 'leaseToken' in message;
}

/** Message lifecycle states as recorded in the events log (see API.md). */
export type EventState =
  | 'CREATED'
  | 'ACTIVE'
  | 'DELIVERED'
  | 'ERROR'
  | 'RETRY'
  | 'FAILED'
  | 'CANCEL_REQUESTED'
  | 'CANCELLED'
  /**
   * The message's DLQ entry was deleted to make room for a newer one (`max_dlq_size`); logged
   * after FAILED, with the entry's id and the limit in `error`.
   */
  | 'DLQ_EVICTED';

export const EVENT_STATES: readonly EventState[] = [
  'CREATED',
  'ACTIVE',
  'DELIVERED',
  'ERROR',
  'RETRY',
  'FAILED',
  'CANCEL_REQUESTED',
  'CANCELLED',
  'DLQ_EVICTED',
];

/** The message fields every event, DLQ entry and filter needs, copied at write time. */
export interface MessageRef {
  messageId: string;
  accountId: string;
  url: string;
  method: HttpMethod;
  topicName?: string;
  endpointName?: string;
  queueName?: string;
  scheduleId?: string;
  labels?: string[];
  flowControlKey?: string;
  callerIp: string;
}

/** One line of the events log. `header`/`body` are stored on CREATED and joined for the rest. */
export interface EventRecord extends MessageRef {
  /** Assigned by the store; increases with insertion order (the list cursor). */
  id?: number;
  time: number;
  state: EventState;
  retried: number;
  maxRetries: number;
  header?: HeaderMap;
  body?: Uint8Array;
  /**
   * `REDACTED:<sha256 hex>` instead of `body` when the message's body is redacted: the log never
   * stores a redacted body (its headers are stored with the redacted values already).
   */
  bodyRedacted?: string;
  error?: string;
  nextDeliveryTime?: number;
  responseStatus?: number;
  responseHeader?: HeaderMap;
  responseBody?: Uint8Array;
  /** Set when a list cut `body` (see `bodyCut` of the list): the whole body's length, bytes. */
  bodySize?: number;
  /** Likewise for `responseBody`. */
  responseBodySize?: number;
  /**
   * Written only: this outcome event (DELIVERED, ERROR) also stands for its attempt's ACTIVE
   * event, logged at this time. The store keeps the two as one row, and lists return them as two
   * events, the ACTIVE just before the outcome (docs/storage.md, "Events").
   */
  activeAt?: number;
}

/** A dead-letter queue entry: the whole failed message plus the last response. */
export interface DlqEntry {
  dlqId: string;
  message: Message;
  /** When the message entered the DLQ. */
  createdAt: number;
  /** When retention removes it (from the plan's DLQ retention at insert time). */
  expiresAt: number;
  responseStatus?: number;
  responseHeader?: HeaderMap;
  responseBody?: Uint8Array;
  /** Why the last attempt failed when there was no response (timeout, connection error). */
  error?: string;
  /** Set when a list cut `message.body` (see `bodyCut`): the whole body's length, bytes. */
  bodySize?: number;
  /** Likewise for `responseBody`. */
  responseBodySize?: number;
}

/** An endpoint of a URL group: a URL, optionally named (names are unique within the group). */
export interface UrlGroupEndpoint {
  url: string;
  name?: string;
}

/** A URL group (a "topic"): publishing to its name fans out to every endpoint. */
export interface UrlGroup {
  accountId: string;
  name: string;
  createdAt: number;
  updatedAt: number;
  /** In the order they were added; never empty (removing the last endpoint deletes the group). */
  endpoints: UrlGroupEndpoint[];
  /** Default headers applied to every publish to the group (`PATCH /v2/topics/{name}`). */
  headers?: HeaderMap;
}
