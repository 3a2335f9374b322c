import { Link } from 'wouter-preact';
import { PageHeader } from '../components';

/** An address with no page (or one for the other kind of sign-in) says so. */
export function NotFoundPage(props: { title: string; management?: boolean }) {
  return (
    <section>
      <PageHeader title={props.title} />
      {props.management ? (
        <p class="state empty">
          Accounts are managed with the management credentials (e-mail and API key): sign out and
          use the management sign-in.
        </p>
      ) : (
        <p class="state empty">
          There is no console page at this address. <Link href="/overview">Open the overview</Link>.
        </p>
      )}
    </section>
  );
}
