import type { ClickHouse, ClickHouseParams } from '@plover/clickhouse';
import { errors } from '../shared/errors';

export const SHOWN = 'survey shown';
export const DISMISSED = 'survey dismissed';
export const SENT = 'survey sent';

export interface EventStats {
  total_count: number;
  unique_persons: number;
  first_seen: string | null;
  last_seen: string | null;
  unique_persons_only_seen: number;
  total_count_only_seen: number;
}

export interface SurveyRates {
  response_rate: number;
  dismissal_rate: number;
  unique_users_response_rate: number;
  unique_users_dismissal_rate: number;
}

export type SurveyStats = Record<typeof SHOWN | typeof DISMISSED | typeof SENT, EventStats>;

/** What the counts read: surveys, a time window and the responses to leave out. */
export interface SurveyScope {
  projectId: number;
  surveyIds: readonly string[];
  from: Date | null;
  to: Date | null;
  /** `survey sent` uuids left out (archived responses, with `exclude_archived`). */
  excluded: readonly string[];
}

const DATE_WITH_ZONE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}(:?\d{2})?)$/i;
const BAD_DATE = 'Invalid date format. Please use ISO 8601 format with timezone info (e.g. 2024-01-01T00:00:00Z or 2024-01-01T00:00:00+00:00)';

/** `date_from` / `date_to`: ISO 8601 with a time zone, else 400; `date_from` after `date_to` is 400 too. */
export function parseRange(dateFrom: string | undefined, dateTo: string | undefined): { from: Date | null; to: Date | null } {
  const parse = (text: string | undefined): Date | null => {
    if (text === undefined) return null;
    const ms = DATE_WITH_ZONE.test(text) ? Date.parse(text.replace(' ', 'T')) : NaN;
    if (Number.isNaN(ms)) throw errors.validation(BAD_DATE);
    return new Date(ms);
  };
  const from = parse(dateFrom);
  const to = parse(dateTo);
  if (from && to && from > to) throw errors.validation('date_from must be before date_to');
  return { from, to };
}

/** The later (`later`) or earlier of two optional instants. */
export function bound(a: Date | null, b: Date | null, later: boolean): Date | null {
  if (!a || !b) return a ?? b;
  return a > b === later ? a : b;
}

/** A Date as ClickHouse's DateTime64(6, 'UTC') text. */
const chTime = (date: Date): string => date.toISOString().replace('T', ' ').replace('Z', '000');

/** PostHog's timestamp text: ISO 8601 in UTC with `Z`, microseconds only when there are any. */
export function isoZ(text: string | null): string | null {
  if (text === null) return null;
  const [whole, fraction = ''] = text.split('.');
  const micros = fraction.padEnd(6, '0').slice(0, 6);
  return `${whole!.replace(' ', 'T')}${/^0+$/.test(micros) ? '' : `.${micros}`}Z`;
}

/** The submission a `survey sent` event belongs to: its `$survey_submission_id`, else the event itself. */
export const SUBMISSION_KEY =
  "if(JSONExtractString(properties, '$survey_submission_id') = '', toString(uuid), JSONExtractString(properties, '$survey_submission_id'))";

/** The window's conditions on `timestamp` (its bounds bound into `params`). */
export function timeConditions(scope: SurveyScope, params: ClickHouseParams): string {
  let sql = '';
  if (scope.from) {
    params.from = chTime(scope.from);
    sql += " AND timestamp >= {from:DateTime64(6, 'UTC')}";
  }
  if (scope.to) {
    params.to = chTime(scope.to);
    sql += " AND timestamp <= {to:DateTime64(6, 'UTC')}";
  }
  return sql;
}

/**
 * The conditions every count shares: the project, the surveys, the window, the excluded responses, and no
 * `survey dismissed` that a partial submission emitted (`$survey_partially_completed` true).
 */
function sharedConditions(scope: SurveyScope, params: ClickHouseParams): string {
  params.projectId = scope.projectId;
  params.surveyIds = [...scope.surveyIds];
  params.excluded = [...scope.excluded];
  return `team_id = {projectId:Int64}
      AND JSONExtractString(properties, '$survey_id') IN {surveyIds:Array(String)}${timeConditions(scope, params)}
      AND uuid NOT IN {excluded:Array(UUID)}
      AND (event != '${DISMISSED}' OR JSONExtractRaw(properties, '$survey_partially_completed') NOT IN ('true', '"true"'))`;
}

/**
 * The latest `survey sent` of each submission in the window (of any survey: a submission id names one survey),
 * as PostHog picks it: the argMax of uuid by timestamp.
 */
function latestSubmissions(params: ClickHouseParams, scope: SurveyScope): string {
  return `SELECT argMax(uuid, timestamp) FROM events FINAL
      WHERE team_id = {projectId:Int64} AND event = '${SENT}'${timeConditions(scope, params)}
      GROUP BY ${SUBMISSION_KEY}`;
}

const emptyStats = (): EventStats => ({
  total_count: 0,
  unique_persons: 0,
  first_seen: null,
  last_seen: null,
  unique_persons_only_seen: 0,
  total_count_only_seen: 0,
});

const rate = (part: number, whole: number): number => Math.round((part / whole) * 100 * 100) / 100;

export function ratesOf(stats: SurveyStats | null): SurveyRates {
  const shown = stats?.[SHOWN];
  if (!stats || !shown || shown.total_count === 0) {
    return { response_rate: 0, dismissal_rate: 0, unique_users_response_rate: 0, unique_users_dismissal_rate: 0 };
  }
  return {
    response_rate: rate(stats[SENT].total_count, shown.total_count),
    dismissal_rate: rate(stats[DISMISSED].total_count, shown.total_count),
    unique_users_response_rate: rate(stats[SENT].unique_persons, shown.unique_persons),
    unique_users_dismissal_rate: rate(stats[DISMISSED].unique_persons, shown.unique_persons),
  };
}

/**
 * Shown, dismissed and sent counts of the scope (PostHog's survey stats): totals, distinct `person_id` as stored
 * on the events, first and last seen; `survey sent` counted once per submission (its latest event); dismissed
 * persons less those who also sent; "only seen" = shown − dismissed − sent, floored at 0.
 */
export async function surveyStats(clickhouse: ClickHouse, scope: SurveyScope): Promise<SurveyStats> {
  const params: ClickHouseParams = {};
  const where = sharedConditions(scope, params);
  const [perEvent, both] = await Promise.all([
    clickhouse.query<{ event: string; total: string; persons: string; first: string; last: string }>(
      'management.surveyStats',
      `SELECT event, count() AS total, uniqExact(person_id) AS persons, toString(min(timestamp)) AS first, toString(max(timestamp)) AS last
        FROM events FINAL
        WHERE event IN ('${SHOWN}', '${DISMISSED}', '${SENT}') AND ${where}
          AND (event != '${SENT}' OR uuid IN (${latestSubmissions(params, scope)}))
        GROUP BY event`,
      params,
    ),
    clickhouse.query<{ n: string }>(
      'management.surveyDismissedAndSent',
      `SELECT count() AS n FROM (
         SELECT person_id FROM events FINAL
          WHERE event IN ('${DISMISSED}', '${SENT}') AND ${where}
          GROUP BY person_id
         HAVING countIf(event = '${DISMISSED}') > 0 AND countIf(event = '${SENT}') > 0)`,
      params,
    ),
  ]);
  const stats: SurveyStats = { [SHOWN]: emptyStats(), [DISMISSED]: emptyStats(), [SENT]: emptyStats() };
  for (const row of perEvent) {
    if (!(row.event in stats)) continue;
    stats[row.event as keyof SurveyStats] = {
      ...emptyStats(),
      total_count: Number(row.total),
      unique_persons: Number(row.persons),
      first_seen: isoZ(row.first),
      last_seen: isoZ(row.last),
    };
  }
  const dismissed = stats[DISMISSED];
  dismissed.unique_persons = Math.max(0, dismissed.unique_persons - Number(both[0]?.n ?? 0));
  const shown = stats[SHOWN];
  shown.unique_persons_only_seen = Math.max(0, shown.unique_persons - dismissed.unique_persons - stats[SENT].unique_persons);
  shown.total_count_only_seen = Math.max(0, shown.total_count - dismissed.total_count - stats[SENT].total_count);
  return stats;
}

/** Submissions (latest `survey sent` per submission) per survey in the scope. */
export async function responseCounts(clickhouse: ClickHouse, scope: SurveyScope): Promise<Record<string, number>> {
  const params: ClickHouseParams = {};
  const where = sharedConditions(scope, params);
  const rows = await clickhouse.query<{ survey: string; n: string }>(
    'management.surveyResponseCounts',
    `SELECT JSONExtractString(properties, '$survey_id') AS survey, count() AS n FROM events FINAL
      WHERE event = '${SENT}' AND ${where} AND uuid IN (${latestSubmissions(params, scope)})
      GROUP BY survey ORDER BY survey`,
    params,
  );
  return Object.fromEntries(rows.map((row) => [row.survey, Number(row.n)]));
}
