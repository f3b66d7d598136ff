import { ApiError } from '@plover/core';
import { writeDefinitions } from '@plover/flag-store';
import { isUniqueViolation, type Sql, type SqlExecutor } from '@plover/postgres';
import { errors } from './errors';
import { validateCohortFilters, validateFilters, type PropertyReferences } from './flag-filters';

/** The text of a uuid row id (early access features, surveys); anything else names no row. */
export const UUID_TEXT = /^[0-9a-f-]{36}$/i;

/**
 * What the stores of flags, cohorts, early access features and surveys share: every write runs in `write`, one
 * transaction that bumps the project's definitions version decide polls (flag-store's writeDefinitions).
 */
/** What a stored cohort's filters reference (nothing when they no longer pass today's checks). */
function storedReferences(filters: unknown): PropertyReferences {
  try {
    return validateCohortFilters(typeof filters === 'string' ? JSON.parse(filters) : filters);
  } catch {
    return { cohortIds: new Set() };
  }
}

export class DefinitionsStore {
  constructor(protected readonly sql: Sql) {}

  /** A write of the project's definitions; a flag key taken twice is a 400 on `key`. */
  async write<T>(projectId: number, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    try {
      return await writeDefinitions(this.sql, projectId, fn);
    } catch (error) {
      if (isUniqueViolation(error)) throw errors.validation('There is already a feature flag with this key.', 'key', 'unique');
      throw error;
    }
  }

  /** 400 unless every cohort the filters reference exists (and is not `exclude`, the cohort being written). */
  async checkCohortRefs(tx: SqlExecutor, projectId: number, refs: PropertyReferences, exclude?: number): Promise<void> {
    if (refs.cohortIds.size === 0) return;
    const ids = [...refs.cohortIds];
    if (exclude !== undefined && refs.cohortIds.has(exclude)) throw errors.validation('A cohort cannot contain itself.', 'filters');
    const found = await tx.query<{ id: number }>('flags.cohortRefs', 'SELECT id FROM cohorts WHERE project_id = $1 AND id = ANY($2::int[]) AND NOT deleted', [
      projectId,
      ids,
    ]);
    const existing = new Set(found.rows.map((row) => row.id));
    const missing = ids.find((id) => !existing.has(id));
    if (missing !== undefined) throw errors.validation(`Cohort with id ${missing} does not exist.`, 'filters');
    if (exclude !== undefined && (await this.reaches(tx, projectId, ids, exclude))) {
      throw errors.validation('Cohorts cannot reference other cohorts in a loop.', 'filters');
    }
  }

  /** Whether `target` is among the cohorts `from` reference, directly or through other cohorts' stored filters. */
  private async reaches(tx: SqlExecutor, projectId: number, from: number[], target: number): Promise<boolean> {
    const stored = await tx.query<{ id: number; filters: unknown }>(
      'flags.cohortGraph',
      'SELECT id, filters FROM cohorts WHERE project_id = $1 AND NOT deleted AND NOT is_static',
      [projectId],
    );
    const edges = new Map(stored.rows.map((row) => [row.id, [...storedReferences(row.filters).cohortIds]]));
    const seen = new Set<number>();
    const pending = [...from];
    while (pending.length > 0) {
      const id = pending.pop()!;
      if (id === target) return true;
      if (seen.has(id)) continue;
      seen.add(id);
      pending.push(...(edges.get(id) ?? []));
    }
    return false;
  }

  /**
   * 400 `behavioral_cohort_found` when a cohort a flag uses, or a cohort one of them uses (at any depth), has a
   * behavioral criterion: decide evaluates flags from person properties alone, as PostHog refuses them too.
   */
  async refuseBehavioralCohorts(tx: SqlExecutor, projectId: number, refs: PropertyReferences): Promise<void> {
    if (refs.cohortIds.size === 0) return;
    const stored = await tx.query<{ id: number; name: string | null; filters: unknown }>(
      'flags.behavioralCohorts',
      'SELECT id, name, filters FROM cohorts WHERE project_id = $1 AND NOT deleted AND NOT is_static',
      [projectId],
    );
    const cohorts = new Map(stored.rows.map((row) => [row.id, { name: row.name, refs: storedReferences(row.filters) }]));
    const seen = new Set<number>();
    const pending = [...refs.cohortIds];
    while (pending.length > 0) {
      const id = pending.pop()!;
      const cohort = cohorts.get(id);
      if (seen.has(id) || cohort === undefined) continue;
      seen.add(id);
      if (cohort.refs.behavioral) {
        throw errors.validation(`Cohort '${cohort.name ?? ''}' with filters on events cannot be used in feature flags.`, 'filters', 'behavioral_cohort_found');
      }
      pending.push(...cohort.refs.cohortIds);
    }
  }

  /**
   * 400 `behavioral_cohort_found` when, with a cohort's new filters written, a live flag of the project would use
   * a behavioral cohort (directly or through nested cohorts): a cohort in use by a flag cannot become behavioral.
   */
  async refuseBehavioralCohortsInFlags(tx: SqlExecutor, projectId: number): Promise<void> {
    const flags = await tx.query<{ filters: unknown }>('cohorts.flagFilters', 'SELECT filters FROM feature_flags WHERE project_id = $1 AND NOT deleted', [
      projectId,
    ]);
    const used = new Set<number>();
    for (const flag of flags.rows) {
      try {
        for (const id of validateFilters(flag.filters).cohortIds) used.add(id);
      } catch {
        // A flag stored before today's checks: it names no cohort they can read.
      }
    }
    try {
      await this.refuseBehavioralCohorts(tx, projectId, { cohortIds: used });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'behavioral_cohort_found') {
        throw errors.validation('Behavioral filters cannot be added to cohorts used in feature flags.', 'filters', 'behavioral_cohort_found');
      }
      throw error;
    }
  }

  /** A live flag of the project, or undefined. */
  async liveFlag(tx: SqlExecutor, projectId: number, id: number): Promise<number | undefined> {
    const flag = await tx.query<{ id: number }>('eaf.flag', 'SELECT id FROM feature_flags WHERE project_id = $1 AND id = $2 AND NOT deleted', [projectId, id]);
    return flag.rows[0]?.id;
  }

  /** Creates the flag a product needs under `key` (400 on `feature_flag_key` when a live flag has it). */
  async insertFlag(tx: SqlExecutor, projectId: number, key: string, name: string, filters: unknown, userId: number): Promise<number> {
    const existing = await tx.query('flags.keyTaken', 'SELECT 1 FROM feature_flags WHERE project_id = $1 AND key = $2 AND NOT deleted', [projectId, key]);
    if (existing.rowCount > 0) throw errors.validation('There is already a feature flag with this key.', 'feature_flag_key', 'unique');
    const inserted = await tx.query<{ id: number }>(
      'flags.createLinked',
      `INSERT INTO feature_flags (project_id, key, name, filters, created_by_id, last_modified_by_id) VALUES ($1, $2, $3, $4, $5, $5) RETURNING id`,
      [projectId, key, name, JSON.stringify(filters), userId],
    );
    return inserted.rows[0]!.id;
  }
}
