/** The project's dashboards, pinned first, and a form to create one (which then opens). */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { DashboardBasic } from '../api/types';
import { Async } from '../components/async';
import { PageHeader } from '../components/page-header';
import { Panel } from '../components/panel';
import { Problem } from '../components/problem';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import { projectPath } from '../paths';
import { Link, navigate } from '../router';

export const dashboardName = (dashboard: DashboardBasic): string => dashboard.name || `Dashboard ${dashboard.id}`;

export function Dashboards() {
  const { client, projectId } = useConsole();
  const list = useLoad((signal) => client.call(operations.listDashboards, { project_id: projectId }, { query: { limit: 100 }, signal }), [client, projectId]);
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const create = async (event: Event) => {
    event.preventDefault();
    try {
      const created = await client.call(operations.createDashboard, { project_id: projectId }, { body: { name: name.trim() || 'New dashboard' } });
      navigate(projectPath(projectId, `dashboards/${created.id}`));
    } catch (failure) {
      setError(failure);
    }
  };
  return (
    <>
      <PageHeader title="Dashboards" />
      <Panel id="new-dashboard" title="New dashboard" wide>
        <form class="toolbar" onSubmit={(event) => void create(event)}>
          <label for="dashboard-name">Name</label>
          <input id="dashboard-name" value={name} maxLength={400} onInput={(event) => setName(event.currentTarget.value)} />
          <button type="submit">Create dashboard</button>
        </form>
        {error !== undefined && <Problem error={error} />}
      </Panel>
      <Panel id="dashboards" title="All dashboards" wide>
        <Async value={list} onRetry={list.reload}>
          {(page) => (
            <DataTable
              caption="Dashboards"
              rows={page.results}
              rowKey={(dashboard) => dashboard.id}
              empty="No dashboard yet: create one above, then add insights to it from their pages."
              columns={[
                { label: 'Name', cell: (dashboard) => <Link href={projectPath(projectId, `dashboards/${dashboard.id}`)}>{dashboardName(dashboard)}</Link> },
                { label: 'Pinned', cell: (dashboard) => (dashboard.pinned ? 'Yes' : '') },
                { label: 'Shared', cell: (dashboard) => (dashboard.is_shared ? 'Yes' : '') },
                { label: 'Created', cell: (dashboard) => dateTime(dashboard.created_at) },
              ]}
            />
          )}
        </Async>
      </Panel>
    </>
  );
}
