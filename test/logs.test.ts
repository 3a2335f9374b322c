/**
 * Logs as an operator reads them from the built `ferry start`: JSON lines (pino) by default,
 * with the request id of each HTTP request (also sent back as `X-Request-Id`, taken from the
 * request when a proxy set a sane one) and the message id on every delivery line;
 * `--log-format pretty` for a terminal.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFerryProcess, type FerryProcess } from './helpers/process.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

type Line = Record<string, unknown>;

/** The JSON log lines printed so far (the banner and other text are skipped). */
function jsonLines(output: string): Line[] {
  return output.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as Line];
    } catch {
      return [];
    }
  });
}

/** Resolves with the first log line matching, as soon as it is printed; rejects after the deadline. */
function waitForLine(
  fp: FerryProcess,
  match: (line: Line) => boolean,
  timeoutMs = 10_000,
): Promise<Line> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const found = jsonLines(fp.output()).find(match);
      if (found) {
        clearTimeout(timer);
        fp.proc.stdout?.off('data', check);
        resolve(found);
      }
      return found !== undefined;
    };
    const timer = setTimeout(() => {
      fp.proc.stdout?.off('data', check);
      reject(new Error(`no matching log line within ${timeoutMs} ms:\n${fp.output()}`));
    }, timeoutMs);
    if (!check()) fp.proc.stdout?.on('data', check);
  });
}

describe('logs', () => {
  let fp: FerryProcess | undefined;
  let dest: Receiver | undefined;
  let dataDir: string | undefined;
  afterEach(async () => {
    await fp?.kill('SIGTERM');
    await dest?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    fp = dest = dataDir = undefined;
  });

  it('JSON lines with the request id of each request and the message id of each delivery', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'ferry-logs-'));
    dest = await startReceiver(() => ({ status: 500 }));
    fp = await startFerryProcess({ dataDir, args: ['--log-level', 'debug'] });
    const { baseUrl, token } = fp.credentials;
    const res = await fetch(`${baseUrl}/v2/publish/${dest.url}/hook?secret=s3`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'lb-7f3a', 'svc-retries': '0' },
      body: 'x',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('lb-7f3a');
    const { messageId } = (await res.json()) as { messageId: string };

    const request = await waitForLine(fp, (l) => l.reqId === 'lb-7f3a' && l.msg === 'request');
    expect(request).toMatchObject({
      level: 20,
      method: 'POST',
      route: '/v2/publish/*',
      status: 200,
    });
    // The route pattern is logged, not the URL with the destination and its query.
    expect(JSON.stringify(request)).not.toContain('s3');

    const attempt = await waitForLine(fp, (l) => l.msg === 'delivery attempt');
    expect(attempt).toMatchObject({ messageId, outcome: 'failed', status: 500 });
    const dlq = await waitForLine(fp, (l) => l.msg === 'message failed: moved to the DLQ');
    expect(dlq).toMatchObject({ messageId, status: 500 });

    // Without a usable id (here: too long), Ferry makes one; every answer carries one.
    const other = await fetch(`${baseUrl}/v2/messages/msg_none`, {
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'x'.repeat(200) },
    });
    expect(other.status).toBe(404);
    const generated = other.headers.get('x-request-id') ?? '';
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    await waitForLine(fp, (l) => l.reqId === generated && l.status === 404);
  });

  it('--log-format pretty prints lines for a terminal', async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'ferry-logs-'));
    fp = await startFerryProcess({
      dataDir,
      args: ['--log-format', 'pretty', '--log-level', 'info'],
    });
    await fp.kill('SIGTERM');
    const output = fp.output();
    expect(output).toMatch(/INFO.*stopping: finishing in-flight deliveries/);
    expect(jsonLines(output)).toEqual([]);
    fp = undefined;
  });
});
