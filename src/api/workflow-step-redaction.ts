/**
 * A step object of the workflow logs redacted as its run's `<P>-Redact-Fields` asks: its content
 * (what a step was given or returned, a call's body) with `body`, its header maps (its own, those
 * of `context.call` and `context.invoke`) with `header`, each value as `REDACTED:<sha256>`.
 */
import { coversHeader, redactedText, type Redaction } from '../core/redaction.js';

/** Fields of the SDK's step object that hold content: what a step was given or returned. */
const STEP_BODY_FIELDS = ['out', 'callBody', 'callResponseBody', 'invokedWorkflowRunBody'];
/** Fields of the SDK's step object that are header maps sent somewhere. */
const STEP_HEADER_FIELDS = ['headers', 'callHeaders', 'invokedWorkflowRunHeaders'];

/** `REDACTED:<sha256>` of a step field's value: of the text itself, else of its JSON. */
const redactedValue = (value: unknown): string =>
  redactedText(typeof value === 'string' ? value : JSON.stringify(value));

/** A header map of a step object (values a string or strings) with the covered values hidden. */
export function redactStepHeaders(value: unknown, redaction: Redaction): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, v]): [string, unknown] => {
      if (!coversHeader(redaction, name)) return [name, v];
      return [name, Array.isArray(v) ? v.map(redactedValue) : redactedValue(v)];
    }),
  );
}

/** The SDK's step object with its content redacted as the run asks. */
export function redactStep(
  step: Record<string, unknown>,
  redaction: Redaction,
): Record<string, unknown> {
  const out = { ...step };
  for (const field of redaction.body ? STEP_BODY_FIELDS : []) {
    if (out[field] !== undefined) out[field] = redactedValue(out[field]);
  }
  for (const field of redaction.headers ? STEP_HEADER_FIELDS : []) {
    if (out[field] !== undefined) out[field] = redactStepHeaders(out[field], redaction);
  }
  return out;
}
