/** The one entry point of the series insights: a trend, stickiness or lifecycle request computed by its kind. */
import type { ClickHouse } from '@plover/clickhouse';
import { runLifecycle } from './lifecycle';
import { runStickiness } from './stickiness';
import { runTrends } from './trends';
import type { InsightContext, InsightKind, InsightRequest, InsightSeriesResult, TrendsInput } from './types';

const RUNS: Record<InsightKind, (ch: ClickHouse, input: TrendsInput, ctx: InsightContext) => Promise<InsightSeriesResult[]>> = {
  TRENDS: runTrends,
  STICKINESS: runStickiness,
  LIFECYCLE: runLifecycle,
};

/** Computes the insight a request asks for (`/insights/trend/` and the TrendsQuery, StickinessQuery and LifecycleQuery kinds). */
export function runInsight(ch: ClickHouse, request: InsightRequest, ctx: InsightContext): Promise<InsightSeriesResult[]> {
  return RUNS[request.insight](ch, request.input, ctx);
}
