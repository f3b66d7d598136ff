/**
 * The frame of an insight edited as a query node (funnels, retention): the header, the save bar, the builder
 * beside the result, which is computed through `query/` 400 ms after the last change while the previous result
 * stays on screen. Saving stores the node in an `InsightVizNode`, as PostHog does.
 */
import type { ComponentChildren } from 'preact';
import { runQuery } from '../api/query';
import type { Insight, InsightQueryResponse, QueryNode } from '../api/types';
import { Async } from '../components/async';
import { PageHeader } from '../components/page-header';
import { useConsole } from '../context';
import { useDebounced, useLoad, type Loaded } from '../hooks';
import { insightName } from '../screens/insight-list';
import { NO_SUGGESTIONS, type Suggestions } from './fields';
import { SaveBar } from './save-bar';

export const RECOMPUTE_AFTER_MS = 400;

export function QueryInsight({
  saved,
  kind,
  node,
  problem,
  describe,
  builder,
  suggestions,
  result,
}: {
  saved: Insight | null;
  /** What the insight is, under its title: `Funnel`, `Retention`. */
  kind: string;
  node: QueryNode;
  /** What the form lacks (then nothing is asked), or null. */
  problem: string | null;
  /** The name of an unnamed insight. */
  describe: string;
  builder: (suggestions: Suggestions) => ComponentChildren;
  suggestions: Loaded<Suggestions>;
  /** The answer drawn, with the node it answers (not the form's newer one). */
  result: (answer: InsightQueryResponse<unknown>, sent: QueryNode) => ComponentChildren;
}) {
  const { client, projectId } = useConsole();
  const settled = useDebounced(problem === null ? JSON.stringify(node) : null, RECOMPUTE_AFTER_MS);
  const answer = useLoad(
    async (signal) => {
      if (settled === null) return null;
      const sent = JSON.parse(settled) as QueryNode;
      return { sent, response: await runQuery<InsightQueryResponse<unknown>>(client, projectId, sent, signal) };
    },
    [client, projectId, settled],
    { keep: true },
  );
  return (
    <>
      <PageHeader title={saved ? insightName(saved) : `New ${kind.toLowerCase()}`} subtitle={kind} />
      <SaveBar saved={saved} placeholder={describe} body={() => ({ query: { kind: 'InsightVizNode', source: node } })} disabled={problem !== null} />
      <div class="editor">
        {builder(suggestions.status === 'ok' ? suggestions.data : NO_SUGGESTIONS)}
        <section class="panel result" aria-labelledby="result-title" aria-busy={answer.pending}>
          <h2 id="result-title">Result {answer.pending && <span class="muted">· calculating…</span>}</h2>
          {problem ? (
            <p class="form-error" role="alert">
              {problem}
            </p>
          ) : (
            <Async value={answer} onRetry={answer.reload} label="Calculating…">
              {(loaded) => loaded && result(loaded.response, loaded.sent)}
            </Async>
          )}
        </section>
      </div>
    </>
  );
}
