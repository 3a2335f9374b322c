/**
 * Batched writes: one `INSERT … SELECT FROM unnest(array, array, …)` per batch, one array per
 * column. Compared with a multi-row `VALUES` list, the statement text is the same for every batch
 * size (so it is prepared once per connection and then costs one round trip) and it binds one
 * parameter per column, far from PostgreSQL's 65,535-parameter limit whatever the row count.
 */
import type postgres from 'postgres';
import { BYTEA_OID, type Db } from './postgres-rows.js';

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
 * Rows of one statement stay under this many body bytes: bytea travels hex-encoded (twice its
 * size) and a protocol message may not exceed 1 GiB, so a group commit of many large bodies is
 * split into several statements (the caller runs them in one transaction).
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
 * One more array beside the columns, not inserted: a row is inserted only where `where` (an
 * expression on `r.<name>`) holds.
 */
export interface RowFilter {
  name: string;
  type: Column<never>['type'];
  where: string;
}

/** The statement of one batched insert: its text, parameters numbered from `$first`. */
export interface UnnestInsert<T> {
  (db: Db, items: readonly T[]): Promise<void>;
  /** With `filter`, its array is the parameter after the columns' (`$first + columns`). */
  text(first: number, filter?: RowFilter): string;
  params(db: Db, items: readonly T[]): postgres.ParameterOrJSON<never>[];
}

/**
 * Builds the insert for `table`; `WITH ORDINALITY … ORDER BY` keeps identity ids (and `computed`
 * columns) in input order.
 */
export function unnestInsert<T>(
  table: string,
  columns: readonly Column<T>[],
  computed: readonly ComputedColumn[] = [],
): UnnestInsert<T> {
  const names = columns.map((c) => c.name).join(', ');
  const into = [names, ...computed.map((c) => c.name)].join(', ');
  const select = [names, ...computed.map((c) => c.sql)].join(', ');
  const text = (first: number, filter?: RowFilter): string => {
    const types = [...columns.map((c) => c.type), ...(filter ? [filter.type] : [])];
    const arrays = types.map((type, i) => `$${first + i}::${type}[]`).join(', ');
    const alias = filter ? `${names}, ${filter.name}` : names;
    return (
      `INSERT INTO ${table} (${into}) SELECT ${select} ` +
      `FROM unnest(${arrays}) WITH ORDINALITY AS r(${alias}, ord) ` +
      `${filter ? `WHERE ${filter.where} ` : ''}ORDER BY ord`
    );
  };
  const params = (db: Db, items: readonly T[]): postgres.ParameterOrJSON<never>[] =>
    columns.map((column): postgres.ParameterOrJSON<never> => {
      const values = items.map((item) => column.value(item) ?? null);
      // A JS array binds untyped and takes the type of its cast, except that the package types
      // an array by its first element, and a Buffer there would make it `bytea`, not `bytea[]`.
      return column.type === 'bytea'
        ? db.array(values, BYTEA_OID)
        : (values as (string | number | null)[]);
    });
  const alone = text(1);
  const insert = async (db: Db, items: readonly T[]): Promise<void> => {
    if (items.length === 0) return;
    await db.unsafe(alone, params(db, items), { prepare: true });
  };
  return Object.assign(insert, { text, params });
}

/**
 * Two batched inserts as one statement (the first in a `WITH`): atomic on its own, so outside a
 * transaction it needs no BEGIN and COMMIT. Both lists must be non-empty.
 */
export async function insertTogether<A, B>(
  db: Db,
  [first, a]: [UnnestInsert<A>, readonly A[]],
  [second, b]: [UnnestInsert<B>, readonly B[]],
): Promise<void> {
  const head = first.params(db, a);
  let texts = togetherTexts.get(first);
  if (!texts) togetherTexts.set(first, (texts = new WeakMap()));
  let text = texts.get(second);
  if (text === undefined) {
    text = `WITH first AS (${first.text(1)}) ${second.text(head.length + 1)}`;
    texts.set(second, text);
  }
  await db.unsafe(text, [...head, ...second.params(db, b)], { prepare: true });
}

/**
 * The text of each pair of inserts, built once: a few KB that would otherwise be built anew for
 * every publish commit (measured: about 11 KB of garbage per message at 500 msg/s, which the
 * young generation's collections then have to sweep).
 */
const togetherTexts = new WeakMap<object, WeakMap<object, string>>();

/** True when rows of these body bytes fit one statement (see MAX_STATEMENT_BYTES). */
export const fitsOneStatement = (bytes: number): boolean => bytes <= MAX_STATEMENT_BYTES;
