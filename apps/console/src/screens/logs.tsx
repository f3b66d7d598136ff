/**
 * Logs (docs/logs.md): the project's OpenTelemetry log lines — posthog-js's console capture, posthog-node's
 * `captureLog`, any OTLP exporter — newest first, searched by text, level, session and person through the query
 * API's HogQL `logs` table. The filters are kept in the address.
 */
import { runHogQL } from '../api/query';
import { Async } from '../components/async';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { dateTime } from '../format';
import { useDebounced, useLoad } from '../hooks';
import { LOG_LEVELS, LOG_LIMIT, LOG_RANGES, logsQuery, type LogFilters } from '../logs/logs-query';
import { useSearchParams } from '../search-params';

const TYPE_AFTER_MS = 300;

type LogLine = [timestamp: string, level: string, body: string, service: string, session: string, person: string];

export function Logs() {
  const { client, projectId } = useConsole();
  const [params, setParams] = useSearchParams();
  const filters: LogFilters = {
    text: params.get('text') ?? '',
    level: params.get('level') ?? '',
    session: params.get('session') ?? '',
    person: params.get('person') ?? '',
    hours: Number(params.get('hours') ?? 24) || 24,
  };
  const change = (next: Partial<Record<keyof LogFilters, string>>) => setParams(next);
  const request = useDebounced(JSON.stringify(logsQuery(filters)), TYPE_AFTER_MS);
  const lines = useLoad(
    async (signal) => {
      const { query, values } = JSON.parse(request) as ReturnType<typeof logsQuery>;
      return (await runHogQL(client, projectId, query, signal, values)).results as LogLine[];
    },
    [client, projectId, request],
    { keep: true },
  );
  const filtered = filters.text !== '' || filters.level !== '' || filters.session !== '' || filters.person !== '';

  return (
    <>
      <PageHeader title="Logs" subtitle="Console lines and OpenTelemetry logs, newest first." />
      <section class="panel" aria-label="Filter logs">
        <form class="toolbar wrap" role="search" onSubmit={(event) => event.preventDefault()}>
          <label class="grow">
            <span>Text</span>
            <input value={filters.text} placeholder="Any text" spellcheck={false} onInput={(event) => change({ text: event.currentTarget.value })} />
          </label>
          <label>
            <span>Level</span>
            <select value={filters.level} onChange={(event) => change({ level: event.currentTarget.value })}>
              <option value="">Any level</option>
              {LOG_LEVELS.map((level) => (
                <option key={level} value={level}>
                  {level}
                </option>
              ))}
            </select>
          </label>
          <label>
            <span>Session</span>
            <input value={filters.session} spellcheck={false} onInput={(event) => change({ session: event.currentTarget.value })} />
          </label>
          <label>
            <span>Person (distinct ID)</span>
            <input value={filters.person} spellcheck={false} onInput={(event) => change({ person: event.currentTarget.value })} />
          </label>
          <label>
            <span>Range</span>
            <select value={String(filters.hours)} onChange={(event) => change({ hours: event.currentTarget.value })}>
              {LOG_RANGES.map((range) => (
                <option key={range.hours} value={String(range.hours)}>
                  {range.label}
                </option>
              ))}
            </select>
          </label>
        </form>
      </section>
      <section class="panel" aria-labelledby="logs-title" aria-busy={lines.pending}>
        <h2 id="logs-title">
          {lines.status === 'ok' ? `${lines.data.length === LOG_LIMIT ? `Latest ${LOG_LIMIT}` : lines.data.length} log lines` : 'Log lines'}
        </h2>
        <Async value={lines} onRetry={lines.reload}>
          {(rows) =>
            rows.length === 0 && !filtered ? (
              <EmptyState title="No log lines in this range">
                <p>
                  Turn on console-log capture in Settings (posthog-js sends the browser console), or send OpenTelemetry logs to{' '}
                  <code>/i/v1/logs?token=&lt;project API key&gt;</code>.
                </p>
              </EmptyState>
            ) : (
              <DataTable
                caption="Log lines, newest first"
                rows={rows}
                rowKey={(_row, index) => index}
                empty="No log line matches these filters."
                columns={[
                  { label: 'Time', cell: (row) => dateTime(row[0]) },
                  { label: 'Level', cell: (row) => <span class={`badge level-${row[1] || 'none'}`}>{row[1] || '—'}</span> },
                  { label: 'Message', cell: (row) => <span class="log-body">{row[2]}</span> },
                  { label: 'Service', cell: (row) => row[3] },
                  {
                    label: 'Session',
                    cell: (row) =>
                      row[4] && (
                        <button type="button" class="link-button" title="Only this session" onClick={() => change({ session: row[4] })}>
                          {row[4]}
                        </button>
                      ),
                  },
                  {
                    label: 'Person',
                    cell: (row) =>
                      row[5] && (
                        <button type="button" class="link-button" title="Only this person" onClick={() => change({ person: row[5] })}>
                          {row[5]}
                        </button>
                      ),
                  },
                ]}
              />
            )
          }
        </Async>
      </section>
    </>
  );
}
