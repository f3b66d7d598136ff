/**
 * Web analytics (docs/web-analytics.md): the overview figures with their change from the previous period, unique
 * visitors over time, tables of pages, sources, devices and places, and the visitors of the last 30 minutes —
 * every number from the query API. A value in a table filters the whole screen; the range, the comparison and
 * the filters are kept in the address (web/web-query.ts).
 */
import { useMemo, useState } from 'preact/hooks';
import { runQuery } from '../api/query';
import type { HogQLResponse, InsightQueryResponse, TrendSeries, WebOverviewResponse, WebStatsTableResponse } from '../api/types';
import { Async } from '../components/async';
import { Chart } from '../components/chart';
import { PageHeader } from '../components/page-header';
import { Panel } from '../components/panel';
import { Segmented } from '../components/segmented';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { figure } from '../format';
import { useInterval, useLoad } from '../hooks';
import { chartModel } from '../insights/chart-data';
import { TimeFields } from '../insights/fields';
import { useSearchParams } from '../search-params';
import {
  breakdownLabel,
  chartInterval,
  isWebAddress,
  limiter,
  LIVE_VISITORS,
  OVERVIEW_LABELS,
  overviewChange,
  overviewNode,
  overviewValue,
  readWebState,
  statsNode,
  visitorsNode,
  WEB_PANELS,
  webStateParams,
  withFilter,
  type WebFilter,
  type WebState,
  type WebTable,
} from '../web/web-query';

const LIVE_REFRESH_MS = 30_000;
/** Queries of the panels at once: with the live count's, within the server's limit of a project's queries at once. */
const PANEL_QUERIES = 2;

export function WebAnalytics() {
  const [search, setSearch] = useSearchParams();
  const key = search.toString();
  const state = useMemo(() => readWebState(search), [key]);
  const update = (changes: Partial<WebState>) => setSearch(webStateParams({ ...state, ...changes }));
  const addFilter = (filter: WebFilter) => update({ filters: withFilter(state.filters, filter) });
  const queue = useMemo(() => limiter(PANEL_QUERIES), []);

  return (
    <>
      <PageHeader title="Web analytics" subtitle="Visitors, pages, sources, devices and places from pageviews" />
      <div class="web-controls">
        <TimeFields
          value={{ dateFrom: state.dateFrom, dateTo: state.dateTo, interval: chartInterval(state) }}
          interval={false}
          onChange={(range) => update({ dateFrom: range.dateFrom, dateTo: range.dateTo })}
        >
          <label class="checkbox">
            <input type="checkbox" checked={state.compare} onChange={(event) => update({ compare: event.currentTarget.checked })} />
            <span>Compare to the previous period</span>
          </label>
        </TimeFields>
        {state.filters.length > 0 && (
          <ul class="web-filters" aria-label="Filters">
            {state.filters.map((filter) => (
              <li key={filter.key}>
                <code>{filter.key}</code> = {filter.value}
                <button
                  type="button"
                  class="link-button"
                  aria-label={`Remove the filter ${filter.key} = ${filter.value}`}
                  onClick={() => update({ filters: state.filters.filter((each) => each.key !== filter.key) })}
                >
                  ✕
                </button>
              </li>
            ))}
          </ul>
        )}
      </div>
      <div class="grid web-grid">
        <OverviewPanel state={state} stateKey={key} queue={queue} />
        <LiveVisitors />
        <VisitorsPanel state={state} stateKey={key} queue={queue} />
        {WEB_PANELS.map((panel) => (
          <StatsPanel key={panel.id} panel={panel} state={state} stateKey={key} queue={queue} onFilter={addFilter} />
        ))}
      </div>
    </>
  );
}

interface PanelProps {
  state: WebState;
  /** The address's query string: the panels load again when it changes. */
  stateKey: string;
  /** Runs the panel's query in its turn. */
  queue: ReturnType<typeof limiter>;
}

function OverviewPanel({ state, stateKey, queue }: PanelProps) {
  const { client, projectId } = useConsole();
  const overview = useLoad(
    (signal) => queue(() => runQuery<WebOverviewResponse>(client, projectId, overviewNode(state), signal), signal),
    [client, projectId, stateKey],
    {
      keep: true,
    },
  );
  return (
    <Panel id="web-overview" title="Overview" kind="overview">
      <Async value={overview} onRetry={overview.reload}>
        {(data) => (
          <dl class="web-overview">
            {data.results.map((item) => {
              const change = overviewChange(item);
              return (
                <div key={item.key} data-key={item.key}>
                  <dt>{OVERVIEW_LABELS[item.key] ?? item.key}</dt>
                  <dd class="big-number">{overviewValue(item.kind, item.value)}</dd>
                  {state.compare && (
                    <dd class={change?.good === true ? 'change good' : change?.good === false ? 'change bad' : 'change'}>
                      {change ? change.text : '—'}
                      <span class="muted"> vs {overviewValue(item.kind, item.previous)}</span>
                    </dd>
                  )}
                </div>
              );
            })}
          </dl>
        )}
      </Async>
    </Panel>
  );
}

function LiveVisitors() {
  const { client, projectId } = useConsole();
  const live = useLoad((signal) => runQuery<HogQLResponse>(client, projectId, LIVE_VISITORS, signal), [client, projectId]);
  useInterval(live.reload, LIVE_REFRESH_MS);
  return (
    <Panel id="web-live" title="Visitors, last 30 minutes" kind="live">
      <Async value={live} onRetry={live.reload}>
        {(data) => (
          <p class="big-number" aria-live="polite" data-testid="live-visitors">
            {figure(Number(data.results[0]?.[0] ?? 0))}
          </p>
        )}
      </Async>
    </Panel>
  );
}

function VisitorsPanel({ state, stateKey, queue }: PanelProps) {
  const { client, projectId } = useConsole();
  const interval = chartInterval(state);
  const trend = useLoad(
    (signal) => queue(() => runQuery<InsightQueryResponse<TrendSeries[]>>(client, projectId, visitorsNode(state), signal), signal),
    [client, projectId, stateKey],
    { keep: true },
  );
  const model = useMemo(() => (trend.status === 'ok' ? chartModel(trend.data.results, interval) : undefined), [trend, interval]);
  return (
    <Panel id="web-visitors" title="Unique visitors" kind="chart">
      <Async value={trend} onRetry={trend.reload}>
        {() => model && <Chart model={model} kind="line" label={`Unique visitors per ${interval}`} />}
      </Async>
    </Panel>
  );
}

function StatsPanel({ panel, state, stateKey, queue, onFilter }: PanelProps & { panel: (typeof WEB_PANELS)[number]; onFilter: (filter: WebFilter) => void }) {
  const { client, projectId } = useConsole();
  const [tableIndex, setTableIndex] = useState(0);
  const table = panel.tables[tableIndex]!;
  const stats = useLoad(
    // The answer keeps the table it is of: while another tab's rows load, the previous rows keep their own labels.
    async (signal) => ({
      table,
      answer: await queue(() => runQuery<WebStatsTableResponse>(client, projectId, statsNode(state, table, panel.bounceRate), signal), signal),
    }),
    [client, projectId, stateKey, table],
    { keep: true },
  );
  return (
    <Panel id={`web-${panel.id}`} title={panel.title}>
      <Segmented
        name={`web-${panel.id}-table`}
        label={`${panel.title} by`}
        options={panel.tables.map((each, index) => ({ value: String(index), label: each.label }))}
        value={String(tableIndex)}
        onChange={(value) => setTableIndex(Number(value))}
      />
      <Async value={stats} onRetry={stats.reload}>
        {(data) => <StatsTable table={data.table} rows={data.answer.results} bounceRate={panel.bounceRate} compare={state.compare} onFilter={onFilter} />}
      </Async>
    </Panel>
  );
}

/** A cell's `[value, previous]` pair. */
function pair(cell: unknown): [number | null, number | null] {
  return Array.isArray(cell) ? [(cell[0] as number | null) ?? null, (cell[1] as number | null) ?? null] : [null, null];
}

function Figure({ cell, compare, percent }: { cell: unknown; compare: boolean; percent?: boolean }) {
  const [value, previous] = pair(cell);
  const text = (n: number | null) => (n === null ? '—' : percent ? `${Math.round(n * 100)}%` : figure(n));
  return (
    <>
      {text(value)}
      {compare && <span class="muted previous"> ({text(previous)})</span>}
    </>
  );
}

function StatsTable({
  table,
  rows,
  bounceRate,
  compare,
  onFilter,
}: {
  table: WebTable;
  rows: unknown[][];
  bounceRate: boolean;
  compare: boolean;
  onFilter: (filter: WebFilter) => void;
}) {
  const property = table.property;
  if (table.outbound) return <OutboundTable table={table} rows={rows} />;
  return (
    <DataTable
      caption={`${table.label}: visitors and views`}
      rows={rows}
      rowKey={(row) => JSON.stringify(row[0])}
      empty="No pageviews in this range."
      columns={[
        {
          label: table.label,
          cell: (row) => {
            const label = breakdownLabel(table.breakdownBy, row[0]);
            return property && typeof row[0] === 'string' ? (
              <button type="button" class="link-button cell-name" title={`Only ${label}`} onClick={() => onFilter({ key: property, value: row[0] as string })}>
                {label}
              </button>
            ) : (
              <span class="cell-name">{label}</span>
            );
          },
        },
        { label: 'Visitors', numeric: true, cell: (row) => <Figure cell={row[1]} compare={compare} /> },
        { label: 'Views', numeric: true, cell: (row) => <Figure cell={row[2]} compare={compare} /> },
        ...(bounceRate ? [{ label: 'Bounce rate', numeric: true, cell: (row: unknown[]) => <Figure cell={row[3]} compare={compare} percent /> }] : []),
      ]}
    />
  );
}

/** Links to other sites clicked: each destination (a link that opens it), its visitors and clicks. */
function OutboundTable({ table, rows }: { table: WebTable; rows: unknown[][] }) {
  return (
    <DataTable
      caption={`${table.label}: visitors and clicks`}
      rows={rows}
      rowKey={(row) => String(row[0])}
      empty="No clicks on links to other sites in this range (posthog-js reports them with autocapture on)."
      columns={[
        {
          label: table.label,
          // A link only to a web address: the URL is whatever an event sent (`javascript:` must stay text).
          cell: (row) =>
            isWebAddress(row[0]) ? (
              <a class="cell-name" href={row[0]} target="_blank" rel="noopener noreferrer">
                {row[0]}
              </a>
            ) : (
              <span class="cell-name">{String(row[0])}</span>
            ),
        },
        { label: 'Visitors', numeric: true, cell: (row) => figure(Number(row[1])) },
        { label: 'Clicks', numeric: true, cell: (row) => figure(Number(row[2])) },
      ]}
    />
  );
}
