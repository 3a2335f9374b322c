/** Collects the parameters of a dynamically built statement (one with a `RecordFilter`). */
import type postgres from 'postgres';
import type { Bind } from '../sql/filter.js';

export interface Binder {
  /** Records `value` and returns its placeholder (`$1`, `$2`, …). */
  bind: Bind;
  params: postgres.ParameterOrJSON<never>[];
}

export function newBinder(): Binder {
  const params: postgres.ParameterOrJSON<never>[] = [];
  const bind: Bind = (value) => {
    // Filters bind only strings and numbers (ids, names, statuses, ms times).
    params.push(value as string | number);
    return `$${params.length}`;
  };
  return { bind, params };
}
