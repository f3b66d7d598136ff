/**
 * The name field and save button above every insight editor: a new insight is created (and the address moves to
 * it), a saved one updated in place. `body` gives what to store — legacy `filters` or a `query` node. Under a
 * saved one, the dashboards it is on and adding it to another.
 */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { Insight, InsightWrite } from '../api/types';
import { Problem } from '../components/problem';
import { AddToDashboard } from '../dashboards/add-to-dashboard';
import { useConsole } from '../context';
import { projectPath } from '../paths';
import { navigate } from '../router';

export function SaveBar({
  saved,
  placeholder,
  body,
  disabled = false,
}: {
  saved: Insight | null;
  /** The name the insight gets when none is typed. */
  placeholder: string;
  body: () => Omit<InsightWrite, 'name' | 'saved'>;
  disabled?: boolean;
}) {
  const { client, projectId } = useConsole();
  const [name, setName] = useState(saved?.name ?? '');
  const [status, setStatus] = useState<{ saving: boolean; error?: unknown; message?: string }>({ saving: false });
  const save = async (event: Event) => {
    event.preventDefault();
    setStatus({ saving: true });
    const write: InsightWrite = { ...body(), name: name.trim() || placeholder, saved: true };
    try {
      if (saved) {
        await client.call(operations.updateInsight, { project_id: projectId, id: saved.id }, { body: write });
        setStatus({ saving: false, message: 'Saved.' });
      } else {
        const created = await client.call(operations.createInsight, { project_id: projectId }, { body: write });
        navigate(projectPath(projectId, `insights/${created.short_id}`), { replace: true });
      }
    } catch (error) {
      setStatus({ saving: false, error });
    }
  };
  return (
    <>
      <form class="save-bar" onSubmit={(event) => void save(event)}>
        <label for="insight-name">Name</label>
        <input id="insight-name" value={name} placeholder={placeholder} onInput={(event) => setName(event.currentTarget.value)} maxLength={400} />
        <button type="submit" disabled={status.saving || disabled}>
          {status.saving ? 'Saving…' : saved ? 'Save' : 'Save insight'}
        </button>
        <span role="status" class="muted">
          {status.message}
        </span>
      </form>
      {status.error !== undefined && <Problem error={status.error} />}
      {saved && <AddToDashboard insight={saved} />}
    </>
  );
}
