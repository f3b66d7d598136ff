/**
 * Feature flags: the project's flags with their status (switched on and off in place) and who they roll out to,
 * searchable and filtered by status. Each key opens the flag's editor.
 */
import { useState } from 'preact/hooks';
import type { ApiClient } from '../api/client';
import { operations } from '../api/operations';
import type { FeatureFlag, GroupType } from '../api/types';
import { Async } from '../components/async';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { Pagination } from '../components/pagination';
import { Problem } from '../components/problem';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { rolloutSummary } from '../flags/flag-form';
import { SectionTabs } from '../flags/section-tabs';
import { dateTime } from '../format';
import { useDebounced, useLoad } from '../hooks';
import { projectPath } from '../paths';
import { Link } from '../router';
import { useSearchParams } from '../search-params';

const PAGE_SIZE = 50;

/** The project's group types, or none when the key may not read them (they only name things). */
export function loadGroupTypes(client: ApiClient, projectId: string, signal: AbortSignal): Promise<GroupType[]> {
  return client.call(operations.listGroupTypes, { project_id: projectId }, { signal }).catch(() => []);
}

export function FeatureFlags() {
  const { client, projectId } = useConsole();
  const [params, setParams] = useSearchParams();
  const search = params.get('search') ?? '';
  const status = params.get('status') ?? '';
  const [offset, setOffset] = useState(0);
  const settled = useDebounced(search.trim(), 300);
  const flags = useLoad(
    (signal) =>
      client.call(
        operations.listFlags,
        { project_id: projectId },
        { query: { search: settled || undefined, active: status === '' ? undefined : status === 'on', limit: PAGE_SIZE, offset }, signal },
      ),
    [client, projectId, settled, status, offset],
    { keep: true },
  );
  const groupTypes = useLoad((signal) => loadGroupTypes(client, projectId, signal), [client, projectId]);
  const groupNames = new Map((groupTypes.status === 'ok' ? groupTypes.data : []).map((type) => [type.group_type_index, type.name_plural || type.group_type]));
  const newFlag = (
    <Link class="button" href={projectPath(projectId, 'feature_flags/new')}>
      New feature flag
    </Link>
  );

  return (
    <>
      <PageHeader title="Feature flags" subtitle="Roll features out gradually, to chosen users, or as experiments with variants.">
        {newFlag}
      </PageHeader>
      <SectionTabs />
      <section class="panel" aria-labelledby="flags-title" aria-busy={flags.pending}>
        <h2 id="flags-title" class="visually-hidden">
          Flags
        </h2>
        <form class="toolbar wrap" role="search" onSubmit={(event) => event.preventDefault()}>
          <label class="grow">
            <span>Search</span>
            <input
              type="search"
              value={search}
              placeholder="Key or name"
              onInput={(event) => {
                setParams({ search: event.currentTarget.value });
                setOffset(0);
              }}
            />
          </label>
          <label>
            <span>Status</span>
            <select
              value={status}
              onChange={(event) => {
                setParams({ status: event.currentTarget.value });
                setOffset(0);
              }}
            >
              <option value="">Any</option>
              <option value="on">Enabled</option>
              <option value="off">Disabled</option>
            </select>
          </label>
        </form>
        <Async value={flags} onRetry={flags.reload}>
          {(page) =>
            page.count === 0 && settled === '' && status === '' ? (
              <EmptyState title="No feature flags yet">
                <p>
                  A flag turns a feature on for some users and off for others without a deploy. Create one, then ask for it in your app with{' '}
                  <code>posthog.isFeatureEnabled('your-flag')</code>.
                </p>
                {newFlag}
              </EmptyState>
            ) : (
              <>
                <div class="compact-table">
                  <DataTable
                    caption="Feature flags"
                    rows={page.results}
                    rowKey={(flag) => flag.id}
                    empty="No flag matches."
                    columns={[
                      {
                        label: 'Key',
                        cell: (flag) => (
                          <Link href={projectPath(projectId, `feature_flags/${flag.id}`)} class="cell-name nowrap">
                            {flag.key}
                          </Link>
                        ),
                      },
                      { label: 'Name', cell: (flag) => flag.name || <span class="muted">—</span> },
                      { label: 'Status', cell: (flag) => <FlagSwitch flag={flag} /> },
                      {
                        label: 'Rollout',
                        cell: (flag) => {
                          const index = flag.filters.aggregation_group_type_index;
                          return rolloutSummary(flag, typeof index === 'number' ? (groupNames.get(index) ?? `groups of type ${index}`) : undefined);
                        },
                      },
                      {
                        label: 'Created',
                        cell: (flag) => `${dateTime(flag.created_at)}${flag.created_by ? ` by ${flag.created_by.first_name || flag.created_by.email}` : ''}`,
                      },
                    ]}
                  />
                </div>
                <Pagination label="Feature flag pages" count={page.count} offset={offset} limit={PAGE_SIZE} onChange={setOffset} />
              </>
            )
          }
        </Async>
      </section>
    </>
  );
}

/** A flag's enabled switch: the change is saved at once and undone on screen if the server refuses it. */
export function FlagSwitch({ flag, onChange }: { flag: FeatureFlag; onChange?: (flag: FeatureFlag) => void }) {
  const { client, projectId } = useConsole();
  const [active, setActive] = useState(flag.active);
  const [state, setState] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  const toggle = async (next: boolean) => {
    setActive(next);
    setState({ busy: true });
    try {
      const saved = await client.call(operations.updateFlag, { project_id: projectId, id: flag.id }, { body: { active: next } });
      setState({ busy: false });
      onChange?.(saved);
    } catch (error) {
      setActive(!next);
      setState({ busy: false, error });
    }
  };
  return (
    <>
      <label class="switch">
        <input
          type="checkbox"
          role="switch"
          checked={active}
          disabled={state.busy || !flag.can_edit}
          onChange={(event) => void toggle(event.currentTarget.checked)}
          aria-label={`Enable ${flag.key}`}
        />
        <span aria-hidden="true">{active ? 'Enabled' : 'Disabled'}</span>
      </label>
      {state.error !== undefined && <Problem error={state.error} />}
    </>
  );
}
