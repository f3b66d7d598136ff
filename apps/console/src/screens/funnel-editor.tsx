/**
 * A funnel insight, new (`insights/funnel`) or saved (an insight whose query is a `FunnelsQuery`): the builder
 * beside its result, computed through `query/` shortly after each change (the last result stays on screen
 * meanwhile). Save stores the node in an `InsightVizNode`.
 */
import { useMemo, useState } from 'preact/hooks';
import type { Insight, InsightQueryResponse } from '../api/types';
import { useConsole } from '../context';
import { useLoad } from '../hooks';
import { FunnelBuilder } from '../insights/funnel-builder';
import { defaultFunnelForm, describeFunnel, funnelFormFromNode, funnelProblem, funnelsQuery, type FunnelForm } from '../insights/funnel-form';
import { FunnelResult } from '../insights/funnel-result';
import { QueryInsight } from '../insights/query-insight';
import { loadSuggestions } from '../insights/suggestions';

/** A new funnel (`insights/funnel`). */
export function FunnelEditorScreen() {
  return <FunnelEditor saved={null} />;
}

export function FunnelEditor({ saved }: { saved: Insight | null }) {
  const { client, projectId } = useConsole();
  const [form, setForm] = useState<FunnelForm>(() => (saved && funnelFormFromNode(saved.query)) || defaultFunnelForm());
  const node = useMemo(() => funnelsQuery(form), [form]);
  const suggestions = useLoad((signal) => loadSuggestions(client, projectId, signal), [client, projectId]);
  return (
    <QueryInsight
      saved={saved}
      kind="Funnel"
      node={node}
      problem={funnelProblem(form)}
      describe={describeFunnel(form)}
      builder={(loaded) => <FunnelBuilder form={form} onChange={setForm} suggestions={loaded} />}
      suggestions={suggestions}
      result={(answer: InsightQueryResponse<unknown>, sent) => {
        const sentForm = funnelFormFromNode(sent)!;
        return <FunnelResult result={answer.results} vizType={sentForm.vizType} interval={sentForm.interval} node={sent} />;
      }}
    />
  );
}
