/** The date range an insight covers, resolved for the project (reads its first event for `date_from: "all"`). */
import type { ClickHouse } from '@plover/clickhouse';
import { resolveRange } from './dates';
import type { InsightContext, Interval, ResolvedRange } from './types';

async function firstEvent(ch: ClickHouse, projectId: number): Promise<Date | null> {
  const [row] = await ch.query<{ first: string; n: string }>(
    'insights.firstEvent',
    'SELECT toString(min(timestamp)) AS first, count() AS n FROM events WHERE team_id = {projectId:Int64}',
    { projectId },
  );
  return row === undefined || Number(row.n) === 0 ? null : new Date(`${row.first.replace(' ', 'T')}Z`);
}

export async function insightRange(
  ch: ClickHouse,
  dates: { dateFrom: string | null; dateTo: string | null },
  interval: Interval,
  ctx: InsightContext,
): Promise<ResolvedRange> {
  const first = dates.dateFrom === 'all' ? await firstEvent(ch, ctx.projectId) : null;
  return resolveRange(dates.dateFrom, dates.dateTo, interval, ctx, first);
}
