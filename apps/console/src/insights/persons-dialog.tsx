/**
 * The persons behind one number of a chart — a trend point, a funnel step — listed from the query API's
 * `ActorsQuery` (its `source` names the point), each linking to the person, with "Save as static cohort", which
 * asks `cohorts/` to make a fixed cohort of the same query's persons.
 */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import { runQuery } from '../api/query';
import type { Cohort, QueryNode } from '../api/types';
import { Async } from '../components/async';
import { Dialog } from '../components/dialog';
import { Problem } from '../components/problem';
import { useConsole } from '../context';
import { figure } from '../format';
import { useLoad } from '../hooks';
import { projectPath } from '../paths';
import { Link } from '../router';

/** Persons listed in the dialog; the rest are counted by the saved cohort. */
const LISTED = 100;

/** What a clicked point opens: a title (`Chrome · 3 May`) and the actors source of the point. */
export interface PersonsPoint {
  title: string;
  source: QueryNode;
}

interface ActorPerson {
  id: string;
  name?: string;
  distinct_ids?: string[];
}

interface ActorsAnswer {
  results: [ActorPerson][];
  hasMore: boolean;
  missing_actors_count: number;
}

function PersonsList({ point }: { point: PersonsPoint }) {
  const { client, projectId } = useConsole();
  const persons = useLoad(
    (signal) => runQuery<ActorsAnswer>(client, projectId, { kind: 'ActorsQuery', source: point.source, select: ['person'], limit: LISTED }, signal),
    [client, projectId, point],
  );
  const [saving, setSaving] = useState(false);
  const [saved, setSaved] = useState<Cohort | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const save = async () => {
    setSaving(true);
    setError(undefined);
    try {
      setSaved(
        await client.call(
          operations.createCohort,
          { project_id: projectId },
          { body: { name: `Persons of ${point.title}`, is_static: true, query: point.source } },
        ),
      );
    } catch (failure) {
      setError(failure);
    } finally {
      setSaving(false);
    }
  };
  return (
    <Async value={persons} onRetry={persons.reload} label="Finding the persons…">
      {(answer) => (
        <>
          {answer.results.length === 0 ? (
            <p class="muted">No persons behind this point.</p>
          ) : (
            <ul class="persons-list" aria-label="Persons">
              {answer.results.map(([person]) => (
                <li key={person.id}>
                  <Link href={projectPath(projectId, `persons/${person.id}`)}>{person.name ?? person.distinct_ids?.[0] ?? person.id}</Link>
                </li>
              ))}
            </ul>
          )}
          {answer.hasMore && <p class="muted">The first {figure(LISTED)} persons; the cohort has them all.</p>}
          <div class="dialog-actions">
            {saved ? (
              <p role="status">
                Saved as <Link href={projectPath(projectId, 'feature_flags/cohorts')}>{saved.name}</Link>: {figure(saved.count ?? 0)} persons.
              </p>
            ) : (
              <button type="button" onClick={() => void save()} disabled={saving || answer.results.length === 0}>
                {saving ? 'Saving…' : 'Save as static cohort'}
              </button>
            )}
          </div>
          {error !== undefined && <Problem error={error} />}
        </>
      )}
    </Async>
  );
}

/** The dialog of `point` (closed when null). */
export function PersonsDialog({ point, onClose }: { point: PersonsPoint | null; onClose: () => void }) {
  return (
    <Dialog open={point !== null} title={point ? `Persons · ${point.title}` : 'Persons'} onClose={onClose}>
      {point && <PersonsList point={point} />}
    </Dialog>
  );
}
