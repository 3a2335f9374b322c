/**
 * The client commands as an operator runs them: the built `ferry` against a started Ferry,
 * connecting through the data directory's credentials.json or FERRY_URL/FERRY_TOKEN.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Each test runs the CLI several times, a second or two each on a busy machine. */
const SLOW = { timeout: 180_000 };
import type { DlqMessage, Event, Message, Schedule, UrlGroup } from '../src/sdk/types.js';
import type { Queue } from '../src/sdk/queues.js';
import type { MessagingAccount } from '../src/sdk/admin-types.js';
import { cliJson, eventually, runCli, spawnCli, useCliServer } from './helpers/cli.js';
import { startReceiver } from './helpers/receiver.js';

/** Ferry and a destination; the CLI connects through credentials.json (`server.env`). */
const server = useCliServer('ferry-cli-cmd', (req) => ({
  status: req.path.startsWith('/fail') ? 500 : 200,
}));

describe('ferry publish, logs and messages', SLOW, () => {
  it('publishes with a body file, a header and a label; the log shows the delivery', async () => {
    const bodyFile = join(server.dataDir, 'body.json');
    writeFileSync(bodyFile, '{"order":42}');
    const published = await cliJson<{ messageId: string }>(
      [
        'publish',
        `${server.dest.url}/orders`,
        '--body-file',
        bodyFile,
        '--content-type',
        'application/json',
        '--header',
        'X-Tenant: acme',
        '--label',
        'billing',
      ],
      server.env,
    );
    expect(published.messageId).toMatch(/^msg_/);
    const [req] = await server.dest.waitFor(1);
    expect(req?.body.toString()).toBe('{"order":42}');
    expect(req?.headers['x-tenant']).toBe('acme');
    expect(req?.headers['content-type']).toBe('application/json');

    const delivered = await eventually(async () => {
      const events = await cliJson<Event[]>(['logs', '--message', published.messageId], server.env);
      return events.find((e) => e.state === 'DELIVERED') ? events : undefined;
    });
    expect(delivered.map((e) => e.state)).toEqual(['CREATED', 'ACTIVE', 'DELIVERED']);
    expect(delivered[0]?.labels ?? [delivered[0]?.label]).toEqual(['billing']);

    const table = await runCli(['logs', '--label', 'billing'], server.env);
    expect(table.status).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^TIME\s+MESSAGE ID\s+STATE\s+URL\s+LABEL\s+DETAIL$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[2])).toEqual([
      'CREATED',
      'ACTIVE',
      'DELIVERED',
    ]);
    // Columns are aligned: every row's state starts where the header's STATE does.
    const at = lines[0]?.indexOf('STATE') ?? -1;
    for (const line of lines.slice(1))
      expect(line.slice(at)).toMatch(/^(CREATED|ACTIVE|DELIVERED) /);
  });

  it('shows a delayed message and cancels it; a cancelled one is a one-line error, status 1', async () => {
    const { messageId } = await cliJson<{ messageId: string }>(
      ['publish', `${server.dest.url}/later`, '--body', 'x', '--delay', '1h', '--retries', '2'],
      server.env,
    );
    const message = await cliJson<Message>(['messages', 'get', messageId], server.env);
    expect(message).toMatchObject({ messageId, maxRetries: 2, body: 'x' });
    expect(message.notBefore).toBeGreaterThan(Date.now() + 50 * 60_000);
    expect(message).toMatchObject({ state: 'DELAYED', nextDeliveryTime: message.notBefore });
    const human = await runCli(['messages', 'get', messageId], server.env);
    expect(human.stdout).toMatch(new RegExp(`^id:\\s+${messageId}$`, 'm'));
    expect(human.stdout).toMatch(/^state:\s+DELAYED until \S+Z$/m);
    const listed = await runCli(['messages', 'list'], server.env);
    expect(listed.stdout).toMatch(/^MESSAGE ID\s+URL\s+STATE\s+NOT BEFORE/);
    expect(listed.stdout).toMatch(new RegExp(`^${messageId}\\s+\\S+\\s+DELAYED\\s`, 'm'));
    const delayedOnly = await runCli(['messages', 'list', '--state', 'delayed'], server.env);
    expect(delayedOnly.stdout).toContain(messageId);
    const activeOnly = await runCli(['messages', 'list', '--state', 'ACTIVE'], server.env);
    expect(activeOnly.stdout).not.toContain(messageId);
    const stuck = await runCli(['messages', 'list', '--state', 'stuck'], server.env);
    expect(stuck.status).toBe(1);
    expect(stuck.stderr).toMatch(
      /^ferry: invalid state "STUCK" \(known: ACTIVE, DELAYED, DUE, WAITING\)/,
    );

    const cancelled = await runCli(['messages', 'cancel', messageId], server.env);
    expect(cancelled).toMatchObject({ status: 0, stdout: 'cancelled 1\n' });
    const gone = await runCli(['messages', 'get', messageId], server.env);
    expect(gone.status).toBe(1);
    expect(gone.stdout).toBe('');
    expect(gone.stderr).toMatch(/^ferry: .*\(HTTP 404\)\n$/);
  });

  it('shows why a message waits for a retry, and when the retry is scheduled', async () => {
    const { messageId } = await cliJson<{ messageId: string }>(
      ['publish', `${server.dest.url}/fail-retry`, '--retries', '2', '--retry-delay', '3600000'],
      server.env,
    );
    const human = await eventually(async () => {
      const res = await runCli(['messages', 'get', messageId], server.env);
      return res.stdout.includes('retry scheduled for') ? res.stdout : undefined;
    });
    expect(human).toMatch(/^retried:\s+1 of 2$/m);
    expect(human).toMatch(/^last error:\s+\S+Z HTTP 500$/m);
    const scheduled = /^retry scheduled for:\s+(\S+)$/m.exec(human)?.[1] ?? '';
    expect(Date.parse(scheduled)).toBeGreaterThan(Date.now() + 50 * 60_000);
    // As storage holds it: the time the retry was scheduled for (nothing moved it).
    expect(human).toMatch(new RegExp(`^state:\\s+DELAYED until ${scheduled}$`, 'm'));
    expect((await runCli(['messages', 'cancel', messageId], server.env)).status).toBe(0);
  });

  it('follows the log: a message published meanwhile appears, SIGINT ends with status 0', async () => {
    const follow = spawnCli(['logs', '--follow', '--interval', '1s', '--data-dir', server.dataDir]);
    await follow.waitFor('TIME');
    const { messageId } = await cliJson<{ messageId: string }>(
      ['publish', `${server.dest.url}/followed`, '--body', 'f'],
      server.env,
    );
    await follow.waitFor(`${messageId}  DELIVERED`);
    expect(await follow.stop('SIGINT')).toBe(0);
  });
});

describe('ferry dlq', SLOW, () => {
  it('lists, shows, retries and deletes dead-lettered messages', async () => {
    const { messageId } = await cliJson<{ messageId: string }>(
      ['publish', `${server.dest.url}/fail`, '--body', 'doomed', '--retries', '0', '--delay', '2s'],
      server.env,
    );
    const entry = await eventually(async () => {
      const page = await cliJson<{ messages: DlqMessage[] }>(['dlq', 'list'], server.env);
      return page.messages.find((m) => m.messageId === messageId);
    });
    expect(entry.responseStatus).toBe(500);
    const shown = await cliJson<DlqMessage>(['dlq', 'get', entry.dlqId], server.env);
    expect(shown).toMatchObject({ messageId, body: 'doomed' });
    // Delayed 2 s: it failed (entered the DLQ) well after it was published.
    expect(entry.dlqCreatedAt - entry.createdAt).toBeGreaterThanOrEqual(2000);
    const iso = (ms: number) => new Date(ms).toISOString();
    const table = await runCli(['dlq', 'list'], server.env);
    expect(table.stdout.split('\n')[0]).toMatch(
      /^DLQ ID\s+MESSAGE ID\s+URL\s+STATUS\s+FAILED\s+CREATED$/,
    );
    expect(table.stdout).toMatch(
      new RegExp(
        `^${entry.dlqId}\\s+${messageId}\\s+\\S+/fail\\s+500\\s+` +
          `${iso(entry.dlqCreatedAt)}\\s+${iso(entry.createdAt)}$`,
        'm',
      ),
    );
    const human = await runCli(['dlq', 'get', entry.dlqId], server.env);
    expect(human.stdout).toMatch(new RegExp(`^failed at:\\s+${iso(entry.dlqCreatedAt)}$`, 'm'));
    expect(human.stdout).toMatch(new RegExp(`^created:\\s+${iso(entry.createdAt)}$`, 'm'));

    const retried = await cliJson<{ responses: { messageId: string }[] }>(
      ['dlq', 'retry', entry.dlqId],
      server.env,
    );
    expect(retried.responses[0]?.messageId).toMatch(/^msg_/);
    const second = await eventually(async () => {
      const page = await cliJson<{ messages: DlqMessage[] }>(['dlq', 'list'], server.env);
      return page.messages.find((m) => m.messageId === retried.responses[0]?.messageId);
    });
    const partly = await runCli(['dlq', 'delete', second.dlqId, 'dlq_nosuch'], server.env);
    expect(partly.stdout).toBe('deleted 1; 1 of the ids given not in the DLQ\n');
    const missing = await runCli(['dlq', 'get', second.dlqId], server.env);
    expect(missing.status).toBe(1);
  });

  it('shows why an attempt without a response failed', async () => {
    const { messageId } = await cliJson<{ messageId: string }>(
      ['publish', 'http://127.0.0.1:1/closed', '--body', 'x', '--retries', '0'],
      server.env,
    );
    const entry = await eventually(async () => {
      const page = await cliJson<{ messages: DlqMessage[] }>(['dlq', 'list'], server.env);
      return page.messages.find((m) => m.messageId === messageId);
    });
    const shown = await runCli(['dlq', 'get', entry.dlqId], server.env);
    expect(shown.stdout).toMatch(/^error:\s+.*ECONNREFUSED/m);
  });
});

describe('ferry schedules, groups, queues and keys', SLOW, () => {
  it('creates, pauses, resumes and deletes a schedule', async () => {
    const { scheduleId } = await cliJson<{ scheduleId: string }>(
      [
        'schedules',
        'create',
        `${server.dest.url}/tick`,
        '--cron',
        '0 3 * * *',
        '--body',
        'b',
        '--retries',
        '1',
      ],
      server.env,
    );
    const list = await cliJson<Schedule[]>(['schedules', 'list'], server.env);
    expect(list.map((s) => s.scheduleId)).toContain(scheduleId);
    const next = list.find((s) => s.scheduleId === scheduleId)?.nextScheduleTime ?? 0;
    expect(new Date(next).toISOString()).toMatch(/T03:00:00/);
    const shown = await runCli(['schedules', 'get', scheduleId], server.env);
    expect(shown.stdout).toMatch(/^next tick:\s+\S*T03:00:00/m);
    expect((await runCli(['schedules', 'list'], server.env)).stdout).toMatch(/NEXT TICK/);
    expect((await runCli(['schedules', 'pause', scheduleId], server.env)).status).toBe(0);
    expect(await cliJson<Schedule>(['schedules', 'get', scheduleId], server.env)).toMatchObject({
      cron: '0 3 * * *',
      isPaused: true,
      retries: 1,
    });
    expect((await runCli(['schedules', 'resume', scheduleId], server.env)).status).toBe(0);
    expect((await cliJson<Schedule>(['schedules', 'get', scheduleId], server.env)).isPaused).toBe(
      false,
    );
    expect((await runCli(['schedules', 'delete', scheduleId], server.env)).stdout).toBe(
      `deleted ${scheduleId}\n`,
    );
    expect((await runCli(['schedules', 'get', scheduleId], server.env)).status).toBe(1);
  });

  it('builds a URL group that a publish fans out to, then takes it apart', async () => {
    const added = await cliJson<UrlGroup>(
      ['groups', 'add', 'team', `${server.dest.url}/g1`, `second=${server.dest.url}/g2`],
      server.env,
    );
    expect(added.endpoints).toEqual([
      { url: `${server.dest.url}/g1` },
      { name: 'second', url: `${server.dest.url}/g2` },
    ]);
    const before = server.dest.requests.length;
    const results = await cliJson<{ url: string }[]>(
      ['publish', 'team', '--body', 'all'],
      server.env,
    );
    expect(results.map((r) => r.url).sort()).toEqual([
      `${server.dest.url}/g1`,
      `${server.dest.url}/g2`,
    ]);
    await server.dest.waitFor(before + 2);
    expect(
      (await cliJson<UrlGroup[]>(['groups', 'list'], server.env)).map((g) => g.name),
    ).toContain('team');
    const removed = await cliJson<UrlGroup>(
      ['groups', 'remove', 'team', `${server.dest.url}/g1`],
      server.env,
    );
    expect(removed.endpoints).toEqual([{ name: 'second', url: `${server.dest.url}/g2` }]);
    expect((await runCli(['groups', 'delete', 'team'], server.env)).status).toBe(0);
    expect((await runCli(['groups', 'get', 'team'], server.env)).status).toBe(1);
  });

  it('creates, pauses and deletes a queue that publishes go into', async () => {
    const made = await cliJson<Queue>(
      ['queues', 'upsert', 'jobs', '--parallelism', '2', '--paused'],
      server.env,
    );
    expect(made).toMatchObject({ name: 'jobs', parallelism: 2, paused: true });
    const before = server.dest.requests.length;
    await cliJson(
      ['publish', `${server.dest.url}/queued`, '--queue', 'jobs', '--body', 'q'],
      server.env,
    );
    expect((await cliJson<Queue>(['queues', 'get', 'jobs'], server.env)).lag).toBe(1);
    expect((await runCli(['queues', 'resume', 'jobs'], server.env)).status).toBe(0);
    const delivered = await server.dest.waitFor(before + 1, 20_000);
    expect(delivered[before]?.path).toBe('/queued');
    expect((await cliJson<Queue[]>(['queues', 'list'], server.env)).map((q) => q.name)).toContain(
      'jobs',
    );
    expect((await runCli(['queues', 'delete', 'jobs'], server.env)).status).toBe(0);
    expect((await runCli(['queues', 'get', 'jobs'], server.env)).status).toBe(1);
  });

  it('shows and rotates the signing keys', async () => {
    const keys = await cliJson<{ current: string; next: string }>(['keys', 'get'], server.env);
    expect(keys).toEqual({
      current: server.ferry.credentials.currentSigningKey,
      next: server.ferry.credentials.nextSigningKey,
    });
    const rotated = await cliJson<{ current: string; next: string }>(
      ['keys', 'rotate'],
      server.env,
    );
    expect(rotated.current).toBe(keys.next);
    expect(rotated.next).not.toBe(keys.next);
  });
});

describe('ferry accounts', SLOW, () => {
  it('lists, creates and rotates accounts; the new token works with FERRY_URL/FERRY_TOKEN', async () => {
    const accounts = await cliJson<MessagingAccount[]>(['accounts', 'list'], server.env);
    expect(accounts.map((a) => a.id)).toContain(server.ferry.credentials.accountId);
    const created = await cliJson<MessagingAccount>(
      ['accounts', 'create', '--plan', 'free'],
      server.env,
    );
    expect(created.type).toBe('free');
    const asNew = { FERRY_URL: server.ferry.credentials.baseUrl, FERRY_TOKEN: created.token };
    expect((await runCli(['keys', 'get'], asNew)).status).toBe(0);

    const rotated = await cliJson<MessagingAccount>(
      ['accounts', 'rotate-token', created.id],
      server.env,
    );
    expect(rotated.token).not.toBe(created.token);
    const refused = await runCli(['keys', 'get'], asNew);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^ferry: .*\(HTTP 401\)\n$/);
    expect((await runCli(['keys', 'get'], { ...asNew, FERRY_TOKEN: rotated.token })).status).toBe(
      0,
    );

    const stats = await cliJson<{ days: string[] }>(
      ['accounts', 'stats', created.id, '--period', '1d'],
      server.env,
    );
    expect(Array.isArray(stats.days)).toBe(true);
    const human = await runCli(['accounts', 'list'], server.env);
    expect(human.stdout).toMatch(/^ID\s+PLAN\s+REGION\s+STATE\s+CREATED$/m);
  });
});

describe('mistakes', SLOW, () => {
  it('answers a bad command, flag or value with one line on stderr and status 2', async () => {
    const cases: [string[], RegExp][] = [
      [['dlq', 'lst'], /^ferry: unknown command 'lst'/],
      [['frobnicate'], /^ferry: unknown command 'frobnicate'/],
      [['publish', server.dest.url, '--colour', 'red'], /^ferry: unknown option --colour/],
      [
        ['publish', server.dest.url, '--retries', 'many'],
        /^ferry: option '--retries <n>' argument 'many' is invalid/,
      ],
      [['publish'], /^ferry: missing required argument 'destination'/],
      [['publish', server.dest.url, '--header', 'novalue'], /^ferry: --header must be name:value/],
      [
        ['publish', server.dest.url, '--flow-control-key', 'k'],
        /^ferry: --flow-control-key needs --parallelism or --rate/,
      ],
      [
        ['accounts', 'stats', 'x', '--period', '2h'],
        /^ferry: option '--period <period>' argument '2h' is invalid/,
      ],
      [
        ['workflows', 'list', '--count', 'all'],
        /^ferry: option '--count <n>' argument 'all' is invalid/,
      ],
      [['workflows', 'cancel'], /^ferry: missing required argument 'run-ids'/],
      [
        ['workflows', 'dlq', 'restart', 'dlq_x', '--retries', '-1'],
        /^ferry: option '--retries <n>' argument '-1' is invalid/,
      ],
      [['flow-control', 'get'], /^ferry: missing required argument 'key'/],
      [
        ['keys', 'get', '--data-dir', join(server.dataDir, 'nothing-here')],
        /^ferry: no server URL: pass --url/,
      ],
    ];
    for (const [args, pattern] of cases) {
      const res = await runCli(args, args.includes('--data-dir') ? {} : server.env);
      expect(res.status, args.join(' ')).toBe(2);
      expect(res.stderr, args.join(' ')).toMatch(pattern);
      expect(res.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
    }
  });

  it('answers --help for every command with status 0', async () => {
    for (const args of [
      ['publish'],
      ['logs'],
      ['messages', 'cancel'],
      ['messages', 'list'],
      ['dlq', 'retry'],
      ['workflows', 'list'],
      ['workflows', 'get'],
      ['workflows', 'cancel'],
      ['workflows', 'dlq', 'list'],
      ['workflows', 'dlq', 'resume'],
      ['workflows', 'dlq', 'restart'],
      ['workflows', 'dlq', 'delete'],
      ['flow-control', 'list'],
      ['flow-control', 'get'],
      ['flow-control', 'pause'],
      ['flow-control', 'resume'],
      ['schedules', 'create'],
      ['groups', 'add'],
      ['queues', 'upsert'],
      ['keys', 'rotate'],
      ['accounts', 'rotate-token'],
      ['backup'],
      ['restore'],
    ]) {
      const res = await runCli([...args, '--help']);
      expect(res.status, args.join(' ')).toBe(0);
      expect(res.stdout, args.join(' ')).toMatch(new RegExp(`^Usage: ferry ${args.join(' ')} `));
    }
  });

  it('reports a server that does not answer, status 1', async () => {
    const closed = await startReceiver();
    await closed.close();
    const res = await runCli(['keys', 'get'], { FERRY_URL: closed.url, FERRY_TOKEN: 't' });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/^ferry: fetch failed: .*ECONNREFUSED/);
  });
});
