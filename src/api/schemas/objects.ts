/**
 * The JSON objects the messaging API answers with (API.md "Object shapes"), as schemas. They are
 * documentation and the contract the OpenAPI test checks real answers against; answers are
 * serialized with JSON.stringify (openapi.ts), so a field missing here is never dropped.
 */
import { Type } from 'typebox';
import { EVENT_STATES } from '../../core/types.js';
import { FAILURE_FUNCTION_STATES, WORKFLOW_RUN_STATES } from '../../core/workflow.js';
import { HeaderMapOut, Millis } from './common.js';

const opt = Type.Optional;
const S = (description?: string) => Type.String(description ? { description } : {});
const I = (description?: string) => Type.Integer(description ? { description } : {});

/** Body fields of a message, schedule or DLQ entry: text, or base64 when not UTF-8. */
const bodyFields = {
  body: opt(S('The body as text (UTF-8), or `REDACTED…` when redacted')),
  bodyBase64: opt(S('The body, base64, when it is not valid UTF-8')),
  bodyTruncated: opt(Type.Boolean({ description: 'A list cut the body (see `bodyCut`)' })),
  bodySize: opt(I('The whole body size in bytes, when cut')),
};

/** A message's fields, in the messages API and in a DLQ entry. */
const messageFields = {
  messageId: S(),
  url: S('Destination URL'),
  topicName: opt(S('The URL group it was published to')),
  endpointName: opt(S()),
  method: S(),
  header: opt(HeaderMapOut),
  ...bodyFields,
  maxRetries: I(),
  retried: opt(I()),
  notBefore: Millis('Earliest delivery time, Unix ms'),
  createdAt: Millis('Unix ms'),
  callback: opt(S()),
  failureCallback: opt(S()),
  queueName: opt(S()),
  scheduleId: opt(S()),
  callerIP: opt(S()),
  label: opt(S('The first label')),
  labels: opt(Type.Array(S())),
  flowControlKey: opt(S()),
  parallelism: opt(I()),
  rate: opt(I()),
  period: opt(I('Seconds')),
  retryDelayExpression: opt(S()),
  timeout: opt(I('Seconds')),
};

export const MessageOut = Type.Object(
  {
    ...messageFields,
    state: opt(
      Type.Enum(['ACTIVE', 'DELAYED', 'DUE', 'WAITING'], {
        description:
          'Where it stands now: ACTIVE (an attempt is in flight), DELAYED (due at `nextDeliveryTime`), ' +
          'DUE (waiting for a free delivery slot), WAITING (held by its flow-control key or queue)',
      }),
    ),
    nextDeliveryTime: opt(Millis('DELAYED: when it is due, Unix ms')),
  },
  { description: 'A message that is not final yet' },
);

export const EventOut = Type.Object(
  {
    time: Millis('Unix ms'),
    messageId: S(),
    state: Type.Enum([...EVENT_STATES]),
    url: S(),
    method: opt(S()),
    header: opt(HeaderMapOut),
    body: opt(S('Base64 (or the redaction)')),
    bodyTruncated: opt(Type.Boolean()),
    bodySize: opt(I()),
    error: opt(S()),
    nextDeliveryTime: opt(Millis('Unix ms')),
    responseStatus: opt(I()),
    responseHeader: opt(HeaderMapOut),
    responseBody: opt(S('Base64')),
    responseBodyTruncated: opt(Type.Boolean()),
    responseBodySize: opt(I()),
    topicName: opt(S()),
    endpointName: opt(S()),
    scheduleId: opt(S()),
    queueName: opt(S()),
    label: opt(S()),
    labels: opt(Type.Array(S())),
    flowControlKey: opt(S()),
    callerIP: opt(S()),
    maxRetries: opt(I()),
    retried: opt(I()),
  },
  { description: 'One entry of the events log' },
);

const responseFields = {
  responseStatus: opt(I()),
  responseHeader: opt(HeaderMapOut),
  responseBody: opt(S('As text (UTF-8)')),
  responseBodyBase64: opt(S('Base64, when not UTF-8')),
  error: opt(S()),
};

export const DlqMessageOut = Type.Object(
  {
    ...messageFields,
    dlqId: S(),
    dlqCreatedAt: Millis('Unix ms'),
    ...responseFields,
    responseBodyTruncated: opt(Type.Boolean()),
    responseBodySize: opt(I()),
  },
  { description: 'A message in the dead-letter queue' },
);

export const UrlGroupOut = Type.Object(
  {
    name: S(),
    createdAt: Millis('Unix ms'),
    updatedAt: Millis('Unix ms'),
    endpoints: Type.Array(Type.Object({ url: S(), name: opt(S()) })),
    headers: opt(HeaderMapOut),
  },
  { description: 'A URL group ("topic")' },
);

export const ScheduleOut = Type.Object(
  {
    scheduleId: S(),
    cron: S(),
    destination: S('A URL or a URL-group name'),
    createdAt: Millis('Unix ms'),
    method: S(),
    isPaused: Type.Boolean(),
    header: opt(HeaderMapOut),
    ...bodyFields,
    retries: opt(I()),
    delay: opt(I('Seconds')),
    callback: opt(S()),
    failureCallback: opt(S()),
    callerIp: opt(S()),
    queueName: opt(S()),
    flowControlKey: opt(S()),
    parallelism: opt(I()),
    rate: opt(I()),
    period: opt(I()),
    retryDelayExpression: opt(S()),
    timeout: opt(I()),
    label: opt(S()),
    labels: opt(Type.Array(S())),
    lastScheduleTime: opt(Millis('Unix ms')),
    nextScheduleTime: opt(Millis('Unix ms')),
    lastScheduleStates: opt(Type.Record(Type.String(), Type.Enum([...EVENT_STATES]))),
  },
  { description: 'A cron schedule' },
);

export const QueueOut = Type.Object(
  {
    name: S(),
    createdAt: Millis('Unix ms'),
    updatedAt: Millis('Unix ms'),
    parallelism: I(),
    paused: Type.Boolean(),
    lag: I('Messages waiting to start'),
  },
  { description: 'A FIFO queue' },
);

export const FlowControlKeyOut = Type.Object(
  {
    flowControlKey: S(),
    waitListSize: I(),
    parallelismMax: I(),
    parallelismCount: I(),
    rateMax: I(),
    rateCount: I(),
    ratePeriod: I('Seconds'),
    ratePeriodStart: I('Unix seconds'),
    isPinnedParallelism: Type.Boolean(),
    isPinnedRate: Type.Boolean(),
    isPaused: Type.Boolean(),
  },
  { description: 'A flow-control key' },
);

export const PublishResult = Type.Object({
  messageId: S(),
  deduplicated: Type.Boolean(),
});

export const GroupPublishResult = Type.Array(
  Type.Object({ messageId: S(), url: S(), deduplicated: Type.Boolean() }),
  { description: 'A URL group: one result per endpoint, in the group order' },
);

/** A step of a run's history as the workflow logs show it (the SDK's step object). */
const StepOut = Type.Object({
  messageId: opt(S()),
  callType: opt(S()),
  createdAt: opt(Millis('Unix ms')),
  state: opt(
    S(
      '`STEP_SUCCESS`: a result in the history; in the last group (`next`), `STEP_PROGRESS` or `STEP_RETRY`: a step a running run is at (a message not delivered yet: a step, a `context.call` on its way (`callType` `toCallback`) or its response coming back (`fromCallback`), a wait’s timeout), `STEP_FAILED`: the step a failed run failed at',
    ),
  ),
  stepId: opt(I()),
  stepName: opt(
    S(
      'The step’s name; in the `next` group, as the last failed attempt’s response named it (`<P>-Error-Step-Name`), else, for a call, its callback or a wait’s timeout, as the SDK named the step',
    ),
  ),
  stepType: opt(S()),
  out: opt(Type.Unknown()),
  body: opt(Type.Unknown()),
  concurrent: opt(I()),
  retries: opt(I('The retries setting of the message that carried the step')),
  retryDelay: opt(S('Its retry-delay expression, when it had one')),
  headers: opt(
    Type.Record(Type.String(), Type.Array(Type.String()), {
      description:
        'The headers its message was delivered with to the workflow URL: the forwarded headers and the workflow protocol headers (`<P>-Workflow-RunId`…), redacted as the run’s `<P>-Redact-Fields` asks',
    }),
  ),
  nextDeliveryTime: opt(
    Millis('`next` group of a running run: when the step’s current attempt is (or was) due'),
  ),
  callUrl: opt(
    S(
      '`next` group of a running run: the URL a `context.call` on its way calls (`callType` `toCallback`)',
    ),
  ),
  callMethod: opt(S('Its method')),
  callHeaders: opt(
    Type.Record(Type.String(), Type.Array(Type.String()), {
      description: 'The headers it sends, redacted as the run’s `<P>-Redact-Fields` asks',
    }),
  ),
  callBody: opt(S('The body it sends (as text; or the redaction)')),
  callBodyBase64: opt(S('The body it sends, base64, when it is not UTF-8')),
  callBodyTruncated: opt(Type.Boolean()),
  callBodySize: opt(I('The whole body’s length, bytes, when `bodyCut` cut it')),
  /** Failed attempts: the last one of a failed run's step, each one of a step being retried. */
  errors: opt(
    Type.Array(
      Type.Object({
        error: S(),
        body: opt(S()),
        bodyBase64: opt(S()),
        bodyTruncated: opt(Type.Boolean()),
        bodySize: opt(I('The whole body’s length, bytes, when `bodyCut` cut it')),
        headers: HeaderMapOut,
        status: opt(I()),
        time: Millis('Unix ms'),
      }),
    ),
  ),
});

export const WorkflowRunOut = Type.Object(
  {
    workflowRunId: S(),
    workflowUrl: S(),
    workflowState: Type.Enum([...WORKFLOW_RUN_STATES]),
    workflowRunCreatedAt: Millis('Unix ms'),
    workflowRunCompletedAt: opt(Millis('Unix ms')),
    workflowRunCallerIp: opt(S()),
    workflowRunResponse: opt(S()),
    steps: Type.Array(
      Type.Object({
        // `next` (the last group): the step a failed run failed at, or the steps a running run
        // is at (its messages not delivered yet: steps, calls, callbacks, wait timeouts).
        type: Type.Enum(['sequential', 'parallel', 'next']),
        steps: Type.Array(StepOut),
      }),
    ),
    label: opt(S()),
    labels: opt(Type.Array(S())),
    flowControlKey: opt(S()),
    dlqId: opt(S()),
    resumedFrom: opt(
      Type.Object(
        { runId: S(), kind: Type.Enum(['resume', 'restart']) },
        { description: 'The failed run this one resumed or restarted' },
      ),
    ),
    invoker: opt(
      Type.Object(
        { workflowRunId: S(), workflowUrl: S(), workflowRunCreatedAt: Millis('Unix ms') },
        { description: 'The run whose `context.invoke` started this one' },
      ),
    ),
    failureFunction: opt(
      Type.Object({
        messageId: S(),
        url: opt(S()),
        state: opt(Type.Enum([...FAILURE_FUNCTION_STATES])),
        dlqId: S(),
        failStatus: opt(I()),
        failHeaders: opt(
          Type.Record(Type.String(), Type.Array(Type.String()), {
            description: 'The failed step’s response headers',
          }),
        ),
        failResponse: opt(S('The failed step’s response body, as text')),
        failResponseBase64: opt(S('Instead of `failResponse` when the body is not UTF-8')),
        responseStatus: opt(I()),
      }),
    ),
  },
  { description: 'A workflow run' },
);

export const WorkflowDlqOut = Type.Object(
  {
    ...messageFields,
    dlqId: S(),
    workflowRunId: S(),
    workflowUrl: S(),
    workflowCreatedAt: Millis('Unix ms'),
    failureFunctionState: opt(Type.Enum([...FAILURE_FUNCTION_STATES])),
    failureCallbackInfo: opt(
      Type.Object({
        state: opt(Type.Enum([...FAILURE_FUNCTION_STATES])),
        responseStatus: opt(I()),
        messageId: opt(S()),
      }),
    ),
    ...responseFields,
    dlqCreatedAt: Millis('Unix ms'),
  },
  { description: 'A workflow run in the workflow DLQ' },
);

export const ResumedRun = Type.Object({
  workflowRunId: S(),
  workflowCreatedAt: Millis('Unix ms'),
});

export const WaiterOut = Type.Object(
  {
    url: S(),
    deadline: I('Unix seconds'),
    headers: opt(HeaderMapOut),
    timeoutUrl: opt(S()),
    timeoutHeaders: opt(HeaderMapOut),
  },
  { description: 'A workflow run waiting for an event' },
);

/** `cursor` of a list answer: absent on the last page. */
export const cursor = opt(S('The next page’s cursor; absent on the last page'));
