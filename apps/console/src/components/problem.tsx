/**
 * What a screen shows instead of its data when a request failed: which scope the key lacks, that the project
 * is out of the key's reach, that the server is unreachable, or the server's own words.
 */
import { ApiError } from '../api/client';

export function problemText(error: unknown): { title: string; detail: string } {
  if (!(error instanceof ApiError)) return { title: 'Something went wrong', detail: error instanceof Error ? error.message : String(error) };
  const scope = error.missingScope;
  if (scope) {
    return {
      title: `Missing scope: ${scope}`,
      detail: `Your personal API key does not have the ${scope} scope this needs. Create a key that has it (POST /api/personal_api_keys/, or ask an admin) and sign in with that key.`,
    };
  }
  if (error.status === 0) return { title: 'Server unreachable', detail: error.body.detail };
  if (error.status === 401) return { title: 'Key not accepted', detail: 'This personal API key is unknown or was revoked. Sign in with a valid phx_… key.' };
  if (error.status === 403) return { title: 'No access', detail: error.body.detail };
  if (error.status === 404) return { title: 'Not found', detail: error.body.detail };
  if (error.status === 429) return { title: 'Too many attempts', detail: error.body.detail };
  return { title: `Request failed (${error.status})`, detail: error.body.attr ? `${error.body.detail} (${error.body.attr})` : error.body.detail };
}

/** Whether asking again may help: the server was unreachable or failed, not when it refused. */
function retryable(error: unknown): boolean {
  return !(error instanceof ApiError) || error.status === 0 || error.status === 429 || error.status >= 500;
}

export function Problem({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  const { title, detail } = problemText(error);
  return (
    <div class="problem" role="alert">
      <strong>{title}</strong>
      <p>{detail}</p>
      {onRetry && retryable(error) && (
        <button type="button" class="secondary" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}
