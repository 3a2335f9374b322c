/**
 * Sends one delivery attempt over HTTP. undici keeps a keep-alive pool per origin; redirects are
 * never followed (a 3xx is a failed attempt, as in QStash); the response body is read up to a
 * cap and the rest discarded.
 */
import type { DeliveryAbort } from './delivery-abort.js';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { createRequire } from 'node:module';
import type { Agent as UndiciAgent, Dispatcher as Undici } from 'undici';
import { isPrivateAddress, isRefusedHost } from '../core/addresses.js';
import type { AttemptResult } from '../core/retry-timing.js';
import type { HeaderMap } from '../core/types.js';
import { canonicalHeaderName } from '../core/headers.js';
import { signRequest, type SignRequestParams } from '../core/signature.js';

/**
 * undici's Agent from its own module rather than the package's entry, which loads all of undici
 * (fetch, WebSocket, caches, mocks): 137 ms against 24 ms to load on this machine, paid by every
 * delivery thread before its first send (a thread's start to its first delivery: ~220 → ~125 ms)
 * and by the main thread at start. undici has no `exports` map, so the path is public to Node;
 * the types are the package's. Any test that delivers fails if the path moves.
 */
const Agent = createRequire(import.meta.url)(
  'undici/lib/dispatcher/agent.js',
) as typeof UndiciAgent;

export interface DispatchRequest {
  url: string;
  method: string;
  headers: Record<string, string | string[]>;
  body: Uint8Array;
  timeoutMs: number;
  /** Response bytes kept; the rest is discarded (callbacks and the DLQ show at most this). */
  maxResponseBytes: number;
  /**
   * Aborts the attempt (a shutdown that runs out of grace time). The dispatcher also aborts it
   * when `timeoutMs` passes, so one controller and one timer serve both.
   */
  abort?: DeliveryAbort;
  /**
   * Sign the request (see core/signature.ts) into this header just before it is sent: with a
   * delivery thread, the hashing runs there instead of on the main thread.
   */
  sign?: { header: string } & Omit<SignRequestParams, 'url' | 'body'>;
}

export interface Dispatcher {
  send(req: DispatchRequest): Promise<AttemptResult>;
  /**
   * Makes ready what the first send would otherwise wait for (the delivery thread). A node that
   * delivers calls it when it starts; one that never sends never pays for it.
   */
  warm?(): void;
  close(): Promise<void>;
}

export interface HttpDispatcherOptions {
  /** Refuse private, loopback and link-local addresses, checked on the resolved IP. */
  refusePrivate: boolean;
  /** Sockets per origin; deliveries to one destination beyond it wait for a free socket. */
  connectionsPerOrigin?: number;
  /**
   * Resolves host names when connecting (default `dns.lookup`). Production mode checks its
   * answers; tests inject a resolver they control (DNS rebinding).
   */
  lookup?: typeof dnsLookup;
}

/** The error text for an address refused in production mode. */
export const PRIVATE_ADDRESS_ERROR = 'destination resolves to a private or loopback address';

/**
 * A DNS lookup that fails for private addresses, so the check covers every connect: the
 * addresses checked are the ones the socket connects to, so a name whose answer changes between
 * lookups (DNS rebinding) cannot pass the check with one answer and connect with another.
 */
const guardedLookup =
  (lookup: typeof dnsLookup): LookupFunction =>
  (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const refused = addresses.find((a) => isPrivateAddress(a.address));
      if (refused) return callback(new Error(PRIVATE_ADDRESS_ERROR), '', 0);
      if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (!first) return callback(new Error(`no address for ${hostname}`), '', 0);
      callback(null, first.address, first.family);
    });
  };

export function createHttpDispatcher(options: HttpDispatcherOptions): Dispatcher {
  const agent = new Agent({
    keepAliveTimeout: 30_000,
    connections: options.connectionsPerOrigin ?? 128,
    connect: options.refusePrivate
      ? { lookup: guardedLookup(options.lookup ?? dnsLookup) }
      : options.lookup
        ? { lookup: options.lookup }
        : {},
  });

  return {
    async send(req: DispatchRequest): Promise<AttemptResult> {
      if (options.refusePrivate) {
        // Node never calls `lookup` for an IP literal, so check literals here.
        if (isRefusedHost(new URL(req.url).hostname)) {
          return { kind: 'error', error: PRIVATE_ADDRESS_ERROR };
        }
      }
      const { sign } = req;
      try {
        const headers = sign
          ? {
              ...req.headers,
              [sign.header]: signRequest({ ...sign, url: req.url, body: req.body }),
            }
          : req.headers;
        return await exchange(agent, req, headers);
      } catch (error) {
        return { kind: 'error', error: describeError(error) };
      }
    },
    async close(): Promise<void> {
      await agent.close();
    },
  };
}

/**
 * One HTTP exchange through undici's `dispatch` with a handler that collects the response.
 * `undici.request` does the same through a Readable stream of the body and an AbortSignal per
 * request, which cost about as much CPU again as the exchange itself (measured: 31 against 15 µs
 * of client CPU per request to a local receiver): every delivery pays for it, so the handler is
 * written out here. Like `request`, it sends to the URL's origin and path with its query, follows
 * no redirect, skips 1xx responses, and aborts a request still waiting for a connection as soon
 * as it gets one. Resolves with the response (body cut at `maxResponseBytes`) or an error
 * attempt; rejects only with an invalid URL.
 */
function exchange(
  agent: UndiciAgent,
  req: DispatchRequest,
  headers: Record<string, string | string[]>,
): Promise<AttemptResult> {
  const url = new URL(req.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error('Invalid URL protocol: the URL must start with `http:` or `https:`.');
  }
  return new Promise<AttemptResult>((resolve) => {
    const cap = req.maxResponseBytes;
    let controller: Undici.DispatchController | undefined;
    /** Why the exchange was ended from here (timeout, shutdown), once it was. */
    let ended: { reason: Error; error: string } | undefined;
    let response: { status: number; headers: HeaderMap } | undefined;
    let chunks: Uint8Array[] = [];
    let size = 0;
    let total = 0;
    let done = false;
    const finish = (attempt: AttemptResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.abort?.off(onAbort);
      resolve(attempt);
    };
    const end = (error: string): void => {
      if (ended || done) return;
      ended = { reason: new Error(error), error };
      controller?.abort(ended.reason);
    };
    const timer = setTimeout(() => end(`timeout after ${req.timeoutMs} ms`), req.timeoutMs);
    const onAbort = (): void => end('attempt aborted by shutdown');
    if (req.abort?.aborted) onAbort();
    else req.abort?.on(onAbort);
    const body = (): Uint8Array =>
      chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks, size);
    const handler: Undici.DispatchHandler = {
      onRequestStart(started) {
        controller = started;
        if (ended) started.abort(ended.reason);
      },
      onResponseStart(_, statusCode, responseHeaders) {
        if (statusCode < 200) return; // 1xx: the final response follows
        response = { status: statusCode, headers: toHeaderMap(responseHeaders) };
        chunks = [];
      },
      onResponseData(current, chunk) {
        if (!response) return;
        total += chunk.byteLength;
        // Drain a little past the cap so the socket can be reused; give up on huge bodies.
        if (total > cap + DRAIN_LIMIT) {
          finish({ kind: 'response', ...response, body: body() });
          current.abort(new Error('response body too large: connection dropped'));
          return;
        }
        if (size < cap) {
          const keep = chunk.byteLength <= cap - size ? chunk : chunk.subarray(0, cap - size);
          chunks.push(keep);
          size += keep.byteLength;
        }
      },
      onResponseEnd() {
        if (!response) finish({ kind: 'error', error: 'the response ended without a status' });
        else finish({ kind: 'response', ...response, body: body() });
      },
      onResponseError(_, error) {
        finish({ kind: 'error', error: ended ? ended.error : describeError(error) });
      },
    };
    try {
      agent.dispatch(
        {
          origin: url.origin,
          path: url.search ? `${url.pathname}${url.search}` : url.pathname,
          method: req.method,
          headers,
          body: req.method === 'GET' && req.body.byteLength === 0 ? undefined : req.body,
          headersTimeout: req.timeoutMs,
          bodyTimeout: req.timeoutMs,
        },
        handler,
      );
    } catch (error) {
      finish({ kind: 'error', error: describeError(error) });
    }
  });
}

/** Bytes read and discarded past the cap before the connection is dropped instead. */
const DRAIN_LIMIT = 1024 * 1024;

function toHeaderMap(headers: Record<string, string | string[] | undefined>): HeaderMap {
  const map: HeaderMap = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    map[canonicalHeaderName(name)] = Array.isArray(value) ? value : [value];
  }
  return map;
}

function codeOf(error: Error | undefined): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause : undefined;
  const code = codeOf(cause) ?? codeOf(error);
  const message = cause?.message ?? error.message;
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}
