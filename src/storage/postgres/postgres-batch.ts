/**
 * Batched writes: one `INSERT … SELECT FROM json_to_recordset($n)` per batch, the rows bound as
 * one JSON text parameter. The statement text is the same for every batch size (so it is prepared
 * once per connection and then costs one round trip) and it binds the same parameters whatever
 * the row count, far from PostgreSQL's 65,535-parameter limit.
 *
 * Written by hand rather than left to the driver's array parameters (one `text[]` per column,
 * which this replaced), for measured reasons: the driver builds each array literal element by
 * element (a `map`, two regular-expression escapes and a `join` per column) and PostgreSQL parses
 * one literal per column, where `JSON.stringify` is one native pass. Inserting event rows (a
 * script against PostgreSQL 15, 2026-11-27), per row: Ferry's CPU 97 → 77 µs at one row a
 * statement and 4.4 → 2.8–3.2 µs at 200, PostgreSQL's 155 → 96 µs at one row a statement, and
 * half as many young-generation collections (docs/benchmarks-log.md).
 *
 * Bytes longer than INLINE_BYTES (bodies) do not go into the JSON: each bytea column's long
 * values of the batch travel concatenated, base64-encoded, as one more text parameter, decoded
 * once per statement, and a row carries its value's offset and length. In the JSON, base64 is
 * read character by character by PostgreSQL's JSON lexer, and the long JSON text costs the client
 * a pass more: inserting bodies of 3 KiB (a script, 2026-12-07) took the server 20 µs a body
 * instead of 53–68 and the client 15 instead of 24–30; of 8 KiB, 45 instead of 118–135 and 31
 * instead of 52–69 (docs/benchmarks-log.md). Short values stay in the JSON as base64: with every
 * value in the parameters, Ferry's CPU per message with ~110-byte bodies rose 4–5 % end to end.
 */
import type { Db } from './postgres-rows.js';

type Cell = string | number | Uint8Array | null;

export interface Column<T> {
  name: string;
  type: 'text' | 'bigint' | 'integer' | 'bytea';
  value: (item: T) => Cell | undefined;
}

/**
 * A column the database computes for each row, such as `nextval(…)`. A volatile expression in
 * the select list is evaluated after the ORDER BY's sort (PostgreSQL 9.6 and later), so it is
 * evaluated row by row in input order.
 */
export interface ComputedColumn {
  name: string;
  sql: string;
}

/**
 * Rows of one statement stay under this many body bytes: bytea travels base64-encoded (4/3 of its
 * size) and a protocol message may not exceed 1 GiB, so a group commit of many large bodies is
 * split into several statements (the caller runs them in one transaction). The offsets of a
 * column's bytes stay far under 2^31, the `integer` they are read as.
 */
const MAX_STATEMENT_BYTES = 64 * 1024 * 1024;

/** Splits `items` so each chunk's `bytes` sum stays under the limit (a chunk holds ≥ 1 item). */
export function chunkByBytes<T>(items: readonly T[], bytes: (item: T) => number): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const item of items) {
    const itemSize = bytes(item);
    if (current.length > 0 && size + itemSize > MAX_STATEMENT_BYTES) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += itemSize;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * One more field of each row, not inserted: a row is inserted only where `where` (an expression
 * on `r.<name>`) holds. Its values are passed to `params` beside the items.
 */
export interface RowFilter {
  name: string;
  type: Column<never>['type'];
  where: string;
}

/** A filter's value for each item, by the filter's name (see RowFilter). */
export interface FilterValues {
  name: string;
  values: readonly Cell[];
}

/**
 * The statement of one batched insert: its text, its `width` parameters numbered from `$at` (the
 * rows' JSON, then one per bytea column).
 */
export interface BatchInsert<T> {
  (db: Db, items: readonly T[]): Promise<void>;
  /** How many parameters the batch binds. */
  width: number;
  text(at: number, filter?: RowFilter): string;
  /**
   * The rows of the parameters from `$at` as a `FROM` item `r`, with the columns' names and
   * `ord` (a bytea column's name holds a short value's base64; `<name>__o` and `<name>__n` a
   * long one's offset and length: see values).
   */
  source(at: number): string;
  /** The columns' expressions on `r` (from `source(at)`), in `columns` order. */
  values(at: number): string[];
  /** The parameters; with a filter, `filter.values[i]` is item i's value of it. */
  params(items: readonly T[], filter?: FilterValues): string[];
}

/**
 * A cell as the JSON carries it: bytes as base64 (`decode` in the statement; longer ones go to a
 * parameter of their own, see params), and a string with a lone surrogate (a JS string can hold
 * one; UTF-8 cannot) with U+FFFD in its place, as the UTF-8 encoding of a bound text parameter
 * has it (JSON would escape it, and PostgreSQL rejects the escape).
 */
function field(value: Cell | undefined): string | number | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return value.isWellFormed() ? value : value.toWellFormed();
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
}

/** Bytes up to this long travel in the JSON as base64; longer ones in their column's parameter. */
export const INLINE_BYTES = 512;

/**
 * Builds the insert for `table`; `WITH ORDINALITY … ORDER BY` keeps identity ids (and `computed`
 * columns) in input order. A row's fields are keyed `c0`, `c1`, … (base 36) to keep the JSON
 * small; absent values are left out and read as NULL. A bytea value longer than INLINE_BYTES is
 * given instead as its offset in the column's parameter and its length, keyed `p0`, `z0`, … (read
 * as `<name>__o`, `<name>__n`; not `o0`, `l0`: `on` is a keyword).
 */
export function batchInsert<T>(
  table: string,
  columns: readonly Column<T>[],
  computed: readonly ComputedColumn[] = [],
): BatchInsert<T> {
  const keys = columns.map((_, i) => `c${i.toString(36)}`);
  const offsetKeys = columns.map((_, i) => `p${i.toString(36)}`);
  const lengthKeys = columns.map((_, i) => `z${i.toString(36)}`);
  /** For each column, its bytes' parameter after the JSON's (0, 1, …), or -1 if not bytea. */
  const slots: number[] = [];
  let blobs = 0;
  for (const c of columns) slots.push(c.type === 'bytea' ? blobs++ : -1);
  const into = [...columns.map((c) => c.name), ...computed.map((c) => c.name)].join(', ');
  // An uncorrelated scalar subquery runs once per statement (an InitPlan), not once per row,
  // and only if a row reaches it.
  const values = (at: number): string[] =>
    columns.map((c, i) =>
      c.type === 'bytea'
        ? `CASE WHEN r.${c.name}__o IS NULL THEN decode(r.${c.name}, 'base64') ELSE ` +
          `substring((SELECT decode($${at + 1 + (slots[i] as number)}, 'base64')) ` +
          `FROM r.${c.name}__o + 1 FOR r.${c.name}__n) END`
        : `r.${c.name}`,
    );
  const source = (at: number, filter?: RowFilter): string => {
    const fields: string[] = [];
    const aliases: string[] = [];
    columns.forEach((c, i) => {
      if (c.type === 'bytea') {
        fields.push(`${keys[i]} text`, `${offsetKeys[i]} integer`, `${lengthKeys[i]} integer`);
        aliases.push(c.name, `${c.name}__o`, `${c.name}__n`);
      } else {
        fields.push(`${keys[i]} ${c.type}`);
        aliases.push(c.name);
      }
    });
    if (filter) {
      fields.push(`${filter.name} ${filter.type}`);
      aliases.push(filter.name);
    }
    return (
      `ROWS FROM (json_to_recordset($${at}::text::json) AS (${fields.join(', ')})) ` +
      `WITH ORDINALITY AS r(${aliases.join(', ')}, ord)`
    );
  };
  const text = (at: number, filter?: RowFilter): string =>
    `INSERT INTO ${table} (${into}) ` +
    `SELECT ${[...values(at), ...computed.map((c) => c.sql)].join(', ')} ` +
    `FROM ${source(at, filter)} ${filter ? `WHERE ${filter.where} ` : ''}ORDER BY ord`;
  const params = (items: readonly T[], filter?: FilterValues): string[] => {
    const parts: Buffer[][] = Array.from({ length: blobs }, () => []);
    const offsets: number[] = new Array<number>(blobs).fill(0);
    const rows = items.map((item, index) => {
      const row: Record<string, string | number> = {};
      for (let i = 0; i < columns.length; i++) {
        const value = columns[i]?.value(item);
        if (value === null || value === undefined) continue;
        const slot = slots[i] as number;
        if (slot >= 0 && value instanceof Uint8Array && value.byteLength > INLINE_BYTES) {
          row[offsetKeys[i] as string] = offsets[slot] as number;
          row[lengthKeys[i] as string] = value.byteLength;
          parts[slot]?.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
          offsets[slot] = (offsets[slot] as number) + value.byteLength;
        } else {
          row[keys[i] as string] = field(value) as string | number;
        }
      }
      const extra = filter && field(filter.values[index]);
      if (filter && extra !== undefined) row[filter.name] = extra;
      return row;
    });
    const blobsOf = (p: Buffer[]): string =>
      p.length === 0 ? '' : Buffer.concat(p).toString('base64');
    return [JSON.stringify(rows), ...parts.map(blobsOf)];
  };
  const alone = text(1);
  const insert = async (db: Db, items: readonly T[]): Promise<void> => {
    if (items.length === 0) return;
    await db.unsafe(alone, params(items), { prepare: true });
  };
  return Object.assign(insert, {
    width: 1 + blobs,
    text,
    params,
    source: (at: number) => source(at),
    values,
  });
}

/**
 * Two batched inserts as one statement (the first in a `WITH`): atomic on its own, so outside a
 * transaction it needs no BEGIN and COMMIT. Both lists must be non-empty.
 */
export async function insertTogether<A, B>(
  db: Db,
  [first, a]: [BatchInsert<A>, readonly A[]],
  [second, b]: [BatchInsert<B>, readonly B[]],
): Promise<void> {
  let texts = togetherTexts.get(first);
  if (!texts) togetherTexts.set(first, (texts = new WeakMap()));
  let text = texts.get(second);
  if (text === undefined) {
    text = `WITH first AS (${first.text(1)}) ${second.text(1 + first.width)}`;
    texts.set(second, text);
  }
  await db.unsafe(text, [...first.params(a), ...second.params(b)], { prepare: true });
}

/**
 * The text of each pair of inserts, built once: a few KB that would otherwise be built anew for
 * every publish commit (measured: about 11 KB of garbage per message at 500 msg/s, which the
 * young generation's collections then have to sweep).
 */
const togetherTexts = new WeakMap<object, WeakMap<object, string>>();

/** True when rows of these body bytes fit one statement (see MAX_STATEMENT_BYTES). */
export const fitsOneStatement = (bytes: number): boolean => bytes <= MAX_STATEMENT_BYTES;
