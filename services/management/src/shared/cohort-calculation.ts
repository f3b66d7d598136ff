import type { ClickHouse } from '@plover/clickhouse';
import type { Logger } from '@plover/core';
import { behavioralPersons, parseBehavioral } from '@plover/insights';
import { PersonReads } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { CohortConditions, invalidCohort } from './cohort-conditions';
import { insightContext } from './insight-context';

export interface CalculationDeps {
  sql: Sql;
  clickhouse: ClickHouse;
  logger: Logger;
}

export interface CalculationOptions {
  /** The instant the windows end at (now by default). */
  now?: Date;
  /** Start even when another calculation of the cohort seems to be running (an explicit request does). */
  force?: boolean;
}

export type CalculationResult =
  | { status: 'done'; version: number; count: number }
  /** Not calculated: static, deleted, unknown, or (without `force`) already being calculated. */
  | { status: 'skipped' }
  /** A newer calculation started meanwhile; this one's members were dropped. */
  | { status: 'superseded' }
  | { status: 'failed'; error: string };

/** A calculation older than this is taken for dead (its process killed) and may be replaced. */
export const STALE_CALCULATION_MINUTES = 60;

interface Claimed {
  project_id: number;
  filters: { properties?: unknown } | null;
  pending_version: number;
  timezone: string;
}

/**
 * Calculates a dynamic cohort's members and publishes them (docs/cohorts.md): claims a new version (marking the
 * cohort `is_calculating`), evaluates its behavioral criteria in ClickHouse and the whole definition over the
 * persons in Postgres, stores the members under the new version, then in one transaction makes that version the
 * one readers see and drops every other. Until then readers keep the previous members; a process killed on the
 * way leaves only unpublished rows, which the next calculation removes. Errors are recorded on the cohort
 * (`errors_calculating`, `last_error`), never thrown.
 */
export async function calculateCohort(deps: CalculationDeps, cohortId: number, options: CalculationOptions = {}): Promise<CalculationResult> {
  const claimed = (
    await deps.sql.query<Claimed>(
      'cohorts.claimCalculation',
      `UPDATE cohorts c SET is_calculating = true, calculation_started_at = now(), pending_version = GREATEST(c.pending_version, c.people_version) + 1
         FROM projects p
        WHERE c.id = $1 AND p.id = c.project_id AND NOT c.is_static AND NOT c.deleted
          AND ($2 OR NOT c.is_calculating OR c.calculation_started_at < now() - make_interval(mins => $3))
        RETURNING c.project_id, c.filters, c.pending_version, p.timezone`,
      [cohortId, options.force === true, STALE_CALCULATION_MINUTES],
    )
  ).rows[0];
  if (!claimed) return { status: 'skipped' };
  const version = claimed.pending_version;
  try {
    const root = claimed.filters?.properties;
    if (root === undefined || root === null) throw invalidCohort('Cohort has no conditions.');
    const ctx = { ...insightContext(deps.sql, { id: claimed.project_id, timezone: claimed.timezone }), ...(options.now ? { now: options.now } : {}) };
    const conditions = new CohortConditions(deps.sql, claimed.project_id, async (filter, attr) => ({
      uuids: await behavioralPersons(deps.clickhouse, ctx, parseBehavioral(filter, ctx, attr), attr),
    }));
    const condition = await conditions.definition(cohortId, root);
    const count = await new PersonReads(deps.sql).storeCohortVersion(claimed.project_id, condition, cohortId, version);
    const published = await deps.sql.transaction(async (tx) => {
      const swapped = await tx.query(
        'cohorts.publishVersion',
        `UPDATE cohorts SET people_version = $2, is_calculating = false, last_calculation = now(), errors_calculating = 0, last_error = NULL
          WHERE id = $1 AND pending_version = $2`,
        [cohortId, version],
      );
      if (swapped.rowCount === 0) {
        await tx.query('cohorts.dropVersion', 'DELETE FROM cohort_people WHERE cohort_id = $1 AND version = $2', [cohortId, version]);
        return false;
      }
      await tx.query('cohorts.dropOtherVersions', 'DELETE FROM cohort_people WHERE cohort_id = $1 AND version <> $2', [cohortId, version]);
      return true;
    });
    return published ? { status: 'done', version, count } : { status: 'superseded' };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    deps.logger.warn({ err: error, cohortId }, 'cohort calculation failed');
    await deps.sql.query(
      'cohorts.calculationFailed',
      `UPDATE cohorts SET is_calculating = false, errors_calculating = errors_calculating + 1, last_error_at = now(), last_error = $3
        WHERE id = $1 AND pending_version = $2`,
      [cohortId, version, message.slice(0, 1000)],
    );
    await deps.sql.query('cohorts.dropVersion', 'DELETE FROM cohort_people WHERE cohort_id = $1 AND version = $2', [cohortId, version]);
    return { status: 'failed', error: message };
  }
}

/** PostHog's MAX_AGE_MINUTES: a cohort calculated more recently than this is not due. */
export const CALCULATION_MAX_AGE_MINUTES = 15;
/** Cohorts calculated per scheduled run, the least recently calculated first. */
export const CALCULATIONS_PER_RUN = 20;
/** After this many failures in a row a cohort is no longer calculated on schedule (a write of its filters resets it). */
export const MAX_CALCULATION_ERRORS = 20;

/**
 * The scheduled run: every dynamic, live cohort due — never calculated, or last calculated more than 15 minutes
 * ago — and not being calculated (or whose calculation is stale), failing ones backing off 30 minutes × 2^errors;
 * one after the other. Running it again at once finds nothing due: the job is idempotent.
 */
export async function runCohortCalculations(deps: CalculationDeps, options: { now?: Date } = {}): Promise<CalculationResult[]> {
  const due = await deps.sql.query<{ id: number }>(
    'cohorts.dueCalculations',
    `SELECT id FROM cohorts
      WHERE NOT is_static AND NOT deleted AND errors_calculating <= $1
        AND (last_calculation IS NULL OR last_calculation < now() - make_interval(mins => $2))
        AND (NOT is_calculating OR calculation_started_at < now() - make_interval(mins => $3))
        AND (errors_calculating = 0 OR last_error_at < now() - make_interval(mins => 30 * power(2, LEAST(errors_calculating, 10))::int))
      ORDER BY last_calculation NULLS FIRST, id LIMIT $4`,
    [MAX_CALCULATION_ERRORS, CALCULATION_MAX_AGE_MINUTES, STALE_CALCULATION_MINUTES, CALCULATIONS_PER_RUN],
  );
  const results: CalculationResult[] = [];
  for (const { id } of due.rows) results.push(await calculateCohort(deps, id, options));
  return results;
}
