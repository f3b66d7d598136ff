/**
 * LLM analytics (docs/llm-analytics.md#console): the `$ai_*` events that `/i/v0/ai/batch/` and `/i/v0/ai/otel`
 * store, as a list of traces (one opens as the tree of its spans and generations), a list of generations, and cost,
 * tokens and latency per model and day — every figure from the query API's HogQL. The view, the range and the open
 * trace are kept in the address.
 */
import { runHogQL } from '../api/query';
import { Async } from '../components/async';
import { Chart } from '../components/chart';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { Panel } from '../components/panel';
import { Segmented } from '../components/segmented';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { dateTime, figure } from '../format';
import { useLoad } from '../hooks';
import {
  GENERATIONS_QUERY,
  LLM_RANGES,
  MODELS_QUERY,
  modelChart,
  TRACE_QUERY,
  TRACES_QUERY,
  traceTree,
  type ModelRow,
  type TraceRow,
} from '../llm/llm-queries';
import { useSearchParams } from '../search-params';

type View = 'traces' | 'generations' | 'models';
const VIEWS: ReadonlyArray<{ value: View; label: string }> = [
  { value: 'traces', label: 'Traces' },
  { value: 'generations', label: 'Generations' },
  { value: 'models', label: 'Models' },
];

type TraceListRow = [traceId: string, started: string, person: string, generations: number, spans: number, tokens: number, cost: number, latency: number];
type GenerationRow = [
  timestamp: string,
  model: string | null,
  provider: string | null,
  input: number,
  output: number,
  latency: number,
  cost: number,
  traceId: string | null,
  person: string,
];

/** Dollars: cents, or two significant digits below a cent (a generation often costs a fraction of one). */
const usd = (value: number) => `$${value > 0 && value < 0.01 ? value.toPrecision(2) : value.toFixed(2)}`;
const seconds = (value: number) => `${value.toFixed(2)} s`;

export function LlmAnalytics() {
  const [params, setParams] = useSearchParams();
  const view = VIEWS.find((each) => each.value === params.get('view'))?.value ?? 'traces';
  const days = Number(params.get('days') ?? 7) || 7;
  const trace = params.get('trace') ?? '';

  return (
    <>
      <PageHeader title="LLM analytics" subtitle="Traces, generations, and cost, tokens and latency per model, from the $ai_* events." />
      <section class="panel" aria-label="LLM analytics view">
        <form class="toolbar wrap" onSubmit={(event) => event.preventDefault()}>
          <Segmented name="llm-view" label="View" value={view} options={VIEWS} onChange={(next) => setParams({ view: next, trace: undefined })} />
          <label>
            <span>Range</span>
            <select value={String(days)} onChange={(event) => setParams({ days: event.currentTarget.value })}>
              {LLM_RANGES.map((range) => (
                <option key={range.days} value={String(range.days)}>
                  {range.label}
                </option>
              ))}
            </select>
          </label>
        </form>
      </section>
      {trace !== '' ? (
        <TraceView traceId={trace} onClose={() => setParams({ trace: undefined })} />
      ) : view === 'traces' ? (
        <Traces days={days} onOpen={(id) => setParams({ trace: id })} />
      ) : view === 'generations' ? (
        <Generations days={days} onOpen={(id) => setParams({ trace: id })} />
      ) : (
        <Models days={days} />
      )}
    </>
  );
}

function useHogQL<Row>(query: string, values: Record<string, unknown>) {
  const { client, projectId } = useConsole();
  const key = JSON.stringify(values);
  return useLoad(async (signal) => (await runHogQL(client, projectId, query, signal, values)).results as Row[], [client, projectId, query, key]);
}

function TraceLink({ id, onOpen }: { id: string; onOpen: (id: string) => void }) {
  return (
    <button type="button" class="link-button" onClick={() => onOpen(id)}>
      {id}
    </button>
  );
}

function Traces({ days, onOpen }: { days: number; onOpen: (id: string) => void }) {
  const traces = useHogQL<TraceListRow>(TRACES_QUERY, { days });
  return (
    <Panel id="llm-traces" title="Traces">
      <Async value={traces} onRetry={traces.reload}>
        {(rows) =>
          rows.length === 0 ? (
            <NoEvents />
          ) : (
            <DataTable
              caption="Traces, newest first"
              rows={rows}
              rowKey={(row) => row[0]}
              columns={[
                { label: 'Trace', cell: (row) => <TraceLink id={row[0]} onOpen={onOpen} /> },
                { label: 'Started', cell: (row) => dateTime(row[1]) },
                { label: 'Person', cell: (row) => row[2] },
                { label: 'Generations', numeric: true, cell: (row) => figure(row[3]) },
                { label: 'Spans', numeric: true, cell: (row) => figure(row[4]) },
                { label: 'Tokens', numeric: true, cell: (row) => figure(row[5]) },
                { label: 'Cost', numeric: true, cell: (row) => usd(row[6]) },
                { label: 'Latency', numeric: true, cell: (row) => seconds(row[7]) },
              ]}
            />
          )
        }
      </Async>
    </Panel>
  );
}

function TraceView({ traceId, onClose }: { traceId: string; onClose: () => void }) {
  const events = useHogQL<TraceRow>(TRACE_QUERY, { trace: traceId });
  return (
    <Panel id="llm-trace" title={`Trace ${traceId}`}>
      <p>
        <button type="button" class="secondary" onClick={onClose}>
          Back to the list
        </button>
      </p>
      <Async value={events} onRetry={events.reload}>
        {(rows) =>
          rows.length === 0 ? (
            <p class="muted">No event of this trace.</p>
          ) : (
            <ul class="trace-tree" aria-label="Spans and generations of the trace">
              {traceTree(traceId, rows).map(({ row, depth }) => (
                <li key={row[0]} style={{ paddingLeft: `${depth * 1.5}rem` }}>
                  <span class={`badge ${row[1] === '$ai_generation' ? '' : 'muted-badge'}`}>{row[1].replace('$ai_', '')}</span> <strong>{row[5]}</strong>
                  <span class="span-meta">
                    {[
                      row[6] && row[1] !== '$ai_generation' ? row[6] : null,
                      seconds(row[7]),
                      row[8] + row[9] > 0 ? `${figure(row[8])} → ${figure(row[9])} tokens` : null,
                      row[10] > 0 ? usd(row[10]) : null,
                      dateTime(row[2]),
                    ]
                      .filter(Boolean)
                      .join(' · ')}
                  </span>
                </li>
              ))}
            </ul>
          )
        }
      </Async>
    </Panel>
  );
}

function Generations({ days, onOpen }: { days: number; onOpen: (id: string) => void }) {
  const generations = useHogQL<GenerationRow>(GENERATIONS_QUERY, { days });
  return (
    <Panel id="llm-generations" title="Generations">
      <Async value={generations} onRetry={generations.reload}>
        {(rows) =>
          rows.length === 0 ? (
            <NoEvents />
          ) : (
            <DataTable
              caption="Generations, newest first"
              rows={rows}
              rowKey={(_row, index) => index}
              columns={[
                { label: 'Time', cell: (row) => dateTime(row[0]) },
                { label: 'Model', cell: (row) => row[1] ?? '—' },
                { label: 'Provider', cell: (row) => row[2] ?? '—' },
                { label: 'Input tokens', numeric: true, cell: (row) => figure(row[3]) },
                { label: 'Output tokens', numeric: true, cell: (row) => figure(row[4]) },
                { label: 'Latency', numeric: true, cell: (row) => seconds(row[5]) },
                { label: 'Cost', numeric: true, cell: (row) => usd(row[6]) },
                { label: 'Trace', cell: (row) => (row[7] ? <TraceLink id={row[7]} onOpen={onOpen} /> : '—') },
                { label: 'Person', cell: (row) => row[8] },
              ]}
            />
          )
        }
      </Async>
    </Panel>
  );
}

function Models({ days }: { days: number }) {
  const models = useHogQL<ModelRow>(MODELS_QUERY, { days });
  return (
    <Async value={models} onRetry={models.reload}>
      {(rows) =>
        rows.length === 0 ? (
          <section class="panel">
            <NoEvents />
          </section>
        ) : (
          <>
            <Panel id="llm-tokens" title="Tokens per model and day">
              <Chart model={modelChart(rows, 4, true, days)} kind="stacked" label="Tokens per model and day" />
            </Panel>
            <Panel id="llm-latency" title="Average latency per model and day (seconds)">
              <Chart model={modelChart(rows, 5, false, days)} kind="line" label="Average generation latency per model and day" />
            </Panel>
            {/* Costs are fractions of a cent: written out, where a chart's axis would round them away. */}
            <Panel id="llm-cost" title="Cost, tokens and latency per model and day">
              <DataTable
                caption="Cost, tokens and latency per model and day"
                rows={[...rows].reverse()}
                rowKey={(row) => `${row[0]} ${row[1]}`}
                columns={[
                  { label: 'Day', cell: (row) => row[0].slice(0, 10) },
                  { label: 'Model', cell: (row) => row[1] },
                  { label: 'Generations', numeric: true, cell: (row) => figure(row[2]) },
                  { label: 'Cost', numeric: true, cell: (row) => usd(row[3]) },
                  { label: 'Tokens', numeric: true, cell: (row) => figure(row[4]) },
                  { label: 'Average latency', numeric: true, cell: (row) => seconds(row[5]) },
                ]}
              />
            </Panel>
          </>
        )
      }
    </Async>
  );
}

function NoEvents() {
  return (
    <EmptyState title="No LLM analytics events in this range">
      <p>
        posthog-node's <code>captureAi</code> (and PostHog's LLM wrappers built on it) and posthog-python's <code>capture_ai</code> send them to{' '}
        <code>/i/v0/ai/batch/</code>; OpenTelemetry GenAI spans go to <code>/i/v0/ai/otel</code>.
      </p>
    </EmptyState>
  );
}
