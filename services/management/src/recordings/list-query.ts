/**
 * The recordings listing's query parameters (PostHog's RecordingsQuery, each value JSON text when it parses as
 * JSON) as a listing of the replay store. What Plover cannot filter by (events, actions, properties, console
 * messages) is refused, never ignored: a caller must not take an unfiltered page for a filtered one.
 */
import { SESSION_METRICS, type SessionCondition, type SessionListQuery, type SessionMetric, type SessionPredicate } from '@plover/clickhouse';
import { resolveInstant } from '@plover/insights';
import { errors } from '../shared/errors';
import { Type } from '@sinclair/typebox';
import { Q } from '../http/route-table';
import { Enum, valueValidator, type JsonSchema } from '../shared/schema';

const COMPARISONS = ['gt', 'gte', 'lt', 'lte', 'exact'] as const;
const LEVELS = ['info', 'warn', 'error'] as const;
type Level = (typeof LEVELS)[number];
const LEVEL_COUNTS: Record<Level, SessionMetric> = { info: 'console_log_count', warn: 'console_warn_count', error: 'console_error_count' };
/** PostHog's names of the orders, each a summary field. */
const ORDERS: Record<string, SessionListQuery['orderBy']> = {
  start_time: 'start_time',
  duration: 'duration',
  recording_duration: 'duration',
  ...Object.fromEntries(SESSION_METRICS.map((metric) => [metric, metric])),
};
const UNSUPPORTED = ['events', 'actions', 'properties'] as const;
const DEFAULT_DATE_FROM = '-3d';
const MAX_IDS = 1000;

/** The parameters as the route table declares them (for OpenAPI and the first check: text). */
export const LIST_QUERY = Type.Object({
  date_from: Type.Optional(Type.String({ description: `relative (\`-3d\`, \`-24h\`) or a date; default \`${DEFAULT_DATE_FROM}\`` })),
  date_to: Q.string,
  person_uuid: Q.string,
  distinct_ids: Type.Optional(Type.String({ description: 'JSON list of distinct ids' })),
  session_ids: Type.Optional(Type.String({ description: 'JSON list of session ids (an empty list matches none)' })),
  having_predicates: Type.Optional(Type.String({ description: 'JSON list of `{type: "recording", key, operator, value}` on the summary' })),
  console_log_filters: Type.Optional(Type.String({ description: 'JSON list of `{type: "log_entry", key: "level", operator: "exact"|"is_not", value}`' })),
  operand: Type.Optional(Enum(['AND', 'OR'])),
  order: Type.Optional(Enum(Object.keys(ORDERS))),
  order_direction: Type.Optional(Enum(['ASC', 'DESC'])),
  ...Object.fromEntries(UNSUPPORTED.map((name) => [name, Type.Optional(Type.String({ description: 'only an empty JSON list: not supported' }))])),
});

const idList = (maxLength: number): JsonSchema => ({ type: 'array', maxItems: MAX_IDS, items: { type: 'string', maxLength } });
const level: JsonSchema = { enum: [...LEVELS] };

/** The JSON-valued parameters once decoded. */
const DECODED: JsonSchema = {
  type: 'object',
  properties: {
    date_from: { type: 'string', maxLength: 64 },
    date_to: { type: 'string', maxLength: 64 },
    person_uuid: { type: 'string', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' },
    distinct_ids: idList(400),
    session_ids: idList(200),
    having_predicates: {
      type: 'array',
      maxItems: 50,
      items: {
        type: 'object',
        required: ['key', 'operator', 'value'],
        properties: {
          type: { const: 'recording' },
          key: { enum: Object.keys(ORDERS).filter((key) => key !== 'start_time') },
          operator: { enum: [...COMPARISONS] },
          value: { type: ['number', 'string'], pattern: '^-?[0-9]+(\\.[0-9]+)?$' },
        },
      },
    },
    console_log_filters: {
      type: 'array',
      maxItems: 20,
      items: {
        type: 'object',
        required: ['key', 'operator', 'value'],
        properties: {
          type: { const: 'log_entry' },
          key: { enum: ['level', 'message'] },
          operator: { enum: ['exact', 'is_not'] },
          value: { anyOf: [level, { type: 'array', maxItems: LEVELS.length, items: level }] },
        },
      },
    },
    ...Object.fromEntries(UNSUPPORTED.map((name) => [name, { type: 'array' }])),
  },
};
const checkDecoded = valueValidator(DECODED);

interface Decoded {
  date_from?: string;
  date_to?: string;
  person_uuid?: string;
  distinct_ids?: string[];
  session_ids?: string[];
  having_predicates?: Array<{ key: string; operator: SessionPredicate['operator']; value: number | string }>;
  console_log_filters?: Array<{ key: 'level' | 'message'; operator: 'exact' | 'is_not'; value: Level | Level[] }>;
  events?: unknown[];
  actions?: unknown[];
  properties?: unknown[];
}

/** A parameter as PostHog reads it: its JSON value when the text is JSON, else the text. */
function decode(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A console filter as a condition: sessions with a log entry of one of the levels (or of another level: `is_not`). */
function consoleCondition(filter: NonNullable<Decoded['console_log_filters']>[number], index: number): SessionCondition {
  if (filter.key === 'message') throw errors.validation('Filtering recordings by console message is not supported.', `console_log_filters__${index}__key`);
  const named = new Set(Array.isArray(filter.value) ? filter.value : [filter.value]);
  const levels = LEVELS.filter((level) => named.has(level) === (filter.operator === 'exact'));
  return { any: levels.map((level) => ({ key: LEVEL_COUNTS[level], operator: 'gt', value: 0 })) };
}

export interface ListContext {
  now: Date;
  timezone: string;
  /** The distinct ids of a person by uuid (undefined: no such person). */
  distinctIdsOfPerson(uuid: string): Promise<string[] | undefined>;
}

/**
 * The listing a request asks for (without its page), or null when it can match nothing (an unknown person, no
 * distinct id in common). Throws the 400 of the first parameter that is wrong.
 */
export async function listQuery(query: Readonly<Record<string, unknown>>, context: ListContext): Promise<SessionListQuery | null> {
  const raw = Object.fromEntries(Object.entries(query).map(([name, value]) => [name, typeof value === 'string' ? decode(value) : value]));
  checkDecoded(raw);
  const decoded = raw as Decoded;
  for (const name of UNSUPPORTED) {
    if ((decoded[name]?.length ?? 0) > 0) throw errors.validation(`Filtering recordings by ${name} is not supported.`, name);
  }
  const dates = { now: context.now, timezone: context.timezone };
  const listing: SessionListQuery = { dateFrom: resolveInstant(decoded.date_from ?? DEFAULT_DATE_FROM, dates, false, 'date_from') };
  if (decoded.date_to !== undefined) listing.dateTo = resolveInstant(decoded.date_to, dates, true, 'date_to');

  let distinctIds = decoded.distinct_ids;
  if (decoded.person_uuid !== undefined) {
    const ofPerson = await context.distinctIdsOfPerson(decoded.person_uuid.toLowerCase());
    if (!ofPerson) return null;
    distinctIds = distinctIds === undefined ? ofPerson : ofPerson.filter((id) => distinctIds!.includes(id));
  }
  if (distinctIds !== undefined) {
    if (distinctIds.length === 0) return null;
    listing.distinctIds = distinctIds;
  }
  if (decoded.session_ids !== undefined) listing.sessionIds = decoded.session_ids;

  const conditions: SessionCondition[] = [
    ...(decoded.having_predicates ?? []).map((predicate) => ({
      key: ORDERS[predicate.key] as SessionMetric,
      operator: predicate.operator,
      value: Number(predicate.value),
    })),
    ...(decoded.console_log_filters ?? []).map(consoleCondition),
  ];
  if (conditions.length > 0) listing.condition = query.operand === 'OR' ? { any: conditions } : { all: conditions };
  if (typeof query.order === 'string') listing.orderBy = ORDERS[query.order];
  if (query.order_direction === 'ASC') listing.direction = 'ASC';
  return listing;
}
