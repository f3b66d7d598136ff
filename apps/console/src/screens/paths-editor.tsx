/**
 * A paths insight, new (`insights/paths`) or saved (an insight whose query is a `PathsQuery`): the builder beside
 * the Sankey diagram, computed through `query/` shortly after each change.
 */
import { useMemo, useState } from 'preact/hooks';
import type { Insight, PathEdge } from '../api/types';
import { useConsole } from '../context';
import { useLoad } from '../hooks';
import { PathsBuilder } from '../insights/paths-builder';
import { defaultPathsForm, describePaths, pathsFormFromNode, pathsProblem, pathsQuery, type PathsForm } from '../insights/paths-form';
import { PathsResult } from '../insights/paths-result';
import { QueryInsight } from '../insights/query-insight';
import { loadSuggestions } from '../insights/suggestions';

/** A new paths insight (`insights/paths`). */
export function PathsEditorScreen() {
  return <PathsEditor saved={null} />;
}

export function PathsEditor({ saved }: { saved: Insight | null }) {
  const { client, projectId } = useConsole();
  const [form, setForm] = useState<PathsForm>(() => (saved && pathsFormFromNode(saved.query)) || defaultPathsForm());
  const node = useMemo(() => pathsQuery(form), [form]);
  const suggestions = useLoad((signal) => loadSuggestions(client, projectId, signal), [client, projectId]);
  return (
    <QueryInsight
      saved={saved}
      kind="Paths"
      node={node}
      problem={pathsProblem(form)}
      describe={describePaths(form)}
      builder={(loaded) => <PathsBuilder form={form} onChange={setForm} suggestions={loaded} />}
      suggestions={suggestions}
      result={(answer) => <PathsResult edges={answer.results as PathEdge[]} />}
    />
  );
}
