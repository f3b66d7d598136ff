import cron, { type ScheduledTask } from 'node-cron';
import type { ClickHouse } from '@plover/clickhouse';
import type { Logger } from '@plover/core';
import type { Sql } from '@plover/postgres';
import { runCohortCalculations } from '../shared/cohort-calculation';
import { runEventDeletions } from './job';

/** PostHog's CLEAR_CLICKHOUSE_REMOVED_DATA_SCHEDULE_CRON: 05:00 UTC every Sunday. */
export const DEFAULT_DELETION_CRON = '0 5 * * 0';
/** Due dynamic cohorts are recalculated every 5 minutes (each at most every 15: CALCULATION_MAX_AGE_MINUTES). */
export const DEFAULT_COHORT_CRON = '*/5 * * * *';

export interface ScheduleDeps {
  sql: Sql;
  clickhouse: ClickHouse;
  logger: Logger;
}

/**
 * The management service's scheduled jobs, all here, on cron expressions (UTC). The event deletion job: every
 * replica schedules it and the job's advisory lock lets one run. The cohort calculations: each cohort is claimed
 * by one calculation at a time (docs/cohorts.md). A failing run is logged and retried next time.
 */
export function startSchedules(deps: ScheduleDeps, options: { deletionCron?: string; cohortCron?: string } = {}): { stop(): Promise<void> } {
  const expression = options.deletionCron ?? DEFAULT_DELETION_CRON;
  if (!cron.validate(expression)) throw new Error(`invalid deletion job schedule: ${expression}`);
  const cohortExpression = options.cohortCron ?? DEFAULT_COHORT_CRON;
  if (!cron.validate(cohortExpression)) throw new Error(`invalid cohort calculation schedule: ${cohortExpression}`);
  const tasks: ScheduledTask[] = [
    cron.schedule(
      expression,
      async () => {
        try {
          await runEventDeletions(deps);
        } catch (error) {
          deps.logger.error({ err: error }, 'event deletion job failed');
        }
      },
      { timezone: 'UTC', name: 'event-deletions', noOverlap: true },
    ),
    cron.schedule(
      cohortExpression,
      async () => {
        try {
          await runCohortCalculations(deps);
        } catch (error) {
          deps.logger.error({ err: error }, 'cohort calculation run failed');
        }
      },
      { timezone: 'UTC', name: 'cohort-calculations', noOverlap: true },
    ),
  ];
  return {
    async stop() {
      for (const task of tasks) await task.destroy();
    },
  };
}
