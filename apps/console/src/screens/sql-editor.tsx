/**
 * The SQL editor (`insights/sql`, or a saved insight whose query is HogQL): HogQL with syntax colours, checked
 * by HogQLMetadata shortly after each edit (the first problem underlined at its position and described), run on
 * Run or Ctrl/⌘+Enter through `query/`, the rows as a table or as a line or bar chart of chosen columns, the rows
 * as CSV, and saved as an insight holding a `DataVisualizationNode`.
 */
import { useMemo, useState } from 'preact/hooks';
import { checkHogQL, runHogQL } from '../api/query';
import type { Insight } from '../api/types';
import { Async } from '../components/async';
import { Chart } from '../components/chart';
import { CodeInput } from '../components/code-input';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { Segmented } from '../components/segmented';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { saveFile } from '../download';
import { figure } from '../format';
import { useDebounced, useLoad } from '../hooks';
import { SaveBar } from '../insights/save-bar';
import { lineColumn } from '../sql/highlight';
import { cellText, columnsByName, numericColumns, tableChart, toCsv, type QueryTable } from '../sql/results';
import { sqlNode, viewFromNode, type SqlDisplay, type SqlView } from '../sql/saved';
import { insightName } from './insight-list';

const CHECK_AFTER_MS = 300;
/** Rows drawn in the table; the CSV has every row of the answer. */
const SHOWN_ROWS = 500;

const EXAMPLE = `select event, count() as events
from events
where timestamp > now() - interval 7 day
group by event
order by events desc`;

const DISPLAYS: ReadonlyArray<{ value: SqlDisplay; label: string }> = [
  { value: 'table', label: 'Table' },
  { value: 'line', label: 'Line' },
  { value: 'bar', label: 'Bar' },
];

/** A new query (`insights/sql`). */
export function SqlEditorScreen() {
  return <SqlEditor saved={null} />;
}

export function SqlEditor({ saved }: { saved: Insight | null }) {
  const { client, projectId } = useConsole();
  const initial = useMemo(() => (saved && viewFromNode(saved.query)) || { query: EXAMPLE, display: 'table' as const }, [saved]);
  const [text, setText] = useState(initial.query);
  const [display, setDisplay] = useState<SqlDisplay>(initial.display);
  const [columns, setColumns] = useState<Pick<SqlView, 'x' | 'y'>>({ x: initial.x, y: initial.y });
  // A saved query runs when opened; a new one when asked.
  const [run, setRun] = useState<{ query: string } | null>(saved ? { query: initial.query } : null);
  const result = useLoad(
    async (signal) => (run ? { query: run.query, table: await runHogQL(client, projectId, run.query, signal) } : null),
    [client, projectId, run],
    { keep: true },
  );
  const settled = useDebounced(text, CHECK_AFTER_MS);
  const check = useLoad(
    async (signal) => ({ query: settled, metadata: settled.trim() === '' ? null : await checkHogQL(client, projectId, settled, signal) }),
    [client, projectId, settled],
  );
  // The check of the text on screen only: an older one would mark the wrong characters.
  const problem = check.status === 'ok' && check.data.query === text ? (check.data.metadata?.errors[0] ?? null) : null;
  const mark = problem && problem.start !== null ? { start: problem.start, end: problem.end ?? problem.start } : null;
  const table = result.status === 'ok' ? (result.data?.table ?? null) : null;
  // What the chart shows, by name, as the saved insight keeps it.
  const chosen = table && columnsByName(table, columns);
  const chartNames = table && chosen ? { x: table.columns[chosen.x], y: chosen.y.map((index) => table.columns[index]!) } : {};

  return (
    <>
      <PageHeader title={saved ? insightName(saved) : 'SQL'} subtitle="HogQL query">
        <button
          type="button"
          class="secondary"
          disabled={!table}
          onClick={() => table && saveFile(new Blob([toCsv(table)], { type: 'text/csv' }), 'query-results.csv')}
        >
          Download CSV
        </button>
      </PageHeader>
      <SaveBar
        saved={saved}
        placeholder={firstLine(text)}
        body={() => ({ query: sqlNode({ query: text, display, ...chartNames }) })}
        disabled={text.trim() === ''}
      />
      <section class="panel" aria-labelledby="query-title">
        <h2 id="query-title">
          <label for="hogql">Query</label>
        </h2>
        <CodeInput id="hogql" value={text} onInput={setText} onRun={() => setRun({ query: text })} error={mark} describedBy="hogql-problem hogql-help" />
        <div class="row query-actions">
          <button type="button" onClick={() => setRun({ query: text })} disabled={text.trim() === ''}>
            Run
          </button>
          <span id="hogql-help" class="muted">
            Ctrl+Enter (⌘+Enter) runs it. Tables: events, persons, sessions, groups…
          </span>
        </div>
        <p id="hogql-problem" class="form-error" role="alert" hidden={problem === null}>
          {problem && (mark ? `Line ${lineColumn(text, mark.start).line}, column ${lineColumn(text, mark.start).column}: ${problem.message}` : problem.message)}
        </p>
      </section>
      <section class="panel result-panel" aria-labelledby="rows-title" aria-busy={result.pending && run !== null}>
        <div class="panel-heading">
          <h2 id="rows-title">Result {result.pending && run !== null && <span class="muted">· running…</span>}</h2>
          <Segmented name="sql-display" label="Show as" options={DISPLAYS} value={display} onChange={setDisplay} />
        </div>
        <Async value={result} onRetry={result.reload} label="Running…">
          {(answer) =>
            answer === null ? (
              <p class="muted">Run the query to see its rows.</p>
            ) : (
              <QueryResult table={answer.table} display={display} chosen={columnsByName(answer.table, columns)} onColumns={setColumns} />
            )
          }
        </Async>
      </section>
    </>
  );
}

function firstLine(query: string): string {
  return query.trim().split('\n')[0]!.slice(0, 80) || 'SQL query';
}

function QueryResult({
  table,
  display,
  chosen,
  onColumns,
}: {
  table: QueryTable & { hasMore: boolean };
  display: SqlDisplay;
  chosen: { x: number; y: number[] };
  onColumns: (columns: { x: string; y: string[] }) => void;
}) {
  const numeric = useMemo(() => new Set(numericColumns(table)), [table]);
  const model = useMemo(() => tableChart(table, chosen), [table, chosen.x, chosen.y.join()]);
  const count = `${figure(table.results.length)} ${table.results.length === 1 ? 'row' : 'rows'}${table.hasMore ? ' (more rows exist: raise the LIMIT, at most 50,000)' : ''}`;
  if (table.results.length === 0) return <EmptyState title="No rows">The query ran and matched nothing.</EmptyState>;
  const name = (index: number) => table.columns[index]!;
  const setColumns = (x: number, y: number[]) => onColumns({ x: name(x), y: y.filter((index) => index !== x).map(name) });
  return (
    <>
      <p class="muted" role="status">
        {count}
      </p>
      {display === 'table' ? (
        <>
          <DataTable
            caption="Query result"
            rows={table.results.slice(0, SHOWN_ROWS)}
            rowKey={(_, index) => index}
            columns={table.columns.map((column, index) => ({
              label: column,
              numeric: numeric.has(index),
              cell: (row: unknown[]) => cellText(row[index]),
            }))}
          />
          {table.results.length > SHOWN_ROWS && <p class="muted">The first {SHOWN_ROWS} rows are shown; the CSV has them all.</p>}
        </>
      ) : (
        <>
          <div class="row chart-columns">
            <label>
              <span>X axis</span>
              <select value={chosen.x} onChange={(event) => setColumns(Number(event.currentTarget.value), chosen.y)}>
                {table.columns.map((column, index) => (
                  <option key={index} value={index}>
                    {column}
                  </option>
                ))}
              </select>
            </label>
            <fieldset class="plain-fieldset">
              <legend>Series</legend>
              {[...numeric]
                .filter((index) => index !== chosen.x)
                .map((index) => (
                  <label class="checkbox" key={index}>
                    <input
                      type="checkbox"
                      checked={chosen.y.includes(index)}
                      onChange={(event) =>
                        setColumns(chosen.x, event.currentTarget.checked ? [...chosen.y, index].sort((a, b) => a - b) : chosen.y.filter((y) => y !== index))
                      }
                    />
                    <span>{name(index)}</span>
                  </label>
                ))}
              {numeric.size === 0 && <span class="muted">No column holds numbers.</span>}
            </fieldset>
          </div>
          {model.series.length === 0 ? <p class="muted">Choose a column of numbers to draw.</p> : <Chart model={model} kind={display} label="Query result" />}
        </>
      )}
    </>
  );
}
