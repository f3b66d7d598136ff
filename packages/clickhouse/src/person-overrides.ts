/**
 * The `person_overrides` table (migrations/003_person_overrides.sql): which person a merged-away person's events
 * count as now. Ingestion copies every override Postgres writes; queries that count persons resolve an event's
 * person_id through it, as countPersons shows.
 */
import type { ClickHouse } from './port';

export type PersonOverrideRow = {
  team_id: number;
  old_person_id: string;
  override_person_id: string;
  /** Postgres' person_overrides.version: the greatest one is the current mapping. */
  version: number;
};

export async function insertPersonOverrides(ch: ClickHouse, rows: readonly PersonOverrideRow[]): Promise<void> {
  await ch.insert('person_overrides', rows);
}

/**
 * `old_person_id → override_person_id` for project `{projectId:Int64}`, current mappings only: join events on
 * `person_id = old_person_id` and use PERSON_ID_EXPRESSION where a query needs "the person of the event".
 */
export const PERSON_OVERRIDES_SUBQUERY = `SELECT old_person_id, argMax(override_person_id, version) AS override_person_id
  FROM person_overrides WHERE team_id = {projectId:Int64} GROUP BY old_person_id`;

/**
 * The person an event counts as, for events aliased `e` LEFT JOINed to PERSON_OVERRIDES_SUBQUERY aliased `o`:
 * the override when there is one (an unmatched LEFT JOIN gives the zero uuid), else the stored person_id.
 */
export const PERSON_ID_EXPRESSION = `if(o.old_person_id = toUUID('00000000-0000-0000-0000-000000000000'), e.person_id, o.override_person_id)`;

/** How many distinct persons a project's events belong to, a merged person counted once. */
export async function countPersons(ch: ClickHouse, projectId: number): Promise<number> {
  const [row] = await ch.query<{ count: string }>(
    'events.countPersons',
    `SELECT uniqExact(${PERSON_ID_EXPRESSION}) AS count
       FROM (SELECT person_id FROM events FINAL WHERE team_id = {projectId:Int64}) AS e
       LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id`,
    { projectId },
  );
  return Number(row?.count ?? 0);
}
