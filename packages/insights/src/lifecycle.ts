/**
 * Lifecycle (docs/insights.md, "Lifecycle"): per interval, the persons who were new, returning, resurrecting or
 * (the interval after their last activity) dormant, as PostHog classifies them. One ClickHouse query: per person
 * the sorted list of intervals they were active in, their creation interval, and from those the status pairs.
 */
import { PERSON_ID_EXPRESSION, type ClickHouse } from '@plover/clickhouse';
import { bucketDay, bucketLabel, DAY, formatWall, HOUR, MINUTE, parseWall, step } from './dates';
import type { Params } from './params';
import { propertyText } from './properties';
import { insightRange } from './range';
import { seriesLabel, seriesReference, withActionNames } from './series';
import { query, SeriesQuery } from './trends';
import type { InsightContext, Interval, LifecycleSeriesResult, LifecycleStatus, ResolvedRange, TrendsInput } from './types';

const STATUSES: readonly LifecycleStatus[] = ['new', 'returning', 'resurrecting', 'dormant'];

/**
 * The local interval an instant falls in, as a whole number; consecutive intervals of the local wall clock have
 * consecutive numbers, so "the interval before" is `n - 1`. wallOrdinal is the same number for a bucket start.
 */
function ordinalSql(instant: string, interval: Interval, tz: string): string {
  switch (interval) {
    case 'minute':
      return `intDiv(toInt64(toUnixTimestamp(toDateTime(formatDateTime(${instant}, '%Y-%m-%d %H:%i:00', ${tz}), 'UTC'))), 60)`;
    case 'hour':
      return `intDiv(toInt64(toUnixTimestamp(toDateTime(formatDateTime(${instant}, '%Y-%m-%d %H:00:00', ${tz}), 'UTC'))), 3600)`;
    case 'day':
      return `toInt64(toDate(${instant}, ${tz}))`;
    case 'week':
      return `intDiv(toInt64(toStartOfWeek(${instant}, 0, ${tz})), 7)`;
    case 'month':
      return `(toInt64(toYear(toStartOfMonth(${instant}, ${tz}))) * 12 + toMonth(toStartOfMonth(${instant}, ${tz})) - 1)`;
  }
}

export function wallOrdinal(bucket: string, interval: Interval): number {
  const wall = parseWall(bucket);
  switch (interval) {
    case 'minute':
      return Math.floor(wall / MINUTE);
    case 'hour':
      return Math.floor(wall / HOUR);
    case 'day':
      return Math.floor(wall / DAY);
    case 'week':
      return Math.floor(Math.floor(wall / DAY) / 7);
    case 'month': {
      const date = new Date(wall);
      return date.getUTCFullYear() * 12 + date.getUTCMonth();
    }
  }
}

/**
 * Per person (merged persons resolved), the intervals they were active in from the one before the range through
 * the range's last, and the interval of their `created_at` (the earliest stored with any of their events: a merge
 * keeps the older one). A status per active interval: `new` for the first when it is the creation interval,
 * `returning` when the interval before was active too, else `resurrecting`; and `dormant` for the interval after
 * each run of activity. Events of personless captures (`$process_person_profile: false`) do not count. One row
 * per person, interval (`ordinal`) and `status`, with the person's events of that interval (`uuids`).
 */
export async function lifecycleStatusesSql(input: TrendsInput, range: ResolvedRange, ctx: InsightContext): Promise<{ sql: string; params: Params }> {
  const series = input.series[0]!;
  const q = new SeriesQuery(series, input, ctx, true);
  const personful = `${propertyText('properties', '$process_person_profile', q.params)} != 'false'`;
  const last = range.buckets[range.buckets.length - 1]!;
  const before = formatWall(step(parseWall(range.from), range.interval, -1));
  const end = formatWall(step(parseWall(last), range.interval, 1) - 1000);
  const events = q.sql(
    `${PERSON_ID_EXPRESSION} AS person, ${ordinalSql('e.timestamp', range.interval, q.timezone)} AS ordinal, e.uuid AS uuid`,
    `${await q.where(before, end)} AND ${personful}`,
    '',
  );
  const created = q.sql(
    `${PERSON_ID_EXPRESSION} AS person, min(e.person_created_at) AS created_at`,
    `e.team_id = {projectId:Int64} AND ${personful}`,
    'person',
  );
  const sql = `SELECT person, pair.1 AS ordinal, pair.2 AS status, arrayMap(x -> x.2, arrayFilter(x -> x.1 = pair.1, events)) AS uuids
    FROM (
      SELECT person, events,
        arrayMap((b, i) -> multiIf(i = 1 AND b = created, 'new', i > 1 AND activity[i - 1] = b - 1, 'returning', 'resurrecting'), activity, arrayEnumerate(activity)) AS statuses,
        arrayFilter((b, i) -> i = length(activity) OR activity[i + 1] != b + 1, activity, arrayEnumerate(activity)) AS run_ends,
        arrayConcat(arrayZip(activity, statuses), arrayMap(b -> (b + 1, 'dormant'), run_ends)) AS pairs
      FROM (
        SELECT active.person AS person, active.activity AS activity, active.events AS events, ${ordinalSql('c.created_at', range.interval, q.timezone)} AS created
        FROM (SELECT person, arraySort(groupUniqArray(ordinal)) AS activity, groupArray((ordinal, uuid)) AS events FROM (${events}) GROUP BY person) AS active
        LEFT JOIN (${created}) AS c ON active.person = c.person
      )
    )
    ARRAY JOIN pairs AS pair`;
  return { sql, params: q.params };
}

/** Persons per interval and status, from {@link lifecycleStatusesSql}. */
async function statusCounts(ch: ClickHouse, input: TrendsInput, range: ResolvedRange, ctx: InsightContext): Promise<Map<string, number>> {
  const statuses = await lifecycleStatusesSql(input, range, ctx);
  const rows = await query(
    ch,
    'insights.lifecycle',
    `SELECT ordinal, status, count() AS persons FROM (${statuses.sql}) GROUP BY ordinal, status`,
    statuses.params,
  );
  return new Map(rows.map((row) => [`${String(row.ordinal)} ${String(row.status)}`, Number(row.persons)]));
}

/** Computes a lifecycle: four series (new, returning, resurrecting, dormant), one value per interval, dormant negative. */
export async function runLifecycle(ch: ClickHouse, input: TrendsInput, ctx: InsightContext): Promise<LifecycleSeriesResult[]> {
  const [series] = await withActionNames(input.series.slice(0, 1), ctx);
  if (series === undefined) return [];
  const range = await insightRange(ch, input, input.interval, ctx);
  const counts = await statusCounts(ch, input, range, ctx);
  const name = seriesLabel(series);
  return STATUSES.map((status) => {
    const data = range.buckets.map((bucket) => {
      const persons = counts.get(`${wallOrdinal(bucket, range.interval)} ${status}`) ?? 0;
      return status === 'dormant' ? 0 - persons : persons;
    });
    return {
      data,
      labels: range.buckets.map((bucket) => bucketLabel(bucket, range.interval)),
      days: range.buckets.map((bucket) => bucketDay(bucket, range.interval)),
      count: data.reduce((sum, value) => sum + value, 0),
      label: `${name} - ${status}`,
      status,
      action: { ...seriesReference(series), order: 0, name, custom_name: series.customName, math: 'total' },
    };
  });
}
