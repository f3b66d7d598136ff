import type { ApiClient } from '../api/client';
import { operations } from '../api/operations';
import type { Suggestions } from './builder';

const SAMPLE = 500;

/**
 * Event names and property keys seen in the project's latest events, most frequent first, to suggest in the
 * builder's fields. Only a convenience: without `query:read` there are no suggestions.
 */
export async function loadSuggestions(client: ApiClient, projectId: string, signal: AbortSignal): Promise<Suggestions> {
  try {
    const { results } = await client.call(operations.listEvents, { project_id: projectId }, { query: { limit: SAMPLE }, signal });
    return { events: byFrequency(results.map((event) => event.event)), properties: byFrequency(results.flatMap((event) => Object.keys(event.properties))) };
  } catch {
    return { events: [], properties: [] };
  }
}

function byFrequency(values: string[]): string[] {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([value]) => value);
}
