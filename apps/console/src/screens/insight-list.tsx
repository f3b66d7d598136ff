/** Saved insights: the ones you viewed last first (`my_last_viewed`), then every saved one, searchable and paged. */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { Insight } from '../api/types';
import { Async } from '../components/async';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { Pagination } from '../components/pagination';
import { Panel } from '../components/panel';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import { projectPath } from '../paths';
import { Link } from '../router';

const PAGE_SIZE = 20;

export const insightName = (insight: Insight): string => insight.name || insight.derived_name || `Insight ${insight.short_id}`;

export function InsightList() {
  const { client, projectId } = useConsole();
  const [offset, setOffset] = useState(0);
  const [search, setSearch] = useState('');
  const recent = useLoad((signal) => client.call(operations.myLastViewedInsights, { project_id: projectId }, { signal }), [client, projectId]);
  const saved = useLoad(
    (signal) =>
      client.call(
        operations.listInsights,
        { project_id: projectId },
        { query: { saved: true, limit: PAGE_SIZE, offset, search: search || undefined }, signal },
      ),
    [client, projectId, offset, search],
  );
  const link = (insight: Insight) => <Link href={projectPath(projectId, `insights/${insight.short_id}`)}>{insightName(insight)}</Link>;

  return (
    <>
      <PageHeader title="Insights">
        <Link class="button secondary" href={projectPath(projectId, 'insights/correlation')}>
          Funnel correlation
        </Link>
        <Link class="button secondary" href={projectPath(projectId, 'insights/funnel')}>
          New funnel
        </Link>
        <Link class="button secondary" href={projectPath(projectId, 'insights/retention')}>
          New retention
        </Link>
        <Link class="button secondary" href={projectPath(projectId, 'insights/paths')}>
          New paths
        </Link>
        <Link class="button secondary" href={projectPath(projectId, 'insights/sql')}>
          SQL
        </Link>
        <Link class="button" href={projectPath(projectId, 'insights/new')}>
          New insight
        </Link>
      </PageHeader>
      <Panel id="recent" title="Recently viewed" wide>
        <Async value={recent} onRetry={recent.reload}>
          {(insights) =>
            insights.length === 0 ? (
              <p class="muted">Insights you open show up here.</p>
            ) : (
              <ul class="recent-insights">
                {insights.map((insight) => (
                  <li key={insight.id}>
                    {link(insight)}
                    <span class="muted">viewed {dateTime(insight.last_viewed_at)}</span>
                  </li>
                ))}
              </ul>
            )
          }
        </Async>
      </Panel>
      <Panel id="saved" title="Saved insights" wide>
        <form class="toolbar" role="search" onSubmit={(event) => event.preventDefault()}>
          <label for="insight-search">Search</label>
          <input
            id="insight-search"
            type="search"
            value={search}
            onInput={(event) => {
              setSearch(event.currentTarget.value);
              setOffset(0);
            }}
          />
        </form>
        <Async value={saved} onRetry={saved.reload}>
          {(page) =>
            page.count === 0 && search === '' ? (
              <EmptyState title="No saved insights yet">
                <Link href={projectPath(projectId, 'insights/new')}>Build a trend</Link> and save it to find it here.
              </EmptyState>
            ) : (
              <>
                <DataTable
                  caption="Saved insights"
                  rows={page.results}
                  rowKey={(insight) => insight.id}
                  empty="No insight matches."
                  columns={[
                    { label: 'Name', cell: link },
                    { label: 'Created by', cell: (insight) => insight.created_by?.first_name || insight.created_by?.email || '—' },
                    { label: 'Last modified', cell: (insight) => dateTime(insight.last_modified_at) },
                  ]}
                />
                <Pagination label="Saved insights pages" count={page.count} offset={offset} limit={PAGE_SIZE} onChange={setOffset} />
              </>
            )
          }
        </Async>
      </Panel>
    </>
  );
}
