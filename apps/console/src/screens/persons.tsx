/**
 * Persons: search by email, distinct id or uuid, person property filters, a paged list newest first, and the
 * listing as CSV. Each name opens the person's page.
 */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { Person } from '../api/types';
import { Async } from '../components/async';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { Pagination } from '../components/pagination';
import { Problem } from '../components/problem';
import { PropertyFilters } from '../components/property-filters';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { useDownload } from '../download';
import { propertiesParam, type FilterForm } from '../filters/property-filter';
import { dateTime } from '../format';
import { useDebounced, useLoad } from '../hooks';
import { projectPath } from '../paths';
import { Link } from '../router';
import { useSearchParams } from '../search-params';

const PAGE_SIZE = 25;
const SEARCH_AFTER_MS = 300;

export function Persons() {
  const { client, projectId } = useConsole();
  const [params, setParams] = useSearchParams();
  const search = params.get('search') ?? '';
  const offset = Number(params.get('offset') ?? 0) || 0;
  const [filters, setFilters] = useState<FilterForm[]>([]);
  const [download, exportError] = useDownload();
  const { properties, problem } = propertiesParam(filters);
  const query = useDebounced(
    JSON.stringify({
      search: search.trim() || undefined,
      properties,
    }),
    SEARCH_AFTER_MS,
  );
  const filtered = query !== '{}';
  const persons = useLoad(
    (signal) =>
      client.call(
        operations.listPersons,
        { project_id: projectId },
        { query: { ...(JSON.parse(query) as Record<string, string>), limit: PAGE_SIZE, offset }, signal },
      ),
    [client, projectId, query, offset],
    { keep: true },
  );
  const keys = persons.status === 'ok' ? [...new Set(persons.data.results.flatMap((person) => Object.keys(person.properties ?? {})))].sort() : [];

  return (
    <>
      <PageHeader title="Persons" subtitle="Everyone your project has seen, newest first.">
        <button
          type="button"
          class="secondary"
          onClick={() => download(() => client.csv(operations.listPersons, { project_id: projectId }, { query: JSON.parse(query) as Record<string, string> }))}
        >
          Export CSV
        </button>
      </PageHeader>
      {exportError !== undefined && <Problem error={exportError} />}
      <section class="panel" aria-label="Find persons">
        <form class="search-bar" role="search" onSubmit={(event) => event.preventDefault()}>
          <label class="grow">
            <span>Search</span>
            <input
              type="search"
              value={search}
              placeholder="Email, distinct ID or UUID"
              spellcheck={false}
              onInput={(event) => setParams({ search: event.currentTarget.value, offset: undefined })}
            />
          </label>
        </form>
        <datalist id="person-property-keys">
          {keys.map((key) => (
            <option key={key} value={key} />
          ))}
        </datalist>
        <PropertyFilters
          filters={filters}
          onChange={(next) => {
            setFilters(next);
            setParams({ offset: undefined });
          }}
          types={['person']}
          label="Person filter"
          keyList="person-property-keys"
        />
        {problem && (
          <p class="form-error" role="alert">
            {problem}
          </p>
        )}
      </section>
      <section class="panel" aria-labelledby="persons-title" aria-busy={persons.pending}>
        <h2 id="persons-title">
          {persons.status === 'ok' ? `${persons.data.count.toLocaleString()} ${persons.data.count === 1 ? 'person' : 'persons'}` : 'Persons'}
        </h2>
        <Async value={persons} onRetry={persons.reload}>
          {(page) =>
            page.count === 0 && !filtered ? (
              <EmptyState title="No persons yet">
                <p>
                  A person appears with the first event your app sends. Identify signed-in users with{' '}
                  <code>
                    posthog.identify('user-id', {'{'} email {'}'})
                  </code>{' '}
                  to find them here by email; the project API key and a snippet are in <Link href={projectPath(projectId, 'settings')}>Settings</Link>.
                </p>
              </EmptyState>
            ) : (
              <>
                <div class="compact-table">
                  <DataTable
                    caption="Persons"
                    rows={page.results}
                    rowKey={(person) => person.uuid}
                    empty="No person matches this search."
                    columns={personColumns(projectId)}
                  />
                </div>
                <Pagination
                  label="Persons pages"
                  count={page.count}
                  offset={offset}
                  limit={PAGE_SIZE}
                  onChange={(next) => setParams({ offset: next === 0 ? undefined : String(next) })}
                />
              </>
            )
          }
        </Async>
      </section>
    </>
  );
}

function personColumns(projectId: string) {
  return [
    {
      label: 'Person',
      cell: (person: Person) => <Link href={projectPath(projectId, `persons/${person.uuid}`)}>{person.name}</Link>,
    },
    { label: 'Distinct ID', cell: (person: Person) => <span class="cell-name nowrap">{person.distinct_ids[0] ?? '—'}</span> },
    { label: 'First seen', cell: (person: Person) => <span class="nowrap">{dateTime(person.created_at)}</span> },
  ];
}
