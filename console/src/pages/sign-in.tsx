import { useQuery } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { request } from '../api';
import { formText } from '../forms';
import { ErrorBox } from '../components';
import { saveCredential, type Credential } from '../session';
import { consoleSettings } from '../settings';

/**
 * Checks a credential against the API before keeping it, so a typo is refused here rather than
 * on every page: a token with `GET /v2/keys` (any token may read it), management credentials
 * with `GET /v2/queue` (any management user may list its accounts).
 */
function useSignIn(onSignedIn: (credential: Credential) => void) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const attempt = (credential: Credential): void => {
    setBusy(true);
    setError(undefined);
    const probe = credential.kind === 'token' ? '/v2/keys' : '/v2/queue';
    request(probe, { credential }).then(
      () => {
        saveCredential(credential);
        onSignedIn(credential);
      },
      (failure: unknown) => {
        setBusy(false);
        setError(failure);
      },
    );
  };
  return { error, setError, busy, attempt };
}

function TokenForm(props: { onSignedIn: (credential: Credential) => void }) {
  const { error, setError, busy, attempt } = useSignIn(props.onSignedIn);
  return (
    <form
      aria-label="Sign in"
      onSubmit={(event) => {
        event.preventDefault();
        const token = formText(new FormData(event.currentTarget), 'token');
        if (!token) setError(new Error('Enter the messaging token Ferry printed at start.'));
        else attempt({ kind: 'token', token });
      }}
    >
      <label class="field wide">
        <span>Token</span>
        <input name="token" type="password" autocomplete="off" spellcheck={false} required />
      </label>
      <p class="muted">
        The messaging token from Ferry's start banner or <code>.ferry/credentials.json</code>. It is
        kept for this browser tab only.
      </p>
      <button type="submit" disabled={busy}>
        Sign in
      </button>
      {error !== undefined && <ErrorBox error={error} what="sign in" />}
    </form>
  );
}

function ManagementForm(props: { onSignedIn: (credential: Credential) => void }) {
  const { error, setError, busy, attempt } = useSignIn(props.onSignedIn);
  return (
    <form
      aria-label="Management sign-in"
      onSubmit={(event) => {
        event.preventDefault();
        const form = new FormData(event.currentTarget);
        const email = formText(form, 'email');
        const apiKey = formText(form, 'apiKey');
        if (!email || !apiKey) setError(new Error('Enter the e-mail and the API key.'));
        else attempt({ kind: 'management', email, apiKey });
      }}
    >
      <label class="field wide">
        <span>E-mail</span>
        <input name="email" type="email" autocomplete="username" spellcheck={false} required />
      </label>
      <label class="field wide">
        <span>API key</span>
        <input
          name="apiKey"
          type="password"
          autocomplete="current-password"
          spellcheck={false}
          required
        />
      </label>
      <p class="muted">
        A management user's e-mail and API key (the administrator's are <code>email</code> and{' '}
        <code>apiKey</code> in <code>.ferry/credentials.json</code>). They open the Accounts pages
        and are kept for this browser tab only.
      </p>
      <button type="submit" disabled={busy}>
        Manage accounts
      </button>
      {error !== undefined && <ErrorBox error={error} what="sign in" />}
    </form>
  );
}

/**
 * Two ways in: a messaging token, or management credentials. Which ones this server takes comes
 * from `/console/settings.json`: with `--mgmt-port` the management API is on its own port (and
 * the console there), and the console's CSP lets it call its own origin only.
 */
export function SignIn(props: { onSignedIn: (credential: Credential) => void }) {
  const settings = useQuery({ queryKey: ['settings'], queryFn: consoleSettings });
  if (settings.isPending) {
    // Which forms to show depends on the port: showing a guess first would flash the wrong one.
    return (
      <main class="sign-in" aria-busy="true">
        <h1>Ferry console</h1>
        <p class="muted">Loading…</p>
      </main>
    );
  }
  // Without settings (an old server, a failed fetch) offer both ways in; the API decides.
  const messaging = settings.data?.messaging ?? true;
  const management = settings.data?.management ?? true;
  return (
    <main class="sign-in">
      <h1>Ferry console</h1>
      {messaging && <TokenForm onSignedIn={props.onSignedIn} />}
      {messaging ? (
        <details class="panel">
          <summary>Management sign-in (e-mail and API key)</summary>
          {management ? (
            <ManagementForm onSignedIn={props.onSignedIn} />
          ) : (
            <p class="muted" role="note">
              This server serves the management API on a port of its own (<code>--mgmt-port</code>
              ): open the console on that port (<code>mgmtUrl</code> in{' '}
              <code>.ferry/credentials.json</code>, then <code>/console</code>) to manage accounts.
            </p>
          )}
        </details>
      ) : (
        <>
          <p class="muted">
            This is the management port: sign in with management credentials. The messaging pages
            are on the main port's console.
          </p>
          <ManagementForm onSignedIn={props.onSignedIn} />
        </>
      )}
    </main>
  );
}
