/**
 * Filters live in the page's URL (`/logs?state=FAILED&label=x`), so a filtered view is a link
 * that can be shared, reloaded and gone back to.
 */
import type { ComponentChildren } from 'preact';
import { useSearchParams } from 'wouter-preact';
import type { Query } from './api';

/** The URL's query as API query values (repeated names become arrays). */
export function useUrlQuery(): [
  URLSearchParams,
  (next: Record<string, string | undefined>) => void,
] {
  const [params, setParams] = useSearchParams();
  const set = (next: Record<string, string | undefined>): void => {
    const out = new URLSearchParams();
    for (const [name, value] of Object.entries(next)) if (value) out.set(name, value);
    setParams(out);
  };
  return [params, set];
}

export function toQuery(params: URLSearchParams, names: readonly string[]): Query {
  const query: Query = {};
  for (const name of names) {
    const values = params.getAll(name).filter(Boolean);
    if (values.length === 1) query[name] = values[0];
    else if (values.length > 1) query[name] = values;
  }
  return query;
}

/**
 * A filter form: its inputs start from the URL and "Apply filters" writes them back (dropping
 * the cursor, so the list starts at its newest entry again).
 */
export function FilterForm(props: {
  params: URLSearchParams;
  onApply: (values: Record<string, string | undefined>) => void;
  children: ComponentChildren;
  label: string;
}) {
  return (
    <form
      class="filters"
      aria-label={props.label}
      // Re-mount on a URL change (back button) so the inputs show the URL's values.
      key={props.params.toString()}
      onSubmit={(event) => {
        event.preventDefault();
        const data = new FormData(event.currentTarget);
        const values: Record<string, string | undefined> = {};
        for (const [name, value] of data.entries()) {
          if (typeof value === 'string' && value.trim()) values[name] = value.trim();
        }
        props.onApply(values);
      }}
    >
      {props.children}
      <div class="filter-actions">
        <button type="submit">Apply filters</button>
        <button type="button" onClick={() => props.onApply({})}>
          Clear
        </button>
      </div>
    </form>
  );
}
