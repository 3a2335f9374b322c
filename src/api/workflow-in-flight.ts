/**
 * A running run's message that its history does not name, as the workflow logs' `next` group
 * shows it (see engine/workflow-pending.ts): a `context.call` on its way to the third party, the
 * callback bringing its response back, a wait's timeout before it is due.
 */
import { headerGet } from '../core/headers.js';
import { redactedText, type Redaction } from '../core/redaction.js';
import type { HeaderMap } from '../core/types.js';
import { parseStepBody } from '../core/workflow.js';
import type { PendingStep } from '../engine/workflow-pending.js';
import { cutFields, textOrBase64, trimCutUtf8 } from './presenters.js';
import { redactStepHeaders } from './workflow-step-redaction.js';

/**
 * What the logs show of a running run's message that its history does not name, in the SDK's
 * step log fields: which step it is (`stepId`, `stepName`, `stepType`, `concurrent`), its
 * `callType` and creation time, and for a `context.call` on its way to the third party what it
 * calls (`callUrl`, `callMethod`, `callHeaders`, `callBody`; redacted as the run asks). The SDK
 * sends a call's step as `<P>-Callback-Forward-<P>-Workflow-Step…` headers, which its callback
 * carries back; a wait's timeout carries the wait step as its body. Nothing for a history message
 * (its entry shows it) or a message that is none of these.
 */
export function inFlightFields(
  { message, inHistory, bodySize }: PendingStep,
  redaction: Redaction | undefined,
  prefix: string,
): Record<string, unknown> {
  if (inHistory) return {};
  const wf = message.spec.workflow;
  const head = { callType: wf?.callType, createdAt: message.createdAt };
  if (wf?.callType === 'toCallback') {
    const body = bodySize === undefined ? message.body : trimCutUtf8(message.body);
    let shownBody: Record<string, unknown>;
    if (redaction?.body) {
      // A cut body shows no hash: the hash of a cut would not match the whole.
      shownBody = { callBody: bodySize === undefined ? redactedText(message.body) : 'REDACTED' };
    } else shownBody = textOrBase64(body, 'callBody', 'callBodyBase64');
    const headers = message.spec.headers;
    return {
      ...stepIdentity(message.spec.callback?.headers ?? {}, prefix),
      ...head,
      callUrl: message.url,
      callMethod: message.spec.method,
      callHeaders: redaction?.headers ? redactStepHeaders(headers, redaction) : headers,
      ...shownBody,
      ...cutFields('callBody', bodySize),
    };
  }
  if (wf?.callType === 'fromCallback') {
    return { ...stepIdentity(message.spec.headers, prefix), ...head };
  }
  if (wf?.waitFor !== undefined) {
    const step = bodySize === undefined ? parseStepBody(message.body) : undefined;
    const pick = (key: string) => (step ? step[key] : undefined);
    return {
      stepId: pick('stepId'),
      stepName: pick('stepName'),
      stepType: pick('stepType'),
      concurrent: pick('concurrent'),
      ...head,
    };
  }
  return {};
}

/** A call's step as the SDK names it in the headers of the call's callback. */
function stepIdentity(headers: HeaderMap, prefix: string): Record<string, unknown> {
  const get = (name: string) => headerGet(headers, `${prefix}-Workflow-${name}`);
  const number = (name: string) => {
    const text = get(name);
    return text === undefined || !/^\d+$/.test(text) ? undefined : Number(text);
  };
  return {
    stepId: number('StepId'),
    stepName: get('StepName'),
    stepType: get('StepType'),
    concurrent: number('Concurrent'),
  };
}
