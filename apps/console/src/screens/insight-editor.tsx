/**
 * A trend insight, new (`insights/new`) or saved (`insights/<short id>`): the builder beside its result, which
 * is computed again (keeping the last chart on screen) shortly after each change. Save creates or updates the
 * saved insight with the builder's legacy filters; the CSV is the trend endpoint's own `format=csv`.
 */
import { useMemo, useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { Insight, TrendRequest } from '../api/types';
import { Async } from '../components/async';
import { PageHeader } from '../components/page-header';
import { Problem } from '../components/problem';
import { useConsole } from '../context';
import { useDownload } from '../download';
import { useDebounced, useLoad } from '../hooks';
import { Builder } from '../insights/builder';
import { defaultForm, describeForm, formFromFilters, formProblem, trendRequest, type TrendForm } from '../insights/query';
import { TrendResult } from '../insights/result';
import { loadSuggestions } from '../insights/suggestions';
import { projectPath } from '../paths';
import { navigate } from '../router';
import type { ScreenProps } from '../screen-props';
import { insightName } from './insight-list';

const RECOMPUTE_AFTER_MS = 400;

export function InsightEditor({ params }: ScreenProps) {
  const { client, projectId } = useConsole();
  const shortId = params.shortId;
  const insight = useLoad(
    (signal) => (shortId ? client.call(operations.getInsight, { project_id: projectId, id: shortId }, { signal }) : Promise.resolve(null)),
    [client, projectId, shortId],
  );
  return <Async value={insight}>{(saved) => <Editor key={saved?.short_id ?? 'new'} saved={saved} />}</Async>;
}

function Editor({ saved }: { saved: Insight | null }) {
  const { client, projectId } = useConsole();
  const [form, setForm] = useState<TrendForm>(() => (saved ? formFromFilters(saved.filters) : defaultForm()));
  const [name, setName] = useState(saved?.name ?? '');
  const [status, setStatus] = useState<{ saving: boolean; error?: unknown; message?: string }>({ saving: false });
  const request = useMemo(() => trendRequest(form), [form]);
  const problem = formProblem(form);
  // Nothing is asked while the form lacks something (it says what instead).
  const settled = useDebounced(problem === null ? JSON.stringify(request) : null, RECOMPUTE_AFTER_MS);
  // The answer keeps the request it answers: while the next one computes, the chart shown is still this one's.
  const result = useLoad(
    async (signal) => {
      if (settled === null) return null;
      const body = JSON.parse(settled) as TrendRequest;
      return { body, response: await client.call(operations.trend, { project_id: projectId }, { body, signal }) };
    },
    [client, projectId, settled],
    { keep: true },
  );
  const [download, downloadError] = useDownload();
  const suggestions = useLoad((signal) => loadSuggestions(client, projectId, signal), [client, projectId]);

  const save = async (event: Event) => {
    event.preventDefault();
    setStatus({ saving: true });
    const body = { name: name.trim() || describeForm(form), filters: { ...request }, saved: true };
    try {
      if (saved) {
        await client.call(operations.updateInsight, { project_id: projectId, id: saved.id }, { body });
        setStatus({ saving: false, message: 'Saved.' });
      } else {
        const created = await client.call(operations.createInsight, { project_id: projectId }, { body });
        navigate(projectPath(projectId, `insights/${created.short_id}`), { replace: true });
      }
    } catch (error) {
      setStatus({ saving: false, error });
    }
  };

  return (
    <>
      <PageHeader title={saved ? insightName(saved) : 'New insight'} subtitle="Trend">
        <button type="button" class="secondary" onClick={() => download(() => client.csv(operations.trend, { project_id: projectId }, { body: request }))}>
          Download CSV
        </button>
      </PageHeader>
      <form class="save-bar" onSubmit={(event) => void save(event)}>
        <label for="insight-name">Name</label>
        <input id="insight-name" value={name} placeholder={describeForm(form)} onInput={(event) => setName(event.currentTarget.value)} maxLength={400} />
        <button type="submit" disabled={status.saving || problem !== null}>
          {status.saving ? 'Saving…' : saved ? 'Save' : 'Save insight'}
        </button>
        <span role="status" class="muted">
          {status.message}
        </span>
      </form>
      {status.error !== undefined && <Problem error={status.error} />}
      {downloadError !== undefined && <Problem error={downloadError} />}
      <div class="editor">
        <Builder form={form} onChange={setForm} suggestions={suggestions.status === 'ok' ? suggestions.data : { events: [], properties: [], cohorts: [] }} />
        <section class="panel result" aria-labelledby="result-title" aria-busy={result.pending}>
          <h2 id="result-title">Result {result.pending && <span class="muted">· calculating…</span>}</h2>
          {problem ? (
            <p class="form-error" role="alert">
              {problem}
            </p>
          ) : (
            <Async value={result} onRetry={result.reload} label="Calculating…">
              {(answer) => answer && <TrendResult result={answer.response.result} request={answer.body} />}
            </Async>
          )}
        </section>
      </div>
    </>
  );
}
