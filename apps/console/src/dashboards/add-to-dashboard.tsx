/** On a saved insight's page: the dashboards it is on, and adding it to another one (a tile there). */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { Insight } from '../api/types';
import { Problem } from '../components/problem';
import { useConsole } from '../context';
import { useLoad } from '../hooks';
import { projectPath } from '../paths';
import { Link } from '../router';
import { dashboardName } from '../screens/dashboards';

export function AddToDashboard({ insight }: { insight: Insight }) {
  const { client, projectId } = useConsole();
  const [on, setOn] = useState<number[]>(insight.dashboards ?? []);
  const [chosen, setChosen] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const list = useLoad((signal) => client.call(operations.listDashboards, { project_id: projectId }, { query: { limit: 100 }, signal }), [client, projectId]);
  if (list.status !== 'ok' || list.data.results.length === 0) return null;
  const dashboards = list.data.results;
  const others = dashboards.filter((dashboard) => !on.includes(dashboard.id));
  const add = async (event: Event) => {
    event.preventDefault();
    const id = Number(chosen || others[0]?.id);
    if (!id) return;
    try {
      const updated = await client.call(operations.updateInsight, { project_id: projectId, id: insight.id }, { body: { dashboards: [...on, id] } });
      setOn(updated.dashboards);
      setChosen('');
    } catch (failure) {
      setError(failure);
    }
  };
  return (
    <form class="save-bar" onSubmit={(event) => void add(event)} aria-label="Dashboards">
      {on.length > 0 && (
        <span class="muted">
          On{' '}
          {dashboards
            .filter((dashboard) => on.includes(dashboard.id))
            .map((dashboard, index) => (
              <span key={dashboard.id}>
                {index > 0 && ', '}
                <Link href={projectPath(projectId, `dashboards/${dashboard.id}`)}>{dashboardName(dashboard)}</Link>
              </span>
            ))}
        </span>
      )}
      {others.length > 0 && (
        <>
          <label for="add-to-dashboard">Dashboard</label>
          <select id="add-to-dashboard" value={chosen} onChange={(event) => setChosen(event.currentTarget.value)}>
            {others.map((dashboard) => (
              <option key={dashboard.id} value={dashboard.id}>
                {dashboardName(dashboard)}
              </option>
            ))}
          </select>
          <button type="submit" class="secondary">
            Add to dashboard
          </button>
        </>
      )}
      {error !== undefined && <Problem error={error} />}
    </form>
  );
}
