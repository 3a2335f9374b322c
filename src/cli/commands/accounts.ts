/** `ferry accounts`: messaging accounts through the management API. */
import { Command, Option } from 'commander';
import type { MessagingAccount, PlanName, StatsPeriod } from '../../sdk/admin-types.js';
import { act } from './action.js';
import { adminClient, withAdminConnection, type ConnectionFlags } from './connection.js';
import { cell, print, record, table } from './output.js';

const row = (a: MessagingAccount): string[] => [
  a.id,
  a.type,
  a.region,
  a.state,
  new Date(a.creation_time * 1000).toISOString(),
];

/** An account just created or given a new token: the token is shown only now. */
const withToken = (a: MessagingAccount): string =>
  record([
    ['id', a.id],
    ['plan', a.type],
    ['region', a.region],
    ['token', a.token],
  ]);

export function accountsCommand(): Command {
  const list = act<ConnectionFlags>(
    withAdminConnection(new Command('list').description('your messaging accounts')),
    async (opts) => {
      const accounts = await adminClient(opts).accounts.list();
      print(opts.json, accounts, () =>
        table(['ID', 'PLAN', 'REGION', 'STATE', 'CREATED'], accounts.map(row)),
      );
    },
  );
  const create = act<ConnectionFlags & { plan?: PlanName; region?: 'eu-central-1' | 'us-east-1' }>(
    withAdminConnection(new Command('create').description('create an account; prints its token'))
      .addOption(new Option('--plan <plan>', 'its plan (free)').choices(['free', 'paid']))
      .addOption(
        new Option('--region <region>', 'its region (us-east-1)').choices([
          'us-east-1',
          'eu-central-1',
        ]),
      ),
    async (opts) => {
      const account = await adminClient(opts).accounts.create({
        type: opts.plan,
        region: opts.region,
      });
      print(opts.json, account, () => withToken(account));
    },
  );
  const rotate = act<ConnectionFlags>(
    withAdminConnection(
      new Command('rotate-token').description('a new token; the old one stops working at once'),
    ).argument('<id>'),
    async (opts, [id = '']) => {
      const account = await adminClient(opts).accounts.rotateToken(id);
      print(opts.json, account, () => withToken(account));
    },
  );
  const stats = act<ConnectionFlags & { period?: StatsPeriod }>(
    withAdminConnection(new Command('stats').description('usage statistics of an account'))
      .argument('<id>')
      .addOption(
        new Option('--period <period>', 'the window (1h)').choices([
          '1h',
          '3h',
          '12h',
          '1d',
          '3d',
          '7d',
          '30d',
        ]),
      ),
    async (opts, [id = '']) => {
      const s = await adminClient(opts).accounts.stats(id, opts.period);
      print(opts.json, s, () =>
        [
          table(
            ['DAY', 'REQUESTS', 'BANDWIDTH'],
            s.days.map((day, i) => [
              cell(day),
              String(s.daily_requests[i]?.y ?? 0),
              String(s.daily_bandwidths[i]?.y ?? 0),
            ]),
          ),
          '',
          record([
            ['in the DLQ', s.dlq_message_count],
            ['monthly billing', s.total_monthly_billing],
          ]),
        ].join('\n'),
      );
    },
  );
  return new Command('accounts')
    .description('messaging accounts (management API)')
    .addCommand(list)
    .addCommand(create)
    .addCommand(rotate)
    .addCommand(stats);
}
