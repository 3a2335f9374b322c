/** What the production-mode (SSRF) tests share. */
import { expect } from 'vitest';
import type { TestFerry } from './ferry.js';

/** A name with no DNS answer: accepted at request time, fails at delivery (for DLQ entries). */
export const PUBLIC = 'https://ferry-test.invalid/hook';

/**
 * A message that failed for good, for the DLQ routes' overrides: published to {@link PUBLIC}
 * with no retries and attempted once (`engine.runOnce()`). Resolves with its DLQ id.
 */
export async function failedDlqEntry(t: TestFerry): Promise<string> {
  const res = await t.api(`/v2/publish/${PUBLIC}`, {
    method: 'POST',
    headers: { 'Svc-Retries': '0' },
    body: 'x',
  });
  expect(res.status).toBe(200);
  await t.ferry.engine.runOnce();
  const dlq = (await (await t.api('/v2/dlq')).json()) as { messages: { dlqId: string }[] };
  const [entry] = dlq.messages;
  if (!entry) throw new Error('no DLQ entry');
  return entry.dlqId;
}
