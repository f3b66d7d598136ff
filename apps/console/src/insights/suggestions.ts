import type { ApiClient } from '../api/client';
import { operations } from '../api/operations';
import type { Suggestions } from './fields';

const SAMPLE = 500;

/**
 * Event names and property keys seen in the project's latest events, most frequent first, and the project's
 * cohorts, to offer in the builder's fields. Only a convenience: without `query:read` there are no names, without
 * `cohort:read` no cohorts.
 */
export async function loadSuggestions(client: ApiClient, projectId: string, signal: AbortSignal): Promise<Suggestions> {
  const [events, cohorts] = await Promise.all([
    client.call(operations.listEvents, { project_id: projectId }, { query: { limit: SAMPLE }, signal }).then(
      ({ results }) => results,
      () => [],
    ),
    client.call(operations.listCohorts, { project_id: projectId }, { query: { limit: 1000 }, signal }).then(
      ({ results }) => results,
      () => [],
    ),
  ]);
  return {
    events: byFrequency(events.map((event) => event.event)),
    properties: byFrequency(events.flatMap((event) => Object.keys(event.properties))),
    cohorts,
  };
}

function byFrequency(values: string[]): string[] {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([value]) => value);
}
