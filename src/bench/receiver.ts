/**
 * The benchmark's receiver, run as its own process (as a real destination would be), so that the
 * load generator's work does not delay the receiving side of the measurement. It answers 200 at
 * once and records, per request, the wall-clock delay since the timestamp (ms) that begins the
 * body. The parent asks for the delays over IPC, and can reset them (after a warm-up).
 *
 * With `FERRY_BENCH_LATENCY_TRACE=FILE`, each set of delays the parent asks for is also appended
 * to FILE, a line per request (`<sent, wall-clock ms> <delay, ms>`) and an empty line after the
 * set: where in a run its worst deliveries fall.
 */
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const delays: number[] = [];
const sentAt: number[] = [];
const traceFile = process.env.FERRY_BENCH_LATENCY_TRACE;
const now = (): number => performance.timeOrigin + performance.now();

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    res.end('ok');
    const sent = Number(Buffer.concat(chunks).toString().split(' ')[0]);
    delays.push(Number.isFinite(sent) ? now() - sent : NaN);
    sentAt.push(sent);
    check();
  });
});
server.keepAliveTimeout = 60_000;

type Request =
  { type: 'expect'; n: number } | { type: 'delays' } | { type: 'reset' } | { type: 'stop' };

let expected = Infinity;
const check = (): void => {
  if (delays.length >= expected) {
    expected = Infinity;
    process.send?.({ type: 'done' });
  }
};

server.listen(0, '127.0.0.1', () => {
  process.send?.({ type: 'ready', port: (server.address() as AddressInfo).port });
});
process.on('message', (message: Request) => {
  if (message.type === 'expect') {
    expected = message.n;
    check();
  }
  if (message.type === 'delays') {
    if (traceFile) {
      appendFileSync(traceFile, `${delays.map((d, i) => `${sentAt[i]} ${d}`).join('\n')}\n\n`);
    }
    process.send?.({ type: 'delays', delays });
  }
  if (message.type === 'reset') {
    delays.length = 0;
    sentAt.length = 0;
  }
  if (message.type === 'stop') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
