/**
 * What the peers' consumer processes share (peer-worker.ts, graphile-worker-process.ts): the POST
 * of a job's body to the benchmark's receiver, as Ferry's dispatcher sends it (undici,
 * keep-alive), and the exit on the parent's `stop`.
 */
import { Agent, request } from 'undici';

/** POSTs over `connections` keep-alive sockets; a non-2xx answer fails the job. */
export function receiverPoster(connections: number): {
  post(url: string, body: string): Promise<void>;
  close(): Promise<void>;
} {
  const agent = new Agent({ connections, pipelining: 1 });
  return {
    async post(url, body) {
      const res = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body,
        dispatcher: agent,
      });
      await res.body.dump();
      if (res.statusCode < 200 || res.statusCode > 299) {
        throw new Error(`destination answered ${res.statusCode}`);
      }
    },
    close: () => agent.close(),
  };
}

/** Reports `ready` to the parent, and on its `stop` runs `stop` and exits. */
export function serveParent(stop: () => Promise<void>): void {
  process.send?.({ type: 'ready' });
  process.on('message', (message: { type: string }) => {
    if (message.type !== 'stop') return;
    void stop().then(() => process.exit(0));
  });
}
