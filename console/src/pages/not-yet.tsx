import { Link } from 'wouter-preact';
import { PageHeader } from '../components';

/** Pages whose views are not built yet say so, and point at the API that serves them today. */
export function NotYetPage(props: { title: string; missing?: boolean }) {
  return (
    <section>
      <PageHeader title={props.title} />
      {props.missing ? (
        <p class="state empty">
          There is no console page at this address. <Link href="/logs">Open the logs</Link>.
        </p>
      ) : (
        <p class="state empty">
          This page is not in the console yet; its data is available through the HTTP API (see
          docs/api.md).
        </p>
      )}
    </section>
  );
}
