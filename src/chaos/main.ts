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
import { parseArgs } from 'node:util';
import { parseDuration } from '../core/duration.js';
import { formatCrash, runCrash } from './crash.js';
import { formatOverload, runOverload } from './overload.js';
import { formatSlow, runSlow } from './slow.js';
import { formatSoak, runSoak } from './soak.js';

const { values } = parseArgs({
  options: {
    case: { type: 'string', default: 'crash,slow,overload,soak' },
    rounds: { type: 'string', default: '20' },
    rate: { type: 'string', default: '1000' },
    lease: { type: 'string', default: '5s' },
    schedules: { type: 'string', default: '5' },
    workflows: { type: 'string', default: '2' },
    soak: { type: 'string', default: '30m' },
    'soak-rate': { type: 'string', default: '500' },
    'soak-event-retention': { type: 'string' },
    overload: { type: 'string', default: '1000000' },
    backlog: { type: 'string', default: '10000' },
    'database-url': { type: 'string', default: process.env.TEST_DATABASE_URL },
    storage: { type: 'string', default: 'sqlite,postgres' },
  },
});
const cases = new Set((values.case ?? '').split(','));
const databaseUrl = values['database-url'];
const wanted = new Set((values.storage ?? '').split(','));
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
      rounds: Number(values.rounds),
      rate: Number(values.rate),
      roundMs: [1_000, 6_000],
      leaseMs: parseDuration(values.lease ?? '2s', '--lease'),
      schedules: Number(values.schedules),
      workflows: Number(values.workflows),
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
    const report = await runSlow({ storage, databaseUrl, backlog: Number(values.backlog), log });
    for (const line of formatSlow(report)) log(line);
  }
}

if (cases.has('overload')) {
  for (const storage of storages) {
    const report = await runOverload({
      storage,
      databaseUrl,
      messages: Number(values.overload),
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
      durationMs: parseDuration(values.soak ?? '30m', '--soak'),
      rate: Number(values['soak-rate']),
      eventRetention: values['soak-event-retention'],
      log,
    });
    for (const line of formatSoak(report)) log(line);
    if (report.lost > 0) failed = true;
  }
}

process.exit(failed ? 1 : 0);
