/**
 * The points limit of every computed insight, wherever it is asked for: the legacy routes (`/insights/trend/`,
 * `/insights/funnel/`, `/insights/retention/`) and the query kinds (`/query/`, and the saved queries insights and
 * dashboards show). Each check runs before any statement does and refuses, with a 400 naming the figures, a
 * computation whose answer would exceed `ANALYSIS_MAX_POINTS` (the answer of one request must fit its memory).
 */
import { checkPoints } from '@plover/clickhouse';
import type { QueryLimits } from '@plover/config';
import type { FunnelInput, InsightKind, ResolvedRange, RetentionInput, TrendsInput } from '@plover/insights';

/** Values a breakdown answers with: the `breakdown_limit` shown and "other". */
const breakdownValues = (breakdown: { limit: number } | null): number => (breakdown === null ? 1 : breakdown.limit + 1);

/** A line per series (two when compared with the previous period; lifecycle's four statuses each) per breakdown value per interval. */
export function checkTrendPoints(limits: QueryLimits, insight: InsightKind, input: TrendsInput, range: ResolvedRange): void {
  const lines = input.series.length * (input.compare ? 2 : 1) * (insight === 'LIFECYCLE' ? 4 : 1);
  checkPoints(limits, lines, breakdownValues(input.breakdown), range.buckets.length);
}

/** A step per breakdown value, per interval when shown as trends. */
export function checkFunnelPoints(limits: QueryLimits, input: FunnelInput, range: ResolvedRange): void {
  checkPoints(limits, input.steps.length, breakdownValues(input.breakdown), input.vizType === 'trends' ? range.buckets.length : 1);
}

/** A cohort per bucket, per breakdown value, per interval counted. */
export function checkRetentionPoints(limits: QueryLimits, input: RetentionInput, range: ResolvedRange): void {
  checkPoints(limits, range.buckets.length, breakdownValues(input.breakdown), input.totalIntervals);
}
