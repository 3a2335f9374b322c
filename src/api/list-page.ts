/**
 * Paging and byte-bounding of every list answer, once for all list routes (events/logs, DLQ,
 * workflow logs, workflow DLQ). A page holds at most `count` items and about
 * {@link PAGE_BUDGET_BYTES} of JSON: when the next item would pass the budget the page ends early
 * and its cursor continues from there. Long bodies come cut (`bodyCut`, in SQL), so an item is
 * small and a page is read from storage a few items at a time: memory stays bounded whatever the
 * stored bodies weigh. The single item's GET serves the whole body.
 */
import { badRequest } from '../core/errors.js';
import type { Page } from '../storage/driver.js';

/** Most JSON bytes of one list page (an item larger than this still makes a page of its own). */
export const PAGE_BUDGET_BYTES = 4 * 1024 * 1024;

/**
 * Time one page may spend reading, ms: past it the page ends early like at the byte budget.
 * SQLite reads a stored body whole even to cut it (its `substr` loads the value, and the columns
 * stored after a body are reached through its overflow pages), on the main thread: with bodies
 * of 10 MiB a page of 100 would block for seconds. So pages are read a few rows at a time, sized
 * from the time the last read took per row, with the event loop free between reads.
 */
export const PAGE_TIME_BUDGET_MS = 500;

/** Longest single read of a page, ms (other requests wait at most about this long). */
const READ_TIME_TARGET_MS = 40;

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

/**
 * One page of presented items within the byte and time budgets; `cursor` absent on the last
 * page. Elapsed time is measured with `performance.now()`: it bounds this request's latency,
 * not anything a test drives through the injected clock.
 */
export async function boundedPage<T>(p: BoundedPageParams<T>): Promise<Page<unknown>> {
  const budget = p.budgetBytes ?? PAGE_BUDGET_BYTES;
  const started = performance.now();
  const items: unknown[] = [];
  let used = 0;
  let cursor = p.cursor;
  let perRowMs = 0;
  while (items.length < p.count) {
    const byBytes = Math.floor((budget - used) / Math.max(1, p.itemBytes));
    // The first read takes a few rows to learn how long a row takes.
    const byTime = perRowMs > 0 ? Math.floor(READ_TIME_TARGET_MS / perRowMs) : FIRST_READ_ROWS;
    const want = Math.min(p.count - items.length, Math.max(1, Math.min(byBytes, byTime)));
    const readStart = performance.now();
    const page = await p.fetch(cursor, want);
    perRowMs = (performance.now() - readStart) / Math.max(1, page.items.length);
    for (const item of page.items) {
      const shown = await p.present(item);
      const size = Buffer.byteLength(JSON.stringify(shown)) + 1; // and a comma
      if (items.length > 0 && used + size > budget) return { items, cursor };
      items.push(shown);
      used += size;
      cursor = p.cursorOf(item);
    }
    if (page.cursor === undefined) return { items };
    cursor = page.cursor;
    if (items.length < p.count) {
      if (performance.now() - started + perRowMs > PAGE_TIME_BUDGET_MS) return { items, cursor };
      // Let other requests (and /health) run between two reads.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  return { items, cursor };
}
