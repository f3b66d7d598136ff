/**
 * The project's landing screen, every number from the trend endpoint: events and unique users per day over the
 * last 14 days, the events of the last hour (refreshed every 15 s), the top events (every event broken down by
 * its name) and the top pages. With no event in the range it shows how to send some instead.
 *
 * The events per day are asked first and alone: the first chart waits for nothing else (the server runs one
 * query at a time, so requests sent beside it would delay it). Once they are drawn, the other panels ask for
 * theirs.
 */
import { useMemo } from 'preact/hooks';
import type { ApiClient } from '../api/client';
import { operations } from '../api/operations';
import type { TrendRequest, TrendResponse, TrendSeries } from '../api/types';
import { Async } from '../components/async';
import { Chart } from '../components/chart';
import { CodeBlock } from '../components/code-block';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { Panel } from '../components/panel';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { useInterval, useLoad } from '../hooks';
import { chartModel, totalRows, type TotalRow } from '../insights/chart-data';

const DAYS = '-13d'; // today and the 13 days before it
const LIVE_REFRESH_MS = 15_000;
const TOP = 10;

const ALL_EVENTS = { id: null, type: 'events', name: 'All events' } as const;

const OVERVIEW_QUERIES = {
  events: {
    insight: 'TRENDS',
    events: [{ ...ALL_EVENTS, order: 0, math: 'total', custom_name: 'Events' }],
    interval: 'day',
    date_from: DAYS,
    display: 'ActionsLineGraph',
  },
  users: {
    insight: 'TRENDS',
    events: [{ ...ALL_EVENTS, order: 0, math: 'dau', custom_name: 'Unique users' }],
    interval: 'day',
    date_from: DAYS,
    display: 'ActionsLineGraph',
  },
  lastHour: { insight: 'TRENDS', events: [{ ...ALL_EVENTS, order: 0, math: 'total' }], interval: 'minute', date_from: '-60M', display: 'BoldNumber' },
  everything: { insight: 'TRENDS', events: [{ ...ALL_EVENTS, order: 0, math: 'total' }], interval: 'month', date_from: 'all', display: 'BoldNumber' },
  topPages: {
    insight: 'TRENDS',
    events: [{ id: '$pageview', type: 'events', name: '$pageview', order: 0, math: 'total' }],
    interval: 'day',
    date_from: DAYS,
    breakdown: '$pathname',
    breakdown_type: 'event',
    breakdown_limit: TOP,
    display: 'ActionsTable',
  },
  topEvents: {
    insight: 'TRENDS',
    events: [{ ...ALL_EVENTS, order: 0, math: 'total' }],
    interval: 'day',
    date_from: DAYS,
    breakdown: 'event',
    breakdown_type: 'event_metadata',
    breakdown_limit: TOP,
    display: 'ActionsTable',
  },
} satisfies Record<string, TrendRequest>;

function trend(client: ApiClient, projectId: string, body: TrendRequest, signal: AbortSignal): Promise<TrendResponse> {
  return client.call(operations.trend, { project_id: projectId }, { body, signal });
}

/** A breakdown's values with their totals over the range, largest first (the rest last, as "Other"). */
async function breakdownTotals(client: ApiClient, projectId: string, body: TrendRequest, signal: AbortSignal): Promise<TotalRow[]> {
  return totalRows((await trend(client, projectId, body, signal)).result);
}

export function Overview() {
  const { client, projectId, project } = useConsole();
  const events = useLoad((signal) => trend(client, projectId, OVERVIEW_QUERIES.events, signal), [client, projectId]);
  const empty = events.status === 'ok' && events.data.result.every((series) => series.count === 0);

  return (
    <>
      <PageHeader title="Overview" subtitle={project ? `${project.name} · last 14 days · ${project.timezone}` : 'Last 14 days'} />
      <Async value={events} onRetry={events.reload}>
        {(data) => (empty ? <NoEvents onRetry={events.reload} /> : <DailyPanels events={data.result} />)}
      </Async>
    </>
  );
}

/** The headline numbers and the daily charts, with the breakdown tables beside the charts. */
function DailyPanels({ events }: { events: TrendSeries[] }) {
  const { client, projectId } = useConsole();
  const eventsModel = useMemo(() => chartModel(events, 'day'), [events]);
  const users = useLoad((signal) => trend(client, projectId, OVERVIEW_QUERIES.users, signal), [client, projectId]);
  const usersModel = useMemo(() => (users.status === 'ok' ? chartModel(users.data.result, 'day') : undefined), [users]);
  return (
    <div class="grid">
      <LiveCount />
      <Panel id="events-14-days" title="Events, 14 days">
        <p class="big-number">{(eventsModel.series[0]?.total ?? 0).toLocaleString()}</p>
      </Panel>
      <Panel id="users-today" title="Unique users today">
        <Async value={users} onRetry={users.reload}>
          {() => <p class="big-number">{(usersModel?.series[0]?.values.at(-1) ?? 0).toLocaleString()}</p>}
        </Async>
      </Panel>
      <Panel id="events-per-day" title="Events per day" wide>
        <Chart model={eventsModel} kind="bar" label="Events per day, last 14 days" />
      </Panel>
      <TopEvents />
      <Panel id="users-per-day" title="Unique users per day" wide>
        <Async value={users} onRetry={users.reload}>
          {() => usersModel && <Chart model={usersModel} kind="line" label="Unique users per day, last 14 days" />}
        </Async>
      </Panel>
      <TopPages />
    </div>
  );
}

function LiveCount() {
  const { client, projectId } = useConsole();
  const live = useLoad((signal) => trend(client, projectId, OVERVIEW_QUERIES.lastHour, signal), [client, projectId]);
  useInterval(live.reload, LIVE_REFRESH_MS);
  return (
    <Panel id="live" title="Events, last hour">
      <Async value={live} onRetry={live.reload}>
        {(data) => (
          <p class="big-number" aria-live="polite" data-testid="live-count">
            {(data.result[0]?.aggregated_value ?? 0).toLocaleString()}
          </p>
        )}
      </Async>
    </Panel>
  );
}

function TotalsTable({ caption, rows, column }: { caption: string; rows: TotalRow[]; column: string }) {
  return (
    <DataTable
      caption={caption}
      rows={rows}
      rowKey={(row) => row.label}
      empty="No events in this range."
      columns={[
        { label: column, cell: (row) => <span class="cell-name">{row.label}</span> },
        { label: 'Events', numeric: true, cell: (row) => row.value.toLocaleString() },
      ]}
    />
  );
}

function TopEvents() {
  const { client, projectId } = useConsole();
  const rows = useLoad((signal) => breakdownTotals(client, projectId, OVERVIEW_QUERIES.topEvents, signal), [client, projectId]);
  return (
    <Panel id="top-events" title="Top events">
      <Async value={rows} onRetry={rows.reload}>
        {(data) => <TotalsTable caption="Top events, last 14 days" rows={data} column="Event" />}
      </Async>
    </Panel>
  );
}

function TopPages() {
  const { client, projectId } = useConsole();
  const rows = useLoad((signal) => breakdownTotals(client, projectId, OVERVIEW_QUERIES.topPages, signal), [client, projectId]);
  return (
    <Panel id="top-pages" title="Top pages">
      <Async value={rows} onRetry={rows.reload}>
        {(data) => <TotalsTable caption="Top pages by pageviews, last 14 days" rows={data} column="Path" />}
      </Async>
    </Panel>
  );
}

/** posthog-js set up for this server and project. */
export function posthogSnippet(token: string, host: string): string {
  return `import posthog from 'posthog-js'\n\nposthog.init('${token}', {\n  api_host: '${host}',\n  person_profiles: 'identified_only',\n})`;
}

function NoEvents({ onRetry }: { onRetry: () => void }) {
  const { client, projectId, project } = useConsole();
  const ever = useLoad((signal) => trend(client, projectId, OVERVIEW_QUERIES.everything, signal), [client, projectId]);
  const anyEvent = ever.status === 'ok' && (ever.data.result[0]?.aggregated_value ?? 0) > 0;
  return (
    <EmptyState title={anyEvent ? 'No events in the last 14 days' : 'No events yet'}>
      <p>
        Send events with any PostHog SDK pointed at this server. In a web app, install <code>posthog-js</code> and initialise it with the project API key:
      </p>
      <CodeBlock code={posthogSnippet(project?.api_token ?? '<project API key, phc_…>', window.location.origin)} label="posthog-js snippet" />
      <p class="muted">In a distributed deployment, use the capture service's address as api_host.</p>
      <button type="button" onClick={onRetry}>
        Check again
      </button>
    </EmptyState>
  );
}
