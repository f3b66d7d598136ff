import { Router } from 'express';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Sql } from '@plover/postgres';
import { principalOf, projectOf, requireScope } from '../http/auth';
import { bodyOf } from '../http/body';
import { send } from '../http/render';
import { validateBody } from '../schemas';

interface TimingMetrics {
  reports: Counter;
  timeToSeeData: Histogram;
}

/** Registered once per registry: apps built twice on one registry (tests) share the metrics. */
function timingMetrics(registry: Registry): TimingMetrics {
  return {
    reports:
      (registry.getSingleMetric('plover_insight_timing_reports_total') as Counter | undefined) ??
      new Counter({ name: 'plover_insight_timing_reports_total', help: 'Client timing reports posted to /insights/timing/', registers: [registry] }),
    timeToSeeData:
      (registry.getSingleMetric('plover_insight_time_to_see_data_seconds') as Histogram | undefined) ??
      new Histogram({
        name: 'plover_insight_time_to_see_data_seconds',
        help: 'time_to_see_data_ms of client timing reports',
        buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
        registers: [registry],
      }),
  };
}

/**
 * `POST /insights/timing/` (scope insight:write): the client's "time to see data" report — the insight fields
 * plus any timing keys — stored as sent in `insight_timings` and counted in the registry
 * (`time_to_see_data_ms`, when a number, also observed). Answers 200 `{"success": true}`, a decision recorded in
 * docs/management.md#resources; PostHog answers 201 with an empty body, which its clients ignore.
 */
export function timingRoutes(sql: Sql, registry: Registry): Router {
  const router = Router({ mergeParams: true });
  const metrics = timingMetrics(registry);
  router.post('/insights/timing', async (req, res) => {
    requireScope(req, 'insight:write');
    const body = bodyOf(req);
    validateBody('InsightTiming', body);
    await sql.query('management.recordInsightTiming', 'INSERT INTO insight_timings (project_id, user_id, payload) VALUES ($1, $2, $3)', [
      projectOf(req).id,
      principalOf(req).user.id,
      body,
    ]);
    metrics.reports.inc();
    const ms = body.time_to_see_data_ms;
    if (typeof ms === 'number' && Number.isFinite(ms) && ms >= 0) metrics.timeToSeeData.observe(ms / 1000);
    send(req, res, 200, { success: true }, 'result');
  });
  return router;
}
