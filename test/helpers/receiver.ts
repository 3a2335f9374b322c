/**
 * A real HTTP destination on 127.0.0.1 that records every request and answers as the test says.
 * Tests wait for requests with `waitFor(n)`, which resolves on the n-th arrival (no sleeping).
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  /** Path and query as requested. */
  path: string;
  /** The full URL as requested (what a signature's `sub` claim must equal). */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Arrival time, ms (wall clock). */
  at: number;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Never answer (to test timeouts); the socket is closed when the receiver closes. */
  hang?: boolean;
}

export type Responder = (req: Received, index: number) => Reply | Promise<Reply>;

export interface Receiver {
  url: string;
  requests: Received[];
  /** Resolves when at least `n` requests have arrived; rejects after `timeoutMs`. */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  respond(responder: Responder): void;
  close(): Promise<void>;
}

export async function startReceiver(
  responder: Responder = () => ({ status: 200 }),
): Promise<Receiver> {
  const requests: Received[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let current = responder;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: Received = {
        method: req.method ?? '',
        path: req.url ?? '',
        url: `${base}${req.url ?? ''}`,
        headers: req.headers,
        body: Buffer.concat(chunks),
        at: Date.now(),
      };
      const index = requests.push(received) - 1;
      for (const w of waiters.filter((w) => requests.length >= w.n)) w.resolve();
      void Promise.resolve(current(received, index)).then((reply) => {
        if (reply.hang) return;
        res.writeHead(reply.status ?? 200, reply.headers);
        res.end(reply.body ?? '');
      });
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    requests,
    waitFor(n, timeoutMs = 10_000) {
      if (requests.length >= n) return Promise.resolve(requests);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(`receiver got ${requests.length} of ${n} requests in ${timeoutMs} ms`),
            ),
          timeoutMs,
        );
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve(requests);
          },
        });
      });
    },
    respond(next) {
      current = next;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
