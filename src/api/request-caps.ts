/**
 * What a single request may create (docs/limits.md, "Limits per request"): a publish to a URL
 * group, a batch (each entry's fan-out included) or a DLQ retry is refused with 413, before
 * anything is stored, when it would create more than `--max-request-messages` messages or more
 * than `--max-request-bytes` of message bodies, counted per message: a shared body is stored
 * once, but every message sends it again, so the count bounds what the request makes Ferry send.
 */
import { FerryError } from '../core/errors.js';
import type { Message } from '../core/types.js';
import type { RequestCaps } from './context.js';

/** @throws FerryError 413 naming the limit the messages pass. */
export function checkRequestCaps(caps: RequestCaps, messages: readonly Message[]): void {
  if (messages.length > caps.messages) {
    throw new FerryError(
      413,
      `the request would create ${messages.length} messages: at most ${caps.messages} per request (--max-request-messages)`,
    );
  }
  let bytes = 0;
  for (const message of messages) bytes += message.body.byteLength;
  if (bytes > caps.bytes) {
    throw new FerryError(
      413,
      `the request would store ${bytes} bytes of message bodies: at most ${caps.bytes} per request (--max-request-bytes)`,
    );
  }
}
