/**
 * The sign-in form: one password field for a personal API key. The key is checked by listing the projects it
 * sees; an unknown or revoked key is refused here, and a key without `project:read` is let in (its screens say
 * what it lacks).
 */
import { useState } from 'preact/hooks';
import { ApiClient, ApiError } from './api/client';
import { operations } from './api/operations';
import { problemText } from './components/problem';

export function SignIn({ notice, onSignedIn }: { notice?: string; onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | undefined>(notice);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const value = key.trim();
    if (!value.startsWith('phx_')) {
      setError('A personal API key starts with phx_ (the phc_ project key is for SDKs).');
      return;
    }
    setBusy(true);
    try {
      await new ApiClient(value, window.location.origin).call(operations.listProjects, {}, { query: { limit: 1 } });
      onSignedIn(value);
    } catch (caught) {
      if (caught instanceof ApiError && caught.missingScope) onSignedIn(value);
      else setError(problemText(caught).detail);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <form onSubmit={(event) => void submit(event)} aria-describedby="sign-in-help">
        <h1>
          <span class="brand-mark" aria-hidden="true" />
          Plover
        </h1>
        <label for="api-key">Personal API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
          aria-invalid={error ? true : undefined}
          aria-errormessage={error ? 'sign-in-error' : undefined}
        />
        <p id="sign-in-help" class="muted">
          The <code>phx_…</code> key printed at the first start (also in <code>.plover/credentials.json</code>). It stays in this tab only.
        </p>
        {error && (
          <p id="sign-in-error" class="form-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
