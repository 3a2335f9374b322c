/** `ferry logs`: the events log (every state change of every message), optionally followed. */
import { Command } from 'commander';
import { parseDuration } from '../../core/duration.js';
import type { FerryClient } from '../../sdk/client.js';
import { FerryApiError } from '../../sdk/errors.js';
import type { Event, EventFilter, EventState } from '../../sdk/types.js';
import { connectionFailure, UsageError } from '../errors.js';
import { act } from './action.js';
import { messagingClient, withConnection, type ConnectionFlags } from './connection.js';
import { cell, table, time } from './output.js';
import { collect, integer } from './publish-options.js';

interface LogsOpts extends ConnectionFlags {
  follow?: boolean;
  state: string[];
  label: string[];
  message: string[];
  destination?: string;
  count?: number;
  interval: string;
}

const HEADERS = ['TIME', 'MESSAGE ID', 'STATE', 'URL', 'LABEL', 'DETAIL'];

const row = (e: Event): string[] => [
  time(e.time),
  e.messageId,
  e.state,
  cell(e.url),
  cell(e.labels ?? e.label),
  cell(e.error ?? e.responseStatus),
];

/** Identifies an event between polls (the log has no event id). */
const key = (e: Event): string => `${e.time}|${e.messageId}|${e.state}|${e.retried}`;

/** Every event the filter matches (from `fromDate` on), oldest first, through every page. */
async function eventsSince(client: FerryClient, filter: EventFilter): Promise<Event[]> {
  const events: Event[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.events.list({ filter, cursor, count: 100 });
    events.push(...page.events);
    cursor = page.cursor;
  } while (cursor !== undefined);
  return byTime(events.reverse());
}

/**
 * Oldest first by time. The log lists an attempt's ACTIVE event beside its outcome, so a page in
 * the log's order is not strictly in time; the sort is stable, keeping that order within a
 * millisecond.
 */
const byTime = (events: Event[]): Event[] => events.sort((a, b) => a.time - b.time);

/**
 * Why the server did not answer, when that is something time mends: no connection (refused,
 * reset), a 5xx (a node shutting down, its database away) or a 429 (the account's request rate
 * spent by other clients). Undefined for a mistake that asking again will not mend (a wrong
 * token, a bad filter).
 */
export function unreachable(error: unknown): string | undefined {
  if (error instanceof FerryApiError) {
    return error.status >= 500 || error.status === 429 ? `HTTP ${error.status}` : undefined;
  }
  const cause = connectionFailure(error);
  return cause === undefined ? undefined : (cause.code ?? cause.message);
}

/**
 * The events after `since`, asked for every `intervalMs` until the server answers. A server that
 * does not answer (restarted, say) is said once on stderr, and again when it is back; following
 * goes on from where it was, so nothing is missed or printed twice.
 */
async function nextEvents(
  client: FerryClient,
  filter: EventFilter,
  since: number,
  intervalMs: number,
): Promise<Event[]> {
  for (let lost = false; ;) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    try {
      const events = await eventsSince(client, { ...filter, fromDate: since || undefined });
      if (lost) process.stderr.write('ferry: the server answers again\n');
      return events;
    } catch (error) {
      const why = unreachable(error);
      if (why === undefined) throw error;
      if (!lost)
        process.stderr.write(`ferry: the server does not answer (${why}); waiting for it\n`);
      lost = true;
    }
  }
}

/**
 * Polls the log every `intervalMs` and prints what is new, oldest first, one line (a table row,
 * or with `--json` one JSON object) per event, until the process is interrupted.
 */
async function follow(
  client: FerryClient,
  filter: EventFilter,
  opts: LogsOpts,
  latest: Event[],
  intervalMs: number,
): Promise<never> {
  const stop = (): never => process.exit(0);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  if (!opts.json) process.stdout.write(`${HEADERS.join('  ')}\n`);
  let since = 0;
  let seen = new Set<string>();
  for (let events = latest; ;) {
    const fresh = events.filter((e) => !seen.has(key(e)));
    for (const e of fresh) {
      const line = opts.json ? JSON.stringify(e) : row(e).join('  ');
      process.stdout.write(`${line}\n`);
    }
    const newest = events.at(-1)?.time ?? since;
    // Events of the newest millisecond may still grow: keep their keys, forget the older ones.
    seen = new Set(events.filter((e) => e.time === newest).map(key));
    since = newest;
    events = await nextEvents(client, filter, since, intervalMs);
  }
}

export function logsCommand(): Command {
  const command = withConnection(
    new Command('logs').description('show the events log, newest last; --follow for new ones'),
  )
    .option('-f, --follow', 'keep printing new events until interrupted')
    .option(
      '--state <state>',
      'only this state, e.g. DELIVERED, ERROR, FAILED (repeatable)',
      collect,
      [],
    )
    .option('--label <label>', 'only messages with this label (repeatable)', collect, [])
    .option('--message <id>', 'only this message (repeatable)', collect, [])
    .option('--destination <url>', 'only messages to this URL')
    .option('--count <n>', 'how many of the latest events to show first (20)', integer)
    .option('--interval <duration>', 'how often --follow asks for new events', '1s');
  return act<LogsOpts>(command, async (opts) => {
    const client = messagingClient(opts);
    const filter: EventFilter = {
      state: opts.state.length
        ? (opts.state.map((s) => s.toUpperCase()) as EventState[])
        : undefined,
      label: opts.label.length ? opts.label : undefined,
      messageId: opts.message.length ? opts.message : undefined,
      url: opts.destination,
    };
    let intervalMs: number;
    try {
      intervalMs = parseDuration(opts.interval, '--interval');
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const page = await client.events.list({ filter, count: opts.count ?? 20 });
    const events = byTime([...page.events].reverse());
    if (opts.follow) await follow(client, filter, opts, events, Math.max(intervalMs, 100));
    if (opts.json) process.stdout.write(`${JSON.stringify(events, null, 2)}\n`);
    else process.stdout.write(`${table(HEADERS, events.map(row))}\n`);
  });
}
