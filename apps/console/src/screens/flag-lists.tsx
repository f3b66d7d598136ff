/**
 * The read-only lists beside feature flags: cohorts (who flags can target), early access features and surveys
 * (each of which may own a flag). They are created through the API; each list says how when it is empty.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Operation } from '../api/operations';
import { operations } from '../api/operations';
import type { Page } from '../api/types';
import { Async } from '../components/async';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { Pagination } from '../components/pagination';
import { DataTable, type Column } from '../components/table';
import { useConsole } from '../context';
import { SectionTabs } from '../flags/section-tabs';
import { surveyStatus } from '../flags/survey-status';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import { projectPath } from '../paths';
import { Link } from '../router';

const PAGE_SIZE = 50;

function ListScreen<T extends { id: number | string }>({
  title,
  operation,
  columns,
  empty,
}: {
  title: string;
  operation: Operation<Page<T>, undefined, string>;
  columns: Column<T>[];
  empty: { title: string; body: ComponentChildren };
}) {
  const { client, projectId } = useConsole();
  const [offset, setOffset] = useState(0);
  const rows = useLoad(
    (signal) => client.call(operation, { project_id: projectId }, { query: { limit: PAGE_SIZE, offset }, signal }),
    [client, projectId, operation, offset],
    { keep: true },
  );
  return (
    <>
      <PageHeader title="Feature flags" />
      <SectionTabs />
      <section class="panel" aria-labelledby="list-title">
        <h2 id="list-title">{title}</h2>
        <Async value={rows} onRetry={rows.reload}>
          {(page) =>
            page.count === 0 ? (
              <EmptyState title={empty.title}>{empty.body}</EmptyState>
            ) : (
              <>
                <DataTable caption={title} rows={page.results} rowKey={(row) => row.id} columns={columns} />
                <Pagination label={`${title} pages`} count={page.count} offset={offset} limit={PAGE_SIZE} onChange={setOffset} />
              </>
            )
          }
        </Async>
      </section>
    </>
  );
}

const apiPath = (projectId: string, path: string) => (
  <code>
    POST /api/projects/{projectId}/{path}/
  </code>
);

export function Cohorts() {
  const { projectId } = useConsole();
  return (
    <ListScreen
      title="Cohorts"
      operation={operations.listCohorts}
      empty={{
        title: 'No cohorts yet',
        body: (
          <p>
            A cohort is a group of persons, by their properties or a fixed list, that flag conditions can target. Create one with{' '}
            {apiPath(projectId, 'cohorts')}.
          </p>
        ),
      }}
      columns={[
        { label: 'Name', cell: (cohort) => cohort.name },
        { label: 'Kind', cell: (cohort) => (cohort.is_static ? 'Fixed list' : 'By properties') },
        { label: 'Persons', numeric: true, cell: (cohort) => (cohort.count === null ? '—' : cohort.count.toLocaleString()) },
        { label: 'Created', cell: (cohort) => dateTime(cohort.created_at) },
      ]}
    />
  );
}

export function EarlyAccessFeatures() {
  const { projectId } = useConsole();
  return (
    <ListScreen
      title="Early access features"
      operation={operations.listEarlyAccessFeatures}
      empty={{
        title: 'No early access features yet',
        body: (
          <p>
            Users opt in to an early access feature from your app (posthog-js's early access API); its flag turns the feature on for them. Create one with{' '}
            {apiPath(projectId, 'early_access_features')}.
          </p>
        ),
      }}
      columns={[
        { label: 'Name', cell: (feature) => feature.name },
        { label: 'Stage', cell: (feature) => feature.stage },
        {
          label: 'Flag',
          cell: (feature) =>
            feature.feature_flag ? (
              <Link href={projectPath(projectId, `feature_flags/${feature.feature_flag.id}`)} class="cell-name">
                {feature.feature_flag.key}
              </Link>
            ) : (
              '—'
            ),
        },
        { label: 'Created', cell: (feature) => dateTime(feature.created_at) },
      ]}
    />
  );
}

export function Surveys() {
  const { projectId } = useConsole();
  return (
    <ListScreen
      title="Surveys"
      operation={operations.listSurveys}
      empty={{
        title: 'No surveys yet',
        body: <p>posthog-js shows a running survey to the users its conditions and targeting flag pick. Create one with {apiPath(projectId, 'surveys')}.</p>,
      }}
      columns={[
        { label: 'Name', cell: (survey) => survey.name },
        { label: 'Type', cell: (survey) => survey.type },
        { label: 'Status', cell: (survey) => surveyStatus(survey) },
        { label: 'Questions', numeric: true, cell: (survey) => survey.questions.length },
        { label: 'Created', cell: (survey) => dateTime(survey.created_at) },
      ]}
    />
  );
}
