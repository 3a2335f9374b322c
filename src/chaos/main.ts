/**
 * `npm run chaos`: the fault and load suite of docs/reliability.md, against the built Ferry.
 *
 *   npm run chaos -- [--case crash,slow,overload,soak] [--storage sqlite,postgres] [--rounds 20]
 *                    [--rate 1000] [--workflows 2]
 *                    [--soak 30m] [--soak-rate 500] [--overload 1000000] [--database-url URL]
 *
 * PostgreSQL cases run when `--database-url` or TEST_DATABASE_URL is set (a fresh schema each,
 * dropped afterwards). Exits 1 when a guarantee does not hold (a lost message, a duplicate that
 * was not in flight at a kill, a redelivery slower than lease + 5 s, a schedule skipped or
 * doubled, a workflow run not completed or a step recorded other than once, an overload publish
 * accepted and dropped or refused and stored).
 */
import { parseDuration } from '../core/duration.js';
import { scriptArgs, usageError, wholeNumber } from '../bench/script-args.js';
import { formatCrash, runCrash } from './crash.js';
import { formatOverload, runOverload } from './overload.js';
import { formatSlow, runSlow } from './slow.js';
import { formatSoak, runSoak } from './soak.js';

const USAGE = `Usage: npm run chaos -- [options]

  --case LIST             crash,slow,overload,soak (default: all four)
  --storage LIST          sqlite,postgres (PostgreSQL runs with --database-url or TEST_DATABASE_URL)
  --database-url URL      PostgreSQL (a fresh schema per case, dropped afterwards)
  --rounds N              crash: SIGKILL rounds (20)
  --rate N                crash: publishes per second (1000)
  --lease D               crash: the nodes' --lease (5s)
  --schedules N           crash: cron schedules (5)
  --workflows N           crash: workflow runs started per second (2)
  --backlog N             slow: waiting messages per bad destination (10000)
  --overload N            overload: messages published at once (1000000)
  --soak D                soak: duration (30m)
  --soak-rate N           soak: publishes per second (500)
  --soak-event-retention D  soak: the node's --event-retention
  --help                  this text

The method and the latest figures of each case are in docs/reliability.md.`;
const values = scriptArgs(
  {
    case: { type: 'string', default: 'crash,slow,overload,soak' },
    rounds: { type: 'string' },
    rate: { type: 'string' },
    lease: { type: 'string', default: '5s' },
    schedules: { type: 'string' },
    workflows: { type: 'string' },
    soak: { type: 'string', default: '30m' },
    'soak-rate': { type: 'string' },
    'soak-event-retention': { type: 'string' },
    overload: { type: 'string' },
    backlog: { type: 'string' },
    'database-url': { type: 'string', default: process.env.TEST_DATABASE_URL },
    storage: { type: 'string', default: 'sqlite,postgres' },
  },
  USAGE,
);
const count = (name: keyof typeof values, fallback: number, min = 0): number =>
  wholeNumber(values[name], name, fallback, USAGE, min);
// Every value is checked here, before the first case runs.
const listOf = (name: 'case' | 'storage', known: readonly string[]): Set<string> => {
  const items = (values[name] ?? '').split(',');
  const unknown = items.filter((item) => !known.includes(item));
  if (unknown.length > 0) {
    usageError(`--${name}: unknown "${unknown.join('", "')}" (known: ${known.join(', ')})`, USAGE);
  }
  return new Set(items);
};
const rounds = count('rounds', 20, 1);
const rate = count('rate', 1_000, 1);
const schedules = count('schedules', 5);
const workflows = count('workflows', 2);
const backlog = count('backlog', 10_000);
const overload = count('overload', 1_000_000, 1);
const soakRate = count('soak-rate', 500, 1);
const duration = (name: 'lease' | 'soak', text: string): number => {
  try {
    return parseDuration(text, `--${name}`);
  } catch (error) {
    return usageError((error as Error).message, USAGE);
  }
};
const leaseMs = duration('lease', values.lease ?? '5s');
const soakMs = duration('soak', values.soak ?? '30m');
const cases = listOf('case', ['crash', 'slow', 'overload', 'soak']);
const databaseUrl = values['database-url'];
const wanted = listOf('storage', ['sqlite', 'postgres']);
const storages = (['sqlite', 'postgres'] as const).filter(
  (s) => wanted.has(s) && (s === 'sqlite' || databaseUrl !== undefined),
);
const log = (line: string): void => console.log(line);
let failed = false;

if (!databaseUrl && wanted.has('postgres')) {
  log('PostgreSQL cases skipped: set --database-url or TEST_DATABASE_URL');
}

if (cases.has('crash')) {
  for (const storage of storages) {
    const report = await runCrash({
      storage,
      databaseUrl,
      rounds,
      rate,
      roundMs: [1_000, 6_000],
      leaseMs,
      schedules,
      workflows,
      drainTimeoutMs: 120_000,
      log,
    });
    for (const line of formatCrash(report)) log(line);
    if (
      report.lost > 0 ||
      report.duplicatesNotInFlight > 0 ||
      !report.redeliveryWithinBound ||
      !report.schedules.ok ||
      !report.workflows.ok
    ) {
      failed = true;
    }
  }
}

if (cases.has('slow')) {
  for (const storage of storages) {
    const report = await runSlow({ storage, databaseUrl, backlog, log });
    for (const line of formatSlow(report)) log(line);
  }
}

if (cases.has('overload')) {
  for (const storage of storages) {
    const report = await runOverload({
      storage,
      databaseUrl,
      messages: overload,
      log,
    });
    for (const line of formatOverload(report)) log(line);
    if (report.acceptedNotDelivered > 0 || report.stored !== report.accepted) failed = true;
  }
}

if (cases.has('soak')) {
  for (const storage of storages) {
    const report = await runSoak({
      storage,
      databaseUrl,
      durationMs: soakMs,
      rate: soakRate,
      eventRetention: values['soak-event-retention'],
      log,
    });
    for (const line of formatSoak(report)) log(line);
    if (report.lost > 0) failed = true;
  }
}

process.exit(failed ? 1 : 0);
