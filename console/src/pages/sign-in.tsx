import { useState } from 'preact/hooks';
import { request } from '../api';
import { formText } from '../forms';
import { ErrorBox } from '../components';
import { saveCredential, type Credential } from '../session';

/**
 * Sign in with a messaging token. The token is checked against the API (`GET /v2/keys`, which
 * any token may read) before it is kept, so a typo is refused here rather than on every page.
 */
export function SignIn(props: { onSignedIn: (credential: Credential) => void }) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  return (
    <main class="sign-in">
      <h1>Ferry console</h1>
      <form
        aria-label="Sign in"
        onSubmit={(event) => {
          event.preventDefault();
          const token = formText(new FormData(event.currentTarget), 'token');
          if (!token) {
            setError(new Error('Enter the messaging token Ferry printed at start.'));
            return;
          }
          const credential: Credential = { kind: 'token', token };
          setBusy(true);
          setError(undefined);
          request('/v2/keys', { credential }).then(
            () => {
              saveCredential(credential);
              props.onSignedIn(credential);
            },
            (failure: unknown) => {
              setBusy(false);
              setError(failure);
            },
          );
        }}
      >
        <label class="field wide">
          <span>Token</span>
          <input name="token" type="password" autocomplete="off" spellcheck={false} required />
        </label>
        <p class="muted">
          The messaging token from Ferry's start banner or <code>.ferry/credentials.json</code>. It
          is kept for this browser tab only.
        </p>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {error !== undefined && <ErrorBox error={error} what="sign in" />}
      </form>
    </main>
  );
}
