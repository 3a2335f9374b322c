/**
 * The benchmark's receiver, run as its own process (as a real destination would be), so that the
 * load generator's work does not delay the receiving side of the measurement. It answers 200 at
 * once and records, per request, the wall-clock delay since the timestamp (ms) that begins the
 * body. The parent asks for the delays over IPC, and can reset them (after a warm-up).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const delays: number[] = [];
const now = (): number => performance.timeOrigin + performance.now();

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    res.end('ok');
    const sent = Number(Buffer.concat(chunks).toString().split(' ')[0]);
    delays.push(Number.isFinite(sent) ? now() - sent : NaN);
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
  if (message.type === 'delays') process.send?.({ type: 'delays', delays });
  if (message.type === 'reset') delays.length = 0;
  if (message.type === 'stop') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
