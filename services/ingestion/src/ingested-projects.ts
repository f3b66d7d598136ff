import type { Sql } from '@plover/postgres';

/**
 * Sets a project's `ingested_event` once it has ingested an event, as PostHog sets its team's on the first one
 * (the console and the onboarding read it). Each process writes a project's flag at most once; the statement
 * changes nothing for a project already marked, by this process or another.
 */
export class IngestedProjects {
  private readonly marked = new Set<number>();

  constructor(private readonly sql: Sql) {}

  async mark(projectIds: Iterable<number>): Promise<void> {
    const fresh = [...new Set(projectIds)].filter((id) => !this.marked.has(id));
    if (fresh.length === 0) return;
    await this.sql.query('ingestion.markIngestedEvent', 'UPDATE projects SET ingested_event = true WHERE id = ANY($1::bigint[]) AND NOT ingested_event', [
      fresh,
    ]);
    for (const id of fresh) this.marked.add(id);
  }
}
