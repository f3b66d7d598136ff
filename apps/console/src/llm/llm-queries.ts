/**
 * The HogQL behind the LLM analytics screen (docs/llm-analytics.md#console): the `$ai_*` events as traces,
 * generations and per-model figures, and a trace's events arranged as the tree their span and parent ids describe.
 * Values (the range, a trace id) are bound `{placeholders}`.
 */
import type { ChartModel } from '../insights/chart-data';

export const LLM_RANGES = [
  { days: 1, label: 'Last 24 hours' },
  { days: 7, label: 'Last 7 days' },
  { days: 30, label: 'Last 30 days' },
] as const;

const AI_EVENTS = `event IN ('$ai_generation', '$ai_span', '$ai_trace', '$ai_embedding')`;
const RANGE = 'timestamp > now() - toIntervalDay({days})';
const number = (property: string) => `toFloat64OrZero(ifNull(properties.${property}, ''))`;

export const TRACES_QUERY = `SELECT properties.$ai_trace_id AS trace_id, min(timestamp) AS started, any(distinct_id) AS person,
  countIf(event = '$ai_generation') AS generations, countIf(event IN ('$ai_span', '$ai_embedding')) AS spans,
  sum(${number('$ai_input_tokens')} + ${number('$ai_output_tokens')}) AS tokens, sum(${number('$ai_total_cost_usd')}) AS cost,
  max(${number('$ai_latency')}) AS latency
FROM events WHERE ${AI_EVENTS} AND ${RANGE} AND properties.$ai_trace_id IS NOT NULL
GROUP BY trace_id ORDER BY started DESC LIMIT 100`;

export const GENERATIONS_QUERY = `SELECT timestamp, properties.$ai_model, properties.$ai_provider, ${number('$ai_input_tokens')}, ${number('$ai_output_tokens')},
  ${number('$ai_latency')}, ${number('$ai_total_cost_usd')}, properties.$ai_trace_id, distinct_id
FROM events WHERE event = '$ai_generation' AND ${RANGE} ORDER BY timestamp DESC LIMIT 100`;

export const MODELS_QUERY = `SELECT toStartOfDay(timestamp) AS day, ifNull(properties.$ai_model, '(no model)') AS model, count() AS generations,
  sum(${number('$ai_total_cost_usd')}) AS cost, sum(${number('$ai_input_tokens')} + ${number('$ai_output_tokens')}) AS tokens,
  avg(${number('$ai_latency')}) AS latency
FROM events WHERE event = '$ai_generation' AND ${RANGE} GROUP BY day, model ORDER BY day, model LIMIT 10000`;

export const TRACE_QUERY = `SELECT toString(uuid), event, timestamp, properties.$ai_span_id, properties.$ai_parent_id,
  coalesce(properties.$ai_span_name, properties.$ai_model, event), properties.$ai_model, ${number('$ai_latency')},
  ${number('$ai_input_tokens')}, ${number('$ai_output_tokens')}, ${number('$ai_total_cost_usd')}
FROM events WHERE ${AI_EVENTS} AND properties.$ai_trace_id = {trace} ORDER BY timestamp LIMIT 1000`;

export type TraceRow = [
  uuid: string,
  event: string,
  timestamp: string,
  spanId: string | null,
  parentId: string | null,
  name: string,
  model: string | null,
  latency: number,
  input: number,
  output: number,
  cost: number,
];

export interface TraceNode {
  row: TraceRow;
  depth: number;
}

/**
 * The trace's events in tree order (each after its parent, children in time order), with their depth. An event's
 * id is its span id (a `$ai_trace` event's is the trace id, as PostHog reads it), else its uuid; its parent is the
 * event whose id is its `$ai_parent_id`. An event whose parent is not in the trace, or that names none, is a root.
 */
export function traceTree(traceId: string, rows: readonly TraceRow[]): TraceNode[] {
  const idOf = (row: TraceRow) => (row[1] === '$ai_trace' ? traceId : row[3] || row[0]);
  const ids = new Set(rows.map(idOf));
  const children = new Map<string | null, TraceRow[]>();
  for (const row of rows) {
    const parent = row[4] && row[4] !== idOf(row) && ids.has(row[4]) ? row[4] : null;
    children.set(parent, [...(children.get(parent) ?? []), row]);
  }
  const out: TraceNode[] = [];
  const seen = new Set<string>();
  const walk = (parent: string | null, depth: number) => {
    for (const row of children.get(parent) ?? []) {
      const id = idOf(row);
      out.push({ row, depth });
      // Two events with one id (a generation and the span that wraps it, both naming it) are listed once below it.
      if (seen.has(id)) continue;
      seen.add(id);
      walk(id, depth + 1);
    }
  };
  walk(null, 0);
  return out;
}

export type ModelRow = [day: string, model: string, generations: number, cost: number, tokens: number, latency: number];

const DAY_MS = 86_400_000;

/**
 * One chart's model of a per-day, per-model figure (`column` of MODELS_QUERY's rows): a series per model, a bucket
 * for each of the range's `span` UTC days up to `today` (0 where a model had no generation).
 */
export function modelChart(rows: readonly ModelRow[], column: 4 | 5, adds: boolean, span: number, today = Date.now()): ChartModel {
  const last = Math.floor(today / DAY_MS) * DAY_MS;
  const days = Array.from({ length: span }, (_, i) => new Date(last - (span - 1 - i) * DAY_MS).toISOString().slice(0, 10));
  const models = [...new Set(rows.map((row) => row[1]))].sort();
  return {
    labels: days,
    series: models.map((model) => {
      const values = days.map((day) => Number(rows.find((row) => row[1] === model && row[0].startsWith(day))?.[column] ?? 0));
      return { label: model, values, total: adds ? values.reduce((sum, value) => sum + value, 0) : null, previous: false };
    }),
  };
}
