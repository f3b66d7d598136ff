/**
 * A trend, stickiness or lifecycle insight, new (`insights/new`) or saved (`insights/<short id>`): the builder beside its result, which
 * is computed again (keeping the last chart on screen) shortly after each change through the legacy trend
 * endpoint. Save creates or updates the saved insight with the builder's query node in an `InsightVizNode` (so
 * dashboards compute it); an older insight saved as legacy filters only opens from those. The CSV is the trend
 * endpoint's own `format=csv`.
 */
import { useMemo, useState } from 'preact/hooks';
import { operations } from '../api/operations';
import { sourceOfKind } from '../api/nodes';
import type { Insight, QueryNode, TrendRequest } from '../api/types';
import { Async } from '../components/async';
import { PageHeader } from '../components/page-header';
import { Problem } from '../components/problem';
import { useConsole } from '../context';
import { useDownload } from '../download';
import { useDebounced, useLoad } from '../hooks';
import { Builder } from '../insights/builder';
import { NO_SUGGESTIONS } from '../insights/fields';
import {
  defaultForm,
  describeForm,
  formFromFilters,
  formFromNode,
  formProblem,
  TREND_KINDS,
  trendQuery,
  trendRequest,
  type TrendForm,
} from '../insights/query';
import { TrendResult } from '../insights/result';
import { SaveBar } from '../insights/save-bar';
import { loadSuggestions } from '../insights/suggestions';
import type { ScreenProps } from '../screen-props';
import { hogqlSource } from '../sql/saved';
import { FunnelEditor } from './funnel-editor';
import { insightName } from './insight-list';
import { PathsEditor } from './paths-editor';
import { RetentionEditor } from './retention-editor';
import { SqlEditor } from './sql-editor';

const RECOMPUTE_AFTER_MS = 400;

export function InsightEditor({ params }: ScreenProps) {
  const { client, projectId } = useConsole();
  const shortId = params.shortId;
  const insight = useLoad(
    (signal) => (shortId ? client.call(operations.getInsight, { project_id: projectId, id: shortId }, { signal }) : Promise.resolve(null)),
    [client, projectId, shortId],
  );
  return <Async value={insight}>{(saved) => <EditorOf key={saved?.short_id ?? 'new'} saved={saved} />}</Async>;
}

/** The editor of the insight's kind: its query node's, else (a trend node, or legacy filters) the trend builder. */
function EditorOf({ saved }: { saved: Insight | null }) {
  if (saved && hogqlSource(saved.query)) return <SqlEditor saved={saved} />;
  if (saved && sourceOfKind(saved.query, 'FunnelsQuery')) return <FunnelEditor saved={saved} />;
  if (saved && sourceOfKind(saved.query, 'RetentionQuery')) return <RetentionEditor saved={saved} />;
  if (saved && sourceOfKind(saved.query, 'PathsQuery')) return <PathsEditor saved={saved} />;
  return <Editor saved={saved} />;
}

function Editor({ saved }: { saved: Insight | null }) {
  const { client, projectId } = useConsole();
  const [form, setForm] = useState<TrendForm>(() => (saved ? (formFromNode(saved.query) ?? formFromFilters(saved.filters)) : defaultForm()));
  const request = useMemo(() => trendRequest(form), [form]);
  const problem = formProblem(form);
  // Nothing is asked while the form lacks something (it says what instead).
  const settled = useDebounced(problem === null ? JSON.stringify({ request, node: trendQuery(form) }) : null, RECOMPUTE_AFTER_MS);
  // The answer keeps the request it answers (and its query node, which the persons of a point are asked by):
  // while the next one computes, the chart shown is still this one's.
  const result = useLoad(
    async (signal) => {
      if (settled === null) return null;
      const { request: body, node } = JSON.parse(settled) as { request: TrendRequest; node: QueryNode };
      return { body, node, response: await client.call(operations.trend, { project_id: projectId }, { body, signal }) };
    },
    [client, projectId, settled],
    { keep: true },
  );
  const [download, downloadError] = useDownload();
  const suggestions = useLoad((signal) => loadSuggestions(client, projectId, signal), [client, projectId]);

  return (
    <>
      <PageHeader title={saved ? insightName(saved) : 'New insight'} subtitle={TREND_KINDS.find((kind) => kind.value === form.insight)!.label}>
        <button type="button" class="secondary" onClick={() => download(() => client.csv(operations.trend, { project_id: projectId }, { body: request }))}>
          Download CSV
        </button>
      </PageHeader>
      <SaveBar
        saved={saved}
        placeholder={describeForm(form)}
        body={() => ({ query: { kind: 'InsightVizNode', source: trendQuery(form) } })}
        disabled={problem !== null}
      />
      {downloadError !== undefined && <Problem error={downloadError} />}
      <div class="editor">
        <Builder form={form} onChange={setForm} suggestions={suggestions.status === 'ok' ? suggestions.data : NO_SUGGESTIONS} />
        <section class="panel result" aria-labelledby="result-title" aria-busy={result.pending}>
          <h2 id="result-title">Result {result.pending && <span class="muted">· calculating…</span>}</h2>
          {problem ? (
            <p class="form-error" role="alert">
              {problem}
            </p>
          ) : (
            <Async value={result} onRetry={result.reload} label="Calculating…">
              {(answer) => answer && <TrendResult result={answer.response.result} request={answer.body} node={answer.node} />}
            </Async>
          )}
        </section>
      </div>
    </>
  );
}
