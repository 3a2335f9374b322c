/** `ferry schedules`: cron schedules that publish a message at every tick. */
import { Command } from 'commander';
import type { Schedule } from '../../sdk/types.js';
import { act } from './action.js';
import { messagingClient, withConnection, type ConnectionFlags } from './connection.js';
import { cell, print, record, table, time } from './output.js';
import { publishRequest, withPublishOptions, type PublishFlags } from './publish-options.js';

type CreateOpts = ConnectionFlags & PublishFlags & { cron: string; id?: string; queue?: string };

const fields = (s: Schedule): [string, unknown][] => [
  ['id', s.scheduleId],
  ['cron', s.cron],
  ['destination', s.destination],
  ['method', s.method],
  ['paused', s.isPaused ? 'yes' : 'no'],
  ['created', time(s.createdAt)],
  ['next tick', s.isPaused ? 'paused' : time(s.nextScheduleTime)],
  ['last tick', time(s.lastScheduleTime)],
  ['retries', s.retries],
  ['delay', s.delay === undefined ? undefined : `${s.delay}s`],
  ['callback', s.callback],
  ['queue', s.queueName],
  ['header', s.header],
  ['body', s.body ?? s.bodyBase64],
];

/** A command that acts on one schedule by id and prints what it did. */
function byId(name: string, description: string, verb: string, run: 'pause' | 'resume' | 'delete') {
  return act<ConnectionFlags>(
    withConnection(new Command(name).description(description)).argument('<id>'),
    async (opts, [id = '']) => {
      await messagingClient(opts).schedules[run](id);
      print(opts.json, { scheduleId: id, result: verb }, () => `${verb} ${id}`);
    },
  );
}

export function schedulesCommand(): Command {
  const list = act<ConnectionFlags>(
    withConnection(new Command('list').description('every schedule, oldest first')),
    async (opts) => {
      const schedules = await messagingClient(opts).schedules.list();
      print(opts.json, schedules, () =>
        table(
          ['ID', 'CRON', 'DESTINATION', 'PAUSED', 'NEXT TICK', 'CREATED'],
          schedules.map((s) => [
            cell(s.scheduleId),
            cell(s.cron),
            cell(s.destination),
            s.isPaused ? 'yes' : 'no',
            s.isPaused ? '-' : time(s.nextScheduleTime),
            time(s.createdAt),
          ]),
        ),
      );
    },
  );
  const get = act<ConnectionFlags>(
    withConnection(new Command('get').description('show one schedule')).argument('<id>'),
    async (opts, [id = '']) => {
      const schedule = await messagingClient(opts).schedules.get(id);
      print(opts.json, schedule, () => record(fields(schedule)));
    },
  );
  const create = act<CreateOpts>(
    withPublishOptions(
      withConnection(
        new Command('create')
          .description('create a schedule, or replace the one with --id')
          .argument('<destination>', 'a URL or a URL group name'),
      ),
    )
      .requiredOption(
        '--cron <expression>',
        'five cron fields (UTC unless CRON_TZ=… prefixes them)',
      )
      .option('--id <id>', 'your own schedule id')
      .option('--queue <name>', 'enqueue each message into this queue'),
    async (opts, [destination = '']) => {
      const result = await messagingClient(opts).schedules.create({
        ...publishRequest(destination, opts),
        cron: opts.cron,
        scheduleId: opts.id,
        queueName: opts.queue,
      });
      print(opts.json, result, () => result.scheduleId);
    },
  );
  return new Command('schedules')
    .description('cron schedules')
    .addCommand(list)
    .addCommand(get)
    .addCommand(create)
    .addCommand(byId('pause', 'skip ticks until resumed', 'paused', 'pause'))
    .addCommand(byId('resume', 'resume a paused schedule', 'resumed', 'resume'))
    .addCommand(byId('delete', 'delete a schedule', 'deleted', 'delete'));
}
