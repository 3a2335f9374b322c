/**
 * Schemas of the messaging API routes (src/api/routes/*.ts), keyed `"METHOD url"` as Fastify
 * registers them. The header prefix is a setting (`Svc`, `Upstash`…), so the schemas are built
 * for the configured one and the document shows its real header names.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { MAX_BATCH_ENTRIES } from '../routes/batch.js';
import { QUEUE_NAME } from '../../core/flow-control.js';
import { FAILURE_FUNCTION_STATES } from '../../core/workflow.js';
import { PAGE_BUDGET_BYTES } from '../list-page.js';
import { STATS_PERIODS } from '../../core/usage-stats.js';
import { StatsOut } from './management.js';
import {
  Empty,
  errors,
  int,
  MESSAGING_SECURITY,
  multi,
  pathParam,
  str,
  type RouteSchema,
} from './common.js';
import {
  cursor,
  DlqMessageOut,
  EventOut,
  FlowControlKeyOut,
  GroupPublishResult,
  MessageOut,
  PublishResult,
  QueueOut,
  ResumedRun,
  ScheduleOut,
  UrlGroupOut,
  WaiterOut,
  WorkflowDlqOut,
  WorkflowRunOut,
} from './objects.js';

const opt = Type.Optional;

/**
 * A JSON body object: a field it does not name is a 400 naming it (`body: unknown field
 * "paralelism"`), as in the management API, rather than silently ignored. The official SDKs send
 * only the fields these schemas name (checked against @upstash/qstash and @upstash/workflow).
 */
const closed = { additionalProperties: false } as const;

/**
 * The largest integer a JSON body field takes: `1e400` parses to `Infinity`, which JSON Schema's
 * `integer` lets through.
 */
const MAX_INT = Number.MAX_SAFE_INTEGER;

/** `POST /v2/queues`: the handler relies on this schema for the body's shape and types. */
export const QueueUpsertBody = Type.Object(
  {
    queueName: Type.String({
      pattern: QUEUE_NAME.source,
      description: '1 to 200 letters, digits, `-`, `.` and `_`; not `.` or `..` (400)',
    }),
    parallelism: opt(
      Type.Integer({
        minimum: 1,
        maximum: MAX_INT,
        description: "At most the plan's max_parallelism (412); default 1",
      }),
    ),
    paused: opt(Type.Boolean()),
  },
  closed,
);
export type QueueUpsert = Static<typeof QueueUpsertBody>;

/** At most this many ids in one `…/multi` call: a page of the DLQ, read with its bodies. */
export const MAX_MULTI_IDS = 100;

/** The body of the DLQs' `…/multi` calls (`POST /v2/dlq/retry/multi` and the workflow DLQ's). */
export const DlqIdsBodySchema = Type.Object(
  {
    dlqIds: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      maxItems: MAX_MULTI_IDS,
      description: 'DLQ ids, each of which must be in the DLQ (404)',
    }),
  },
  closed,
);
export type DlqIdsBody = Static<typeof DlqIdsBodySchema>;

/** The publish settings headers (`<P>-Retries`…), documented under the configured prefix. */
function settingsHeaders(prefix: string, extra: Record<string, string> = {}) {
  const h = (suffix: string, description: string) => [
    `${prefix}-${suffix}`,
    opt(Type.String({ description })),
  ];
  const entries = [
    h('Method', 'Delivery method: GET, POST, PUT, PATCH or DELETE (default POST)'),
    h(
      'Delay',
      'Start delivery this long after the publish: `10s`, `1h30m`, `1d2h` or seconds; at most the plan’s max_delay (412)',
    ),
    h('Not-Before', 'Start delivery at this Unix time (seconds); wins over Delay'),
    h('Retries', 'Retries after a failed attempt (default: the plan’s default_retries)'),
    h('Retry-Delay', 'Delay before each retry, ms, as an expression of `retried`'),
    h('Timeout', 'Longest time one attempt may take (a duration); only shortens the plan’s'),
    h('Label', 'Comma-separated labels, for filtering logs, the DLQ and bulk cancel'),
    h('Deduplication-Id', 'Publishes with the same id are stored once (answer 202)'),
    h('Content-Based-Deduplication', '`true`: deduplicate on URL, headers and body'),
    h('Flow-Control-Key', 'Limit the deliveries of this key (see Flow-Control-Value)'),
    h('Flow-Control-Value', '`parallelism=<n>, rate=<n>, period=<duration>`'),
    h(
      'Header-Forward',
      '`true`: forward every request header (besides `<P>-Forward-<Name>` headers, which forward `<Name>` always)',
    ),
    h('Redact-Fields', '`body`, `header`, `header[<Name>]`: shown redacted in every answer'),
    h('Callback', 'URL that gets the delivery’s response'),
    h('Callback-Method', 'Method of the callback'),
    h('Callback-Timeout', 'Timeout of the callback'),
    h('Callback-Retries', 'Retries of the callback'),
    h('Callback-Retry-Delay', 'Retry delay of the callback'),
    h('Callback-Delay', 'Delay of the callback'),
    h('Failure-Callback', 'URL called when the message fails for good'),
    h('Failure-Callback-Method', 'Method of the failure callback'),
    h('Failure-Callback-Timeout', 'Timeout of the failure callback'),
    h('Failure-Callback-Retries', 'Retries of the failure callback'),
    h('Failure-Callback-Retry-Delay', 'Retry delay of the failure callback'),
    h('Failure-Callback-Delay', 'Delay of the failure callback'),
    h('Workflow-RunId', 'Workflow run of this message (workflow SDKs)'),
    h('Workflow-Init', '`true`: this message starts the run (workflow SDKs)'),
    h('Workflow-Url', 'The workflow’s URL (workflow SDKs)'),
    ...Object.entries(extra).map(([suffix, description]) => h(suffix, description)),
  ];
  return Type.Object(Object.fromEntries(entries) as Record<string, TSchema>, {
    description: `Publish settings. Each may also be sent as a query parameter named in lower case (\`${prefix.toLowerCase()}-retries=3\`); \`${prefix}-Forward-<Name>: v\` delivers header \`<Name>: v\`. Several values of one setting are joined with ", ".`,
  });
}

const countOf = (max: number) => int(`Most items (1–${max})`, 1, max);
const bodyCut = int(
  `Bytes of each body shown (0–${PAGE_BUDGET_BYTES}, default 65536); longer bodies come cut`,
  0,
  PAGE_BUDGET_BYTES,
);
const dates = {
  fromDate: int('Only from this Unix time, ms', 0, Number.MAX_SAFE_INTEGER),
  toDate: int('Only up to this Unix time, ms', 0, Number.MAX_SAFE_INTEGER),
};
const recordFilters = {
  messageId: multi('Message ids'),
  url: multi('Destination URLs'),
  topicName: multi('URL-group names'),
  scheduleId: multi('Schedule ids'),
  queueName: multi('Queue names'),
  label: multi('Labels'),
  ...dates,
};
const listNote =
  'Multi-value filters come repeated or comma-joined (OR within a field, AND across fields). Unknown parameters are a 400.';

const q = (properties: Record<string, TSchema>) =>
  Type.Object(properties, { description: listNote });

const eventsQuery = q({
  ...recordFilters,
  messageIds: multi('Message ids'),
  flowControlKey: multi('Flow-control keys'),
  callerIp: multi('Caller IPs'),
  callerIP: multi('Caller IPs (the spelling of the events’ `callerIP`)'),
  state: multi(
    'States (CREATED, ACTIVE, DELIVERED, ERROR, RETRY, FAILED, CANCELLED, …, IN_PROGRESS)',
  ),
  host: multi('Destination hosts'),
  path: multi('Destination paths'),
  cursor: str('The previous page’s cursor'),
  count: countOf(1000),
  order: str('Accepted for SDK compatibility; newest first'),
  groupBy: str('Accepted for SDK compatibility'),
  bodyCut,
});

const dlqFilters = {
  ...recordFilters,
  dlqIds: multi('DLQ ids'),
  flowControlKey: multi('Flow-control keys'),
  responseStatus: multi('Response statuses (100–999)'),
  callerIp: multi('Caller IPs'),
  cursor: str('The previous page’s cursor'),
  count: countOf(100),
  order: str('Accepted for SDK compatibility'),
  source: str('`workflow`: list the workflow DLQ instead (the workflow SDK’s form)'),
};

const cancelQuery = q({
  messageIds: multi('Message ids'),
  messageId: multi('Message ids'),
  topicName: multi('URL-group names'),
  queueName: multi('Queue names'),
  url: multi('Destination URLs'),
  host: multi('Destination hosts'),
  path: multi('Destination paths'),
  label: multi('Labels'),
  flowControlKey: multi('Flow-control keys'),
  scheduleId: multi('Schedule ids'),
  callerIp: multi('Caller IPs'),
  count: str('Accepted and ignored: every matching message is cancelled (the SDKs send `count`)'),
  ...dates,
});

/** `GET /v2/messages`: the bulk cancel's filters, paged like the other lists. */
const messageListQuery = q({
  ...Object.fromEntries(Object.entries(cancelQuery.properties).filter(([k]) => k !== 'count')),
  cursor: str('The previous page’s cursor'),
  count: countOf(100),
  bodyCut,
  state: multi('Only messages in these states: ACTIVE, DELAYED, DUE, WAITING'),
});

const workflowFilters = {
  workflowRunId: multi('Run ids'),
  workflowRunIds: multi('Run ids'),
  workflowUrl: multi('Workflow URLs'),
  workflowCreatedAt: int('Run creation time, Unix ms', 0, Number.MAX_SAFE_INTEGER),
  label: multi('Labels'),
  callerIp: multi('Caller IPs'),
  flowControlKey: multi('Flow-control keys'),
  dlqId: multi('DLQ ids'),
  dlqIds: multi('DLQ ids'),
  ...dates,
  cursor: str('The previous page’s cursor'),
};
const failureStates = multi(`Failure-function states (${FAILURE_FUNCTION_STATES.join(', ')})`);

/** The messaging routes' schemas for header prefix `prefix`. */
export function messagingSchemas(prefix: string): Record<string, RouteSchema> {
  const common = errors(400, 401, 429);
  const publishHeaders = settingsHeaders(prefix);
  const raw = (description: string) => Type.Unknown({ description });
  const publishResponses = {
    200: Type.Union([PublishResult, GroupPublishResult], {
      description: 'Stored durably (a URL group: one result per endpoint)',
    }),
    202: Type.Object(PublishResult.properties, {
      description: 'A duplicate: nothing stored; `messageId` is the earlier message’s',
    }),
    ...common,
    ...errors(404, 412, 413),
  };
  const destinationText = Type.String({
    description: 'A URL (`https://…`, unencoded, with its own query string) or a URL-group name',
  });
  const destination = Type.Object({ destination: destinationText });
  const s: Record<string, RouteSchema> = {};
  const tag = (tags: string[], entries: Record<string, RouteSchema>) => {
    for (const [key, schema] of Object.entries(entries)) {
      s[key] = { tags, security: MESSAGING_SECURITY, ...schema };
    }
  };

  tag(['Publish'], {
    'POST /v2/publish/*': {
      summary: 'Publish a message to a URL or a URL group',
      description:
        'The body is delivered byte for byte with its Content-Type. Settings come as headers (or lower-case query parameters).',
      params: destination,
      headers: publishHeaders,
      consumes: ['*/*'],
      body: raw('The message body, any bytes'),
      response: publishResponses,
    },
    'POST /v2/enqueue/:queue/*': {
      summary: 'Publish into a FIFO queue (created on first use)',
      params: Type.Object({
        queue: Type.String({
          description: 'Queue name: 1 to 200 letters, digits, `-`, `.` and `_`',
        }),
        destination: destinationText,
      }),
      headers: publishHeaders,
      consumes: ['*/*'],
      body: raw('The message body, any bytes'),
      response: publishResponses,
    },
    'POST /v2/batch': {
      summary: 'Many publishes in one request, all or nothing',
      body: Type.Array(
        Type.Object(
          {
            destination: Type.String({ minLength: 1, description: 'A URL or a URL-group name' }),
            body: opt(
              Type.Unknown({
                description: 'A string is sent as is; another JSON value as its JSON',
              }),
            ),
            headers: opt(
              Type.Union([
                Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())])),
                Type.Null(),
              ]),
            ),
            queue: opt(Type.Union([Type.String(), Type.Null()])),
          },
          closed,
        ),
        { maxItems: MAX_BATCH_ENTRIES },
      ),
      response: {
        200: Type.Array(Type.Union([PublishResult, GroupPublishResult]), {
          description: 'One result per entry, in order',
        }),
        ...common,
        ...errors(404, 412, 413),
      },
    },
  });

  const nameParam = pathParam('name', 'URL-group name');
  const endpoints = Type.Object(
    {
      endpoints: Type.Array(
        Type.Object({ url: opt(Type.String()), name: opt(Type.String()) }, closed),
      ),
    },
    closed,
  );
  tag(['URL groups'], {
    'POST /v2/topics/:name/endpoints': {
      summary: 'Add endpoints (creates the group)',
      params: nameParam,
      body: endpoints,
      response: { 200: UrlGroupOut, ...common, ...errors(412) },
    },
    'DELETE /v2/topics/:name/endpoints': {
      summary: 'Remove endpoints (by url or name); the group goes with its last endpoint',
      params: nameParam,
      body: endpoints,
      response: {
        200: Type.Union([UrlGroupOut, Type.Object({ deleted: Type.Boolean() })]),
        ...common,
        ...errors(404),
      },
    },
    'PATCH /v2/topics/:name': {
      summary: 'Set the group’s default headers (publish settings)',
      params: nameParam,
      body: Type.Object(
        {
          headers: opt(
            Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())])),
          ),
        },
        closed,
      ),
      response: { 200: UrlGroupOut, ...common, ...errors(404) },
    },
    'GET /v2/topics': {
      summary: 'List URL groups',
      response: { 200: Type.Array(UrlGroupOut), ...common },
    },
    'GET /v2/topics/:name': {
      summary: 'Read a URL group',
      params: nameParam,
      response: { 200: UrlGroupOut, ...common, ...errors(404) },
    },
    'DELETE /v2/topics/:name': {
      summary: 'Delete a URL group',
      params: nameParam,
      response: { 200: Type.Object({ deleted: Type.Boolean() }), ...common, ...errors(404) },
    },
  });

  const idParam = pathParam('id', 'Message id');
  tag(['Messages'], {
    'GET /v2/messages/:id': {
      summary: 'Read a message that is not final yet',
      params: idParam,
      response: { 200: MessageOut, ...common, ...errors(404) },
    },
    'DELETE /v2/messages/:id': {
      summary: 'Cancel a message',
      params: idParam,
      response: { 200: Type.Object({ cancelled: Type.Integer() }), ...common, ...errors(404) },
    },
    'DELETE /v2/messages': {
      summary: 'Cancel every message matching the filters',
      querystring: cancelQuery,
      response: { 200: Type.Object({ cancelled: Type.Integer() }), ...common },
    },
    'GET /v2/messages': {
      summary: 'List messages that are not final yet, newest first (a Ferry extension)',
      querystring: messageListQuery,
      response: {
        200: Type.Object(
          { cursor, messages: Type.Array(MessageOut) },
          { description: 'A page, newest first' },
        ),
        ...common,
      },
    },
  });

  const eventsPage = (key: string) =>
    Type.Object({ cursor, [key]: Type.Array(EventOut) }, { description: 'A page, newest first' });
  tag(['Events'], {
    'GET /v2/events': {
      summary: 'The events log, newest first',
      querystring: eventsQuery,
      response: { 200: eventsPage('events'), ...common },
    },
    'GET /v2/logs': {
      summary: 'The events log (the name QStash SDKs use)',
      querystring: eventsQuery,
      response: { 200: eventsPage('logs'), ...common },
    },
  });

  const dlqParam = pathParam('dlqId', 'DLQ id');
  const override = settingsHeaders(prefix);
  tag(['DLQ'], {
    'GET /v2/dlq': {
      summary: 'List DLQ entries, newest first',
      querystring: q({ ...dlqFilters, bodyCut, failureFunctionState: failureStates }),
      response: {
        200: Type.Object({
          cursor,
          messages: Type.Array(Type.Union([DlqMessageOut, WorkflowDlqOut])),
        }),
        ...common,
      },
    },
    'GET /v2/dlq/:dlqId': {
      summary: 'Read a DLQ entry',
      params: dlqParam,
      response: { 200: DlqMessageOut, ...common, ...errors(404) },
    },
    'DELETE /v2/dlq/:dlqId': {
      summary: 'Delete a DLQ entry',
      params: dlqParam,
      response: { 200: Type.Object({ deleted: Type.Integer() }), ...common, ...errors(404) },
    },
    'DELETE /v2/dlq': {
      summary: 'Delete one page of matching DLQ entries',
      querystring: q(dlqFilters),
      response: { 200: Type.Object({ deleted: Type.Integer(), cursor }), ...common },
    },
    'POST /v2/dlq/retry/:dlqId': {
      summary: 'Publish a DLQ entry again; settings sent override the stored ones',
      params: dlqParam,
      headers: override,
      response: { 201: Type.Object({ messageId: Type.String() }), ...common, ...errors(404) },
    },
    'POST /v2/dlq/retry/multi': {
      summary: 'Publish the DLQ entries of a list of ids again',
      headers: override,
      body: DlqIdsBodySchema,
      response: {
        201: Type.Object({ responses: Type.Array(Type.Object({ messageId: Type.String() })) }),
        ...common,
        ...errors(404, 412),
      },
    },
    'POST /v2/dlq/retry': {
      summary: 'Publish one page of matching DLQ entries again',
      querystring: q(dlqFilters),
      headers: override,
      response: {
        201: Type.Object({
          cursor,
          responses: Type.Array(Type.Object({ messageId: Type.String() })),
        }),
        ...common,
        ...errors(412),
      },
    },
  });

  tag(['Signing keys'], {
    'GET /v2/keys': {
      summary: 'The signing keys',
      response: { 200: Type.Object({ current: Type.String(), next: Type.String() }), ...common },
    },
    'POST /v2/keys/rotate': {
      summary: 'Rotate the signing keys: next becomes current, a new next',
      response: { 200: Type.Object({ current: Type.String(), next: Type.String() }), ...common },
    },
  });

  const scheduleParam = pathParam('id', 'Schedule id');
  const pauseAnswer = Type.Object({ scheduleId: Type.String(), isPaused: Type.Boolean() });
  const scheduleHeaders = settingsHeaders(prefix, {
    Cron: 'Cron expression (required): `*/5 * * * *`, optionally with `CRON_TZ=`',
    'Schedule-Id': 'Id to create or replace',
    'Queue-Name': 'Each tick’s messages join this queue',
  });
  tag(['Schedules'], {
    'POST /v2/schedules/*': {
      summary: 'Create (or, with Schedule-Id, replace) a cron schedule',
      params: destination,
      headers: scheduleHeaders,
      consumes: ['*/*'],
      body: raw('The body of each tick’s message, any bytes'),
      response: {
        200: Type.Object({ scheduleId: Type.String() }),
        ...common,
        ...errors(404, 412, 413),
      },
    },
    'GET /v2/schedules': {
      summary: 'List the schedules, oldest first',
      querystring: Type.Object({ bodyCut }),
      response: { 200: Type.Array(ScheduleOut), ...common },
    },
    'GET /v2/schedules/:id': {
      summary: 'Read a schedule',
      params: scheduleParam,
      response: { 200: ScheduleOut, ...common, ...errors(404) },
    },
    'DELETE /v2/schedules/:id': {
      summary: 'Delete a schedule',
      params: scheduleParam,
      response: { 200: Type.Object({ deleted: Type.Integer() }), ...common, ...errors(404) },
    },
  });
  for (const method of ['POST', 'PATCH']) {
    tag(['Schedules'], {
      [`${method} /v2/schedules/:id/pause`]: {
        summary: 'Pause a schedule: ticks are skipped',
        params: scheduleParam,
        response: { 200: pauseAnswer, ...common, ...errors(404) },
      },
      [`${method} /v2/schedules/:id/resume`]: {
        summary: 'Resume a schedule from the next tick after now',
        params: scheduleParam,
        response: { 200: pauseAnswer, ...common, ...errors(404) },
      },
    });
  }

  const runParam = pathParam('runId', 'Workflow run id');
  const wfDlqParam = pathParam('dlqId', 'Workflow DLQ id');
  const wfLogs = {
    summary: 'Workflow runs, newest first',
    querystring: q({
      ...workflowFilters,
      count: countOf(1000),
      state: multi('Run states'),
      host: multi('Hosts of the workflow URL'),
      path: multi('Paths of the workflow URL'),
      messageId: multi('Message ids of a run’s steps'),
      bodyCut,
      groupBy: str('Accepted for SDK compatibility'),
      workflowUrlExactMatch: str('`true`/`false`'),
    }),
    response: { 200: Type.Object({ cursor, runs: Type.Array(WorkflowRunOut) }), ...common },
  };
  const wfDlqQuery = q({
    ...workflowFilters,
    count: countOf(1000),
    failureFunctionState: failureStates,
    workflowUrlExactMatch: str('`true`/`false`'),
  });
  const wfDlqList = {
    summary: 'The workflow DLQ',
    querystring: q({
      ...workflowFilters,
      count: countOf(100),
      failureFunctionState: failureStates,
      url: multi('Workflow URLs'),
      responseStatus: multi('Response statuses of the failed step (100–999)'),
      bodyCut,
      source: str('Accepted (the SDK’s form)'),
      order: str('Accepted for SDK compatibility'),
      workflowUrlExactMatch: str('`true`/`false`'),
    }),
    response: { 200: Type.Object({ cursor, messages: Type.Array(WorkflowDlqOut) }), ...common },
  };
  tag(['Workflows'], {
    'GET /v2/workflows/runs/:runId': {
      summary: 'A running run’s history (the workflow SDK’s lazy fetch)',
      params: runParam,
      response: {
        200: Type.Array(
          Type.Object({ messageId: Type.String(), body: Type.String(), callType: Type.String() }),
        ),
        ...common,
        ...errors(404),
      },
    },
    'DELETE /v2/workflows/runs/:runId': {
      summary: 'Cancel a run, or complete it (`cancel=false`, body = its result)',
      params: runParam,
      querystring: Type.Object({
        cancel: opt(
          Type.Enum(['true', 'false'], {
            description:
              '`false`: complete the run with the body as its result (the workflow SDK sends it ' +
              'at the end of a run); `true` or absent: cancel it',
          }),
        ),
      }),
      consumes: ['*/*'],
      body: raw('The run’s result (on completion)'),
      response: { 200: Empty, ...common, ...errors(404) },
    },
    'DELETE /v2/workflows/runs': {
      summary: 'Cancel runs by id or filters',
      querystring: q({
        ...workflowFilters,
        count: countOf(1000),
        workflowUrlExactMatch: str('`true`: `workflowUrl` is exact, else a prefix'),
        host: multi('Hosts of the workflow URL'),
        path: multi('Paths of the workflow URL'),
      }),
      response: { 200: Type.Object({ cancelled: Type.Integer() }), ...common },
    },
    'GET /v2/workflows/logs': wfLogs,
    'GET /v2/workflows/events': wfLogs,
    'GET /v2/workflows/dlq': wfDlqList,
    'GET /v2/workflows/dlq/:dlqId': {
      summary: 'Read a workflow DLQ entry',
      params: wfDlqParam,
      response: { 200: WorkflowDlqOut, ...common, ...errors(404) },
    },
    'DELETE /v2/workflows/dlq/:dlqId': {
      summary: 'Remove a workflow DLQ entry',
      params: wfDlqParam,
      response: { 200: Type.Object({ deleted: Type.Integer() }), ...common, ...errors(404) },
    },
    'DELETE /v2/workflows/dlq': {
      summary: 'Remove matching workflow DLQ entries',
      querystring: wfDlqQuery,
      response: { 200: Type.Object({ deleted: Type.Integer(), cursor }), ...common },
    },
    'POST /v2/workflows/dlq/callback/:dlqId': {
      summary: 'Run the failure function again',
      params: wfDlqParam,
      response: { 200: ResumedRun, ...common, ...errors(404) },
    },
  });
  for (const kind of ['resume', 'restart']) {
    tag(['Workflows'], {
      [`POST /v2/workflows/dlq/${kind}`]: {
        summary: `${kind === 'resume' ? 'Resume (from the failed step)' : 'Restart'} runs in bulk`,
        querystring: wfDlqQuery,
        headers: settingsHeaders(prefix),
        response: {
          200: Type.Object({
            workflowRuns: Type.Array(ResumedRun),
            cursor: Type.String({ description: '`""` once every match was processed' }),
          }),
          ...common,
        },
      },
      [`POST /v2/workflows/dlq/${kind}/multi`]: {
        summary: `${kind === 'resume' ? 'Resume' : 'Restart'} the runs of a list of DLQ ids`,
        headers: settingsHeaders(prefix),
        body: DlqIdsBodySchema,
        response: {
          200: Type.Object({ workflowRuns: Type.Array(ResumedRun) }),
          ...common,
          ...errors(404),
        },
      },
      [`POST /v2/workflows/dlq/${kind}/:dlqId`]: {
        summary: `${kind === 'resume' ? 'Resume' : 'Restart'} one run`,
        params: wfDlqParam,
        headers: settingsHeaders(prefix),
        response: { 200: ResumedRun, ...common, ...errors(404) },
      },
    });
  }

  const eventParam = pathParam('eventId', 'Event id');
  tag(['Workflows'], {
    'POST /v2/wait/:eventId': {
      summary: 'A run waits for an event (`context.waitForEvent`)',
      params: eventParam,
      headers: publishHeaders,
      body: Type.Object(
        {
          url: Type.String(),
          timeout: Type.Union([Type.Integer({ minimum: 0, maximum: MAX_INT }), Type.String()]),
          step: Type.Object({}),
          timeoutUrl: opt(Type.String()),
          timeoutHeaders: opt(Type.Unknown()),
          // @upstash/workflow sends it (as undefined, so absent); stored by neither.
          timeoutBody: opt(Type.Unknown()),
        },
        closed,
      ),
      response: { 200: Type.Object({ messageId: Type.String() }), ...common, ...errors(412) },
    },
    'POST /v2/notify/:eventId': {
      summary: 'Wake the runs waiting for the event, with the body as the event data',
      params: eventParam,
      consumes: ['*/*'],
      body: raw('The event data, any bytes'),
      response: {
        201: Type.Array(
          Type.Object({ waiter: WaiterOut, messageId: Type.String(), error: Type.String() }),
        ),
        ...common,
        ...errors(413),
      },
    },
    'POST /v2/notify/:runId/:eventId': {
      summary:
        'Notify one run: wake its wait for the event, or keep the event for the run’s next wait (lookback)',
      params: Type.Object({
        runId: Type.String({ description: 'Workflow run id' }),
        eventId: Type.String({ description: 'Event id' }),
      }),
      consumes: ['*/*'],
      body: raw('The event data, any bytes'),
      response: {
        201: Type.Array(
          Type.Object({ waiter: WaiterOut, messageId: Type.String(), error: Type.String() }),
          { description: 'The woken wait, or `[]` when the event was kept for the run' },
        ),
        ...common,
        ...errors(404, 412, 413),
      },
    },
    'GET /v2/waiters/:eventId': {
      summary: 'The runs waiting for the event',
      params: eventParam,
      response: { 200: Type.Array(WaiterOut), ...common },
    },
  });

  // The webhook URL of `context.createWebhook` takes any method and no token: the URL is the
  // capability (routes/workflow-hooks.ts). OpenAPI 3.1 has no QUERY method, so that one is not
  // documented.
  const hook: RouteSchema = {
    summary:
      'Resume the run waiting on this webhook with the request (no token: the URL is the capability)',
    security: [],
    params: Type.Object({
      userId: Type.String({ description: 'Account id' }),
      runId: Type.String({ description: 'Workflow run id' }),
      eventId: Type.String({ description: 'Event id made by the run’s createWebhook step' }),
    }),
    response: {
      200: Type.Object({ messageId: Type.String() }, { description: 'The waiting run resumes' }),
      202: Type.Object({}, { description: 'Kept for the run’s next wait for this webhook' }),
      ...errors(404, 413),
    },
  };
  const hookBody = { ...hook, consumes: ['*/*'], body: raw('Any bytes, passed to the run') };
  const hookUrl = '/v2/workflows/hooks/:userId/:runId/:eventId';
  tag(['Workflows'], {
    [`GET ${hookUrl}`]: hook,
    [`OPTIONS ${hookUrl}`]: hook,
    [`TRACE ${hookUrl}`]: hook,
    [`DELETE ${hookUrl}`]: hookBody,
    [`POST ${hookUrl}`]: hookBody,
    [`PUT ${hookUrl}`]: hookBody,
    [`PATCH ${hookUrl}`]: hookBody,
  });

  const keyParam = pathParam('key', 'Flow-control key');
  // Unknown parameters are refused by the handler (`queryOf`), which also lets the token through.
  const none = Type.Object({});
  const keyAction = (summary: string, querystring: TSchema = none): RouteSchema => ({
    summary,
    params: keyParam,
    querystring,
    response: { 200: FlowControlKeyOut, ...common, ...errors(404) },
  });
  tag(['Flow control'], {
    'GET /v2/flowControl': {
      summary: 'List flow-control keys',
      querystring: Type.Object({ search: str('Only keys containing this') }),
      response: { 200: Type.Array(FlowControlKeyOut), ...common },
    },
    'GET /v2/flowControl/:key': keyAction('Read a flow-control key'),
    'POST /v2/flowControl/:key/pause': keyAction('Pause a key'),
    'POST /v2/flowControl/:key/resume': keyAction('Resume a key'),
    'POST /v2/flowControl/:key/pin': {
      ...keyAction(
        'Pin limits (later publishes no longer change them) and reset the rate',
        Type.Object({
          parallelism: int('Parallelism', 1, 999_999_999),
          rate: int('Rate per period', 1, 999_999_999),
          period: str('Period: a duration (`1m`) or seconds, 1s to 7d'),
        }),
      ),
      response: { 200: FlowControlKeyOut, ...common, ...errors(404, 412) },
    },
    'POST /v2/flowControl/:key/unpin': keyAction(
      'Unpin limits',
      Type.Object({
        parallelism: opt(Type.Enum(['true', 'false'])),
        rate: opt(Type.Enum(['true', 'false'])),
      }),
    ),
    'POST /v2/flowControl/:key/resetRate': keyAction('Reset the rate window'),
    'GET /v2/globalParallelism': {
      summary: 'The account’s deliveries in flight and their maximum',
      response: {
        200: Type.Object({ parallelismMax: Type.Integer(), parallelismCount: Type.Integer() }),
        ...common,
      },
    },
  });

  const queueParam = pathParam('name', 'Queue name');
  tag(['Usage'], {
    'GET /v2/usage': {
      summary: 'Your own metered usage (a Ferry extension; the management stats object)',
      querystring: Type.Object({
        period: opt(Type.Enum(Object.keys(STATS_PERIODS), { default: '1h' })),
      }),
      response: { 200: StatsOut, ...common },
    },
    'GET /v2/usage/now': {
      summary:
        'Your messages that are not final, by state, your DLQ size and the runs in your workflow DLQ (a Ferry extension)',
      response: {
        200: Type.Object({
          due: Type.Integer({ description: 'Due now, not being delivered' }),
          delayed: Type.Integer({ description: 'Due later (delay, not-before, retry backoff)' }),
          waiting: Type.Integer({ description: 'Waiting behind a flow-control key or queue' }),
          inFlight: Type.Integer({ description: 'Being delivered' }),
          dlq: Type.Integer({ description: 'Entries in the DLQ' }),
          workflowDlq: Type.Integer({ description: 'Runs in the workflow DLQ' }),
          limit: Type.Integer({
            description: 'Each count but `dlq` stops here (equal means at least)',
          }),
        }),
        ...common,
      },
    },
  });

  tag(['Queues'], {
    'POST /v2/queues': {
      summary: 'Create or update a queue',
      body: QueueUpsertBody,
      response: { 200: Empty, ...common, ...errors(412) },
    },
    'GET /v2/queues': {
      summary: 'List queues',
      querystring: none,
      response: { 200: Type.Array(QueueOut), ...common },
    },
    'GET /v2/queues/:name': {
      summary: 'Read a queue',
      params: queueParam,
      response: { 200: QueueOut, ...common, ...errors(404) },
    },
    'DELETE /v2/queues/:name': {
      summary: 'Delete a queue and cancel its messages',
      params: queueParam,
      response: { 200: Empty, ...common, ...errors(404) },
    },
    'POST /v2/queues/:name/pause': {
      summary: 'Pause a queue',
      params: queueParam,
      response: { 200: Empty, ...common, ...errors(404) },
    },
    'POST /v2/queues/:name/resume': {
      summary: 'Resume a queue',
      params: queueParam,
      response: { 200: Empty, ...common, ...errors(404) },
    },
  });
  return s;
}
