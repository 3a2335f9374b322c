/**
 * Paging and byte-bounding of every list answer, once for all list routes (events/logs, DLQ,
 * workflow logs, workflow DLQ). A page holds at most `count` items and about
 * {@link PAGE_BUDGET_BYTES} of JSON: when the next item would pass the budget the page ends early
 * and its cursor continues from there. Long bodies come cut (`bodyCut`, in SQL), so an item is
 * small and a page is read from storage a few items at a time: memory stays bounded whatever the
 * stored bodies weigh. The single item's GET serves the whole body.
 */
import type { FastifyReply } from 'fastify';
import { badRequest } from '../core/errors.js';
import type { Page } from '../storage/driver.js';

/** Most JSON bytes of one list page (an item larger than this still makes a page of its own). */
export const PAGE_BUDGET_BYTES = 4 * 1024 * 1024;

/**
 * Time one page may spend reading, ms: past it the page ends early like at the byte budget.
 * A page is read a few rows at a time, with the event loop free between reads, so a page of
 * large items does not hold the server for its whole length.
 */
export const PAGE_TIME_BUDGET_MS = 500;

/**
 * Longest step of a page, ms: one read from storage and the presenting and serialising of the
 * rows it returned. On SQLite the whole step is synchronous, so other requests (and `/health`)
 * wait at most about this long; the step's size (in rows) is set from the time per row the last
 * step took. Profiled with scripts/measure-lists.mjs (docs/security.md, "Work per request").
 */
const STEP_TIME_TARGET_MS = 20;

const FIRST_READ_ROWS = 1;

/** Bytes of each body a list shows when the request gives no `bodyCut`. */
export const DEFAULT_BODY_CUT = 64 * 1024;

/** The query parameter that chooses the cut. */
export const BODY_CUT_PARAM = 'bodyCut';

/** `bodyCut` of a list request: 0 … {@link PAGE_BUDGET_BYTES}, default {@link DEFAULT_BODY_CUT}. */
export function parseBodyCut(params: URLSearchParams): number {
  const text = params.get(BODY_CUT_PARAM);
  if (text === null || text === '') return DEFAULT_BODY_CUT;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value > PAGE_BUDGET_BYTES) {
    throw badRequest(
      `invalid ${BODY_CUT_PARAM} "${text}": must be an integer from 0 to ${PAGE_BUDGET_BYTES}`,
    );
  }
  return value;
}

/**
 * Bytes a listed record takes at most with bodies cut to `bodyCut`: a body and a response body,
 * base64 in the worst case (4/3), and room for URL, headers and the other fields.
 */
export const itemBytes = (bodyCut: number): number => Math.ceil((2 * bodyCut * 4) / 3) + 16_384;

export interface BoundedPageParams<T> {
  /** Most items in the page. */
  count: number;
  cursor?: string;
  /** Reads up to `count` items after `cursor` (storage's own page). */
  fetch: (cursor: string | undefined, count: number) => Promise<Page<T>>;
  /** The cursor that continues after `item`. */
  cursorOf: (item: T) => string;
  /** The item as the answer shows it. */
  present: (item: T) => unknown;
  /**
   * Bytes a stored item can take at most once read (its cut bodies included): sets how many
   * items are read at once, so what one read holds stays near the budget.
   */
  itemBytes: number;
  /** Defaults to {@link PAGE_BUDGET_BYTES}. */
  budgetBytes?: number;
}

/** One page of a list: each item's JSON, as it goes into the answer. */
export interface JsonPage {
  items: Buffer[];
  /** Continues after the last item; absent on the last page. */
  cursor?: string;
}

/**
 * One page of presented items within the byte and time budgets; `cursor` absent on the last
 * page. Each item is serialised once, in the step that read it, and the page is sent as those
 * bytes ({@link pageJson}): serialising a 4 MiB page whole at the end would hold the event loop
 * for its whole length once more (it did, after the steps: JSON of each item to size the page,
 * then of the whole page to answer, then its UTF-8 length and copy). Elapsed time is measured
 * with `performance.now()`: it bounds this request's latency, not anything a test drives
 * through the injected clock.
 */
export async function boundedPage<T>(p: BoundedPageParams<T>): Promise<JsonPage> {
  const budget = p.budgetBytes ?? PAGE_BUDGET_BYTES;
  const started = performance.now();
  const items: Buffer[] = [];
  let used = 0;
  let cursor = p.cursor;
  let perRowMs = 0;
  while (items.length < p.count) {
    const byBytes = Math.floor((budget - used) / Math.max(1, p.itemBytes));
    // The first step takes a few rows to learn how long a row takes.
    const byTime = perRowMs > 0 ? Math.floor(STEP_TIME_TARGET_MS / perRowMs) : FIRST_READ_ROWS;
    const want = Math.min(p.count - items.length, Math.max(1, Math.min(byBytes, byTime)));
    const stepStart = performance.now();
    const page = await p.fetch(cursor, want);
    let full = false;
    for (const item of page.items) {
      const json = Buffer.from(JSON.stringify(await p.present(item)));
      // And a comma.
      if (items.length > 0 && used + json.length + 1 > budget) {
        full = true;
        break;
      }
      items.push(json);
      used += json.length + 1;
      cursor = p.cursorOf(item);
    }
    if (full) return { items, cursor };
    if (page.cursor === undefined) return { items };
    cursor = page.cursor;
    perRowMs = (performance.now() - stepStart) / Math.max(1, page.items.length);
    if (items.length < p.count) {
      if (performance.now() - started + perRowMs > PAGE_TIME_BUDGET_MS) return { items, cursor };
      // Let other requests (and /health) run between two steps.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  return { items, cursor };
}

/**
 * The answer of a list: `{"cursor": …, "<key>": [items]}` (no `cursor` on the last page) as
 * UTF-8 bytes, built from the items' JSON without serialising them again.
 */
export function pageJson(key: string, page: JsonPage): Buffer {
  const head = page.cursor ? `{"cursor":${JSON.stringify(page.cursor)},` : '{';
  const parts: Buffer[] = [Buffer.from(`${head}${JSON.stringify(key)}:[`)];
  page.items.forEach((item, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(item);
  });
  parts.push(END);
  return Buffer.concat(parts);
}

const COMMA = Buffer.from(',');
const END = Buffer.from(']}');

/** Answers `reply` with the page as {@link pageJson} (JSON bytes, which Fastify sends as they are). */
export function sendPage(reply: FastifyReply, key: string, page: JsonPage): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(pageJson(key, page));
}
