import cron, { type ScheduledTask } from 'node-cron';
import type { ClickHouse } from '@plover/clickhouse';
import type { Logger } from '@plover/core';
import type { Sql } from '@plover/postgres';
import { runEventDeletions } from './job';

/** PostHog's CLEAR_CLICKHOUSE_REMOVED_DATA_SCHEDULE_CRON: 05:00 UTC every Sunday. */
export const DEFAULT_DELETION_CRON = '0 5 * * 0';

export interface ScheduleDeps {
  sql: Sql;
  clickhouse: ClickHouse;
  logger: Logger;
}

/**
 * The management service's scheduled jobs, all here. The event deletion job runs on `cron` (UTC); every replica
 * schedules it and the job's advisory lock lets one run. A failing run is logged and retried next time.
 */
export function startSchedules(deps: ScheduleDeps, options: { deletionCron?: string } = {}): { stop(): Promise<void> } {
  const expression = options.deletionCron ?? DEFAULT_DELETION_CRON;
  if (!cron.validate(expression)) throw new Error(`invalid deletion job schedule: ${expression}`);
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
  ];
  return {
    async stop() {
      for (const task of tasks) await task.destroy();
    },
  };
}
