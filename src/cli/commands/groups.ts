/** `ferry groups` (URL groups) and `ferry queues` (FIFO queues). */
import { Command } from 'commander';
import type { UrlGroup, UrlGroupEndpoint } from '../../sdk/types.js';
import { act } from './action.js';
import { messagingClient, withConnection, type ConnectionFlags } from './connection.js';
import { cell, print, record, table, time } from './output.js';
import { integer } from './publish-options.js';

/** `url` or `name=url`: an endpoint with an optional name. */
function endpoint(text: string): UrlGroupEndpoint {
  const match = /^([\w.-]+)=(.+)$/.exec(text);
  return match ? { name: match[1], url: match[2] ?? '' } : { url: text };
}

const groupRecord = (g: UrlGroup): string =>
  [
    record([
      ['name', g.name],
      ['created', time(g.createdAt)],
      ['updated', time(g.updatedAt)],
      ['headers', g.headers],
    ]),
    '',
    table(
      ['ENDPOINT', 'URL'],
      g.endpoints.map((e) => [cell(e.name), cell(e.url)]),
    ),
  ].join('\n');

export function groupsCommand(): Command {
  const list = act<ConnectionFlags>(
    withConnection(new Command('list').description('every URL group')),
    async (opts) => {
      const groups = await messagingClient(opts).urlGroups.list();
      print(opts.json, groups, () =>
        table(
          ['NAME', 'ENDPOINTS', 'UPDATED'],
          groups.map((g) => [cell(g.name), String(g.endpoints.length), time(g.updatedAt)]),
        ),
      );
    },
  );
  const get = act<ConnectionFlags>(
    withConnection(new Command('get').description('show a group and its endpoints')).argument(
      '<name>',
    ),
    async (opts, [name = '']) => {
      const group = await messagingClient(opts).urlGroups.get(name);
      print(opts.json, group, () => groupRecord(group));
    },
  );
  const add = act<ConnectionFlags>(
    withConnection(new Command('add').description('add endpoints, creating the group if needed'))
      .argument('<name>', 'the group')
      .argument('<endpoints...>', 'URLs, or name=URL for a named endpoint'),
    async (opts, [name = '', ...endpoints]) => {
      const group = await messagingClient(opts).urlGroups.addEndpoints(
        name,
        endpoints.map(endpoint),
      );
      print(opts.json, group, () => groupRecord(group));
    },
  );
  const remove = act<ConnectionFlags>(
    withConnection(
      new Command('remove').description('remove endpoints (the last one deletes the group)'),
    )
      .argument('<name>', 'the group')
      .argument('<endpoints...>', 'URLs, or name=URL'),
    async (opts, [name = '', ...endpoints]) => {
      const group = await messagingClient(opts).urlGroups.removeEndpoints(
        name,
        endpoints.map(endpoint),
      );
      print(opts.json, group ?? { deleted: name }, () =>
        group ? groupRecord(group) : `deleted ${name} (no endpoint left)`,
      );
    },
  );
  const remove_ = act<ConnectionFlags>(
    withConnection(new Command('delete').description('delete a group')).argument('<name>'),
    async (opts, [name = '']) => {
      await messagingClient(opts).urlGroups.delete(name);
      print(opts.json, { deleted: name }, () => `deleted ${name}`);
    },
  );
  return new Command('groups')
    .description('URL groups: publish to a name, deliver to every endpoint')
    .addCommand(list)
    .addCommand(get)
    .addCommand(add)
    .addCommand(remove)
    .addCommand(remove_);
}

type QueueOpts = ConnectionFlags & { parallelism?: number; paused?: boolean };

export function queuesCommand(): Command {
  const list = act<ConnectionFlags>(
    withConnection(new Command('list').description('every FIFO queue')),
    async (opts) => {
      const queues = await messagingClient(opts).queues.list();
      print(opts.json, queues, () =>
        table(
          ['NAME', 'PARALLELISM', 'PAUSED', 'LAG', 'CREATED'],
          queues.map((q) => [
            cell(q.name),
            String(q.parallelism),
            q.paused ? 'yes' : 'no',
            String(q.lag),
            time(q.createdAt),
          ]),
        ),
      );
    },
  );
  const get = act<ConnectionFlags>(
    withConnection(new Command('get').description('show a queue')).argument('<name>'),
    async (opts, [name = '']) => {
      const q = await messagingClient(opts).queues.get(name);
      print(opts.json, q, () =>
        record([
          ['name', q.name],
          ['parallelism', q.parallelism],
          ['paused', q.paused ? 'yes' : 'no'],
          ['lag', q.lag],
          ['created', time(q.createdAt)],
          ['updated', time(q.updatedAt)],
        ]),
      );
    },
  );
  const upsert = act<QueueOpts>(
    withConnection(new Command('upsert').description('create a queue or change its settings'))
      .argument('<name>')
      .option('--parallelism <n>', 'messages in flight at once (1)', integer)
      .option('--paused', 'create it paused'),
    async (opts, [name = '']) => {
      const client = messagingClient(opts);
      await client.queues.upsert({
        queueName: name,
        parallelism: opts.parallelism,
        paused: opts.paused,
      });
      const q = await client.queues.get(name);
      print(
        opts.json,
        q,
        () => `queue ${cell(q.name)}: parallelism ${q.parallelism}${q.paused ? ', paused' : ''}`,
      );
    },
  );
  const simple = (name: 'pause' | 'resume' | 'delete', description: string, verb: string) =>
    act<ConnectionFlags>(
      withConnection(new Command(name).description(description)).argument('<name>'),
      async (opts, [queue = '']) => {
        await messagingClient(opts).queues[name](queue);
        print(opts.json, { queueName: queue, result: verb }, () => `${verb} ${queue}`);
      },
    );
  return new Command('queues')
    .description('FIFO queues (publish into one with ferry publish --queue)')
    .addCommand(list)
    .addCommand(get)
    .addCommand(upsert)
    .addCommand(simple('pause', 'stop starting its messages', 'paused'))
    .addCommand(simple('resume', 'start its messages again', 'resumed'))
    .addCommand(simple('delete', 'delete the queue and cancel its messages', 'deleted'));
}
