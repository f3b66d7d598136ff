/**
 * A retention insight, new (`insights/retention`) or saved (an insight whose query is a `RetentionQuery`): the
 * builder beside the cohort grid, computed through `query/` shortly after each change.
 */
import { useMemo, useState } from 'preact/hooks';
import type { Insight, RetentionRow } from '../api/types';
import { useConsole } from '../context';
import { useLoad } from '../hooks';
import { QueryInsight } from '../insights/query-insight';
import { RetentionBuilder } from '../insights/retention-builder';
import {
  defaultRetentionForm,
  describeRetention,
  retentionFormFromNode,
  retentionProblem,
  retentionQuery,
  type RetentionForm,
} from '../insights/retention-form';
import { RetentionResult } from '../insights/retention-result';
import { loadSuggestions } from '../insights/suggestions';

/** A new retention insight (`insights/retention`). */
export function RetentionEditorScreen() {
  return <RetentionEditor saved={null} />;
}

export function RetentionEditor({ saved }: { saved: Insight | null }) {
  const { client, projectId } = useConsole();
  const [form, setForm] = useState<RetentionForm>(() => (saved && retentionFormFromNode(saved.query)) || defaultRetentionForm());
  const node = useMemo(() => retentionQuery(form), [form]);
  const suggestions = useLoad((signal) => loadSuggestions(client, projectId, signal), [client, projectId]);
  return (
    <QueryInsight
      saved={saved}
      kind="Retention"
      node={node}
      problem={retentionProblem(form)}
      describe={describeRetention(form)}
      builder={(loaded) => <RetentionBuilder form={form} onChange={setForm} suggestions={loaded} />}
      suggestions={suggestions}
      // The builder has no end date: the range always ends now, so the last period is in progress.
      result={(answer, sent) => <RetentionResult rows={answer.results as RetentionRow[]} period={retentionFormFromNode(sent)!.period} endsNow node={sent} />}
    />
  );
}
