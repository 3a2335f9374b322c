/** `ferry publish`, `ferry messages`, `ferry dlq` and `ferry keys`. */
import { Command } from 'commander';
import type { FerryClient } from '../../sdk/client.js';
import type { DlqMessage, Message, PublishResult } from '../../sdk/types.js';
import { act } from './action.js';
import { messagingClient, withConnection, type ConnectionFlags } from './connection.js';
import { cell, counted, print, record, table, time } from './output.js';
import { withPaging, type PagingFlags } from './paging.js';
import {
  collect,
  publishRequest,
  withPublishOptions,
  type PublishFlags,
} from './publish-options.js';

type PublishOpts = ConnectionFlags &
  PublishFlags & { queue?: string; deduplicationId?: string; contentBasedDeduplication?: boolean };

export function publishCommand(): Command {
  const command = withPublishOptions(
    withConnection(
      new Command('publish')
        .description('publish a message to a URL or a URL group')
        .argument('<destination>', 'a URL (https://…) or a URL group name'),
    ),
  )
    .option('--queue <name>', 'enqueue into this FIFO queue')
    .option('--deduplication-id <id>', 'drop a later message with the same id')
    .option('--content-based-deduplication', 'deduplicate on the destination, body and headers');
  return act<PublishOpts>(command, async (opts, [destination = '']) => {
    const client = messagingClient(opts);
    const req = {
      ...publishRequest(destination, opts),
      deduplicationId: opts.deduplicationId,
      contentBasedDeduplication: opts.contentBasedDeduplication,
    };
    const result: PublishResult =
      opts.queue === undefined ? await client.publish(req) : await client.enqueue(opts.queue, req);
    const rows = Array.isArray(result) ? result : [{ ...result, url: destination }];
    print(opts.json, result, () =>
      table(
        ['MESSAGE ID', 'URL', 'DEDUPLICATED'],
        rows.map((r) => [r.messageId, cell(r.url), r.deduplicated ? 'yes' : 'no']),
      ),
    );
  });
}

/** Where a message stands now, in words (the API's `state`; see docs/api.md). */
function stateText(m: Message): string | undefined {
  switch (m.state) {
    case 'ACTIVE':
      return 'ACTIVE: being delivered';
    case 'DELAYED':
      return `DELAYED until ${time(m.nextDeliveryTime)}`;
    case 'DUE':
      return 'DUE: waiting for a delivery slot';
    case 'WAITING':
      if (m.queueName !== undefined) return `WAITING its turn in queue ${m.queueName}`;
      return m.flowControlKey !== undefined
        ? `WAITING for flow-control key ${m.flowControlKey}`
        : 'WAITING';
    default:
      return undefined;
  }
}

function messageFields(m: Message): [string, unknown][] {
  return [
    ['id', m.messageId],
    ['url', m.url],
    ['group', m.topicName],
    ['queue', m.queueName],
    ['state', stateText(m)],
    ['method', m.method],
    ['retried', `${m.retried} of ${m.maxRetries}`],
    ['not before', time(m.notBefore)],
    ['created', time(m.createdAt)],
    ['callback', m.callback],
    ['failure callback', m.failureCallback],
    ['header', m.header],
    ['body', m.body ?? (m.bodyBase64 === undefined ? undefined : `(base64) ${m.bodyBase64}`)],
  ];
}

interface MessageListOpts extends ConnectionFlags, PagingFlags {
  label: string[];
  state: string[];
  destination?: string;
  queue?: string;
  flowControlKey?: string;
  schedule?: string;
}

export function messagesCommand(): Command {
  const list = act<MessageListOpts>(
    withPaging(
      withConnection(
        new Command('list').description('list the messages that are not final yet, newest first'),
      )
        .option('--label <label>', 'only messages with this label (repeatable)', collect, [])
        .option('--destination <url>', 'only messages to this URL')
        .option('--queue <name>', 'only messages of this queue')
        .option('--flow-control-key <key>', 'only messages of this flow-control key')
        .option('--schedule <id>', 'only messages of this schedule')
        .option(
          '--state <state>',
          'only messages in this state: ACTIVE, DELAYED, DUE or WAITING (repeatable)',
          collect,
          [],
        ),
    ),
    async (opts) => {
      const page = await messagingClient(opts).messages.list({
        count: opts.count,
        cursor: opts.cursor,
        filter: {
          label: opts.label.length ? opts.label : undefined,
          url: opts.destination,
          queueName: opts.queue,
          flowControlKey: opts.flowControlKey,
          scheduleId: opts.schedule,
          state: opts.state.length
            ? (opts.state.map((s) => s.toUpperCase()) as NonNullable<Message['state']>[])
            : undefined,
        },
      });
      print(opts.json, page, () =>
        table(
          ['MESSAGE ID', 'URL', 'STATE', 'NOT BEFORE', 'RETRIED', 'LABEL', 'CREATED'],
          page.messages.map((m) => [
            cell(m.messageId),
            cell(m.url),
            cell(m.state),
            time(m.notBefore),
            `${m.retried} of ${m.maxRetries}`,
            cell(m.labels ?? m.label),
            time(m.createdAt),
          ]),
        ),
      );
    },
  );
  const get = act<ConnectionFlags>(
    withConnection(new Command('get').description('show a message that is not final yet')).argument(
      '<id>',
    ),
    async (opts, [id = '']) => {
      const client = messagingClient(opts);
      const message = await client.messages.get(id);
      // Waiting for a retry: why (the last failed attempt) and until when, from its log.
      const failures =
        opts.json || message.retried === 0
          ? []
          : (
              await client.events.list({
                filter: { messageId: id, state: ['ERROR', 'RETRY'] },
                count: 2,
              })
            ).events;
      const error = failures.find((e) => e.state === 'ERROR');
      const retry = failures.find((e) => e.state === 'RETRY');
      print(opts.json, message, () =>
        record([
          ...messageFields(message),
          ...(error ? [['last error', `${time(error.time)} ${error.error ?? ''}`] as const] : []),
          ...(retry ? [['retry scheduled for', time(retry.nextDeliveryTime)] as const] : []),
        ]),
      );
    },
  );
  const cancel = act<ConnectionFlags>(
    withConnection(new Command('cancel').description('cancel messages')).argument('<ids...>'),
    async (opts, ids) => {
      const result = await messagingClient(opts).messages.cancelMany({ messageIds: ids });
      print(opts.json, result, () => `cancelled ${result.cancelled}`);
    },
  );
  return new Command('messages')
    .description('messages that are not delivered yet')
    .addCommand(list)
    .addCommand(get)
    .addCommand(cancel);
}

const dlqRow = (m: DlqMessage): string[] => [
  m.dlqId,
  m.messageId,
  cell(m.url),
  cell(m.responseStatus),
  time(m.dlqCreatedAt),
  time(m.createdAt),
];

/** `delete <dlq-ids...>`: removes DLQ entries and says how many of the ids were not there. */
export function dlqDeleteCommand(
  description: string,
  remove: (client: FerryClient, ids: string[]) => Promise<{ deleted: number }>,
): Command {
  return act<ConnectionFlags>(
    withConnection(new Command('delete').description(description)).argument('<dlq-ids...>'),
    async (opts, ids) => {
      const res = await remove(messagingClient(opts), ids);
      print(opts.json, res, () => counted('deleted', res.deleted, ids, 'not in the DLQ'));
    },
  );
}

export function dlqCommand(): Command {
  const list = act<ConnectionFlags & PagingFlags & { destination?: string }>(
    withPaging(
      withConnection(
        new Command('list').description('list dead-lettered messages, newest first'),
      ).option('--destination <url>', 'only messages to this URL'),
    ),
    async (opts) => {
      const { destination } = opts;
      const page = await messagingClient(opts).dlq.list({
        count: opts.count,
        cursor: opts.cursor,
        filter: destination === undefined ? undefined : { url: destination },
      });
      print(opts.json, page, () =>
        table(
          ['DLQ ID', 'MESSAGE ID', 'URL', 'STATUS', 'FAILED', 'CREATED'],
          page.messages.map(dlqRow),
        ),
      );
    },
  );
  const get = act<ConnectionFlags>(
    withConnection(new Command('get').description('show one entry')).argument('<dlq-id>'),
    async (opts, [id = '']) => {
      const m = await messagingClient(opts).dlq.get(id);
      print(opts.json, m, () =>
        record([
          ['dlq id', m.dlqId],
          ['failed at', time(m.dlqCreatedAt)],
          ...messageFields(m),
          ['response status', m.responseStatus],
          ['response body', m.responseBody],
          ['error', m.error],
        ]),
      );
    },
  );
  const retry = act<ConnectionFlags>(
    withConnection(new Command('retry').description('publish entries again')).argument(
      '<dlq-ids...>',
    ),
    async (opts, ids) => {
      const res = await messagingClient(opts).dlq.retryMany({ dlqIds: ids });
      print(opts.json, res, () =>
        table(
          ['DLQ ID', 'NEW MESSAGE ID'],
          res.responses.map((r, i) => [ids[i] ?? '', r.messageId]),
        ),
      );
    },
  );
  const remove = dlqDeleteCommand('remove entries', (client, ids) =>
    client.dlq.deleteMany({ dlqIds: ids }),
  );
  return new Command('dlq')
    .description('the dead-letter queue')
    .addCommand(list)
    .addCommand(get)
    .addCommand(retry)
    .addCommand(remove);
}

export function keysCommand(): Command {
  const show = (name: string, description: string, rotate: boolean): Command =>
    act<ConnectionFlags>(
      withConnection(new Command(name).description(description)),
      async (opts) => {
        const keys = messagingClient(opts).keys;
        const result = rotate ? await keys.rotate() : await keys.get();
        print(opts.json, result, () =>
          record([
            ['current', result.current],
            ['next', result.next],
          ]),
        );
      },
    );
  return new Command('keys')
    .description('the signing keys of deliveries')
    .addCommand(show('get', 'show the current and next signing keys', false))
    .addCommand(show('rotate', 'next becomes current and a new next is drawn', true));
}
