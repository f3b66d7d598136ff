import { Counter, Histogram, type Registry } from 'prom-client';
import type { ManagementDeps } from '../http/deps';
import { callerOf } from '../http/access';
import { route, type Route } from '../http/route-table';
import { Success } from '../shared/schema';
import { InsightsStore } from './insights-store';
import { InsightTiming } from './schemas';

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
export function timingRoutes({ sql, metrics: registry }: ManagementDeps): Route[] {
  const store = new InsightsStore(sql);
  const metrics = timingMetrics(registry);
  return [
    route({
      method: 'post',
      path: '/insights/timing',
      scope: 'insight:write',
      summary: 'Record a client timing report',
      body: InsightTiming,
      csv: { file: 'result' },
      response: { status: 200, schema: Success },
      async handler(req, { body }) {
        await store.recordTiming(callerOf(req), body);
        metrics.reports.inc();
        const ms = body.time_to_see_data_ms;
        if (typeof ms === 'number' && Number.isFinite(ms) && ms >= 0) metrics.timeToSeeData.observe(ms / 1000);
        return { success: true };
      },
    }),
  ];
}
