/**
 * OpenTelemetry logs storage (migrations/006_logs.sql, docs/logs.md): one row per log record in `logs`, written
 * by the logs consumer. A record stored again (a redelivered message, a retried export) has the same uuid and
 * time, so reads through FINAL see it once.
 */
import type { ClickHouse } from './port';
import { bySize } from './replay';

/** One log record, ready to store. Text fields must already be storable (no NUL, no unpaired surrogate). */
export interface LogRow {
  team_id: number;
  uuid: string;
  /** ISO 8601, UTC, to the microsecond. */
  timestamp: string;
  observed_timestamp: string;
  severity_text: string;
  severity_number: number;
  body: string;
  trace_id: string;
  span_id: string;
  /** JSON objects, as text. */
  attributes: string;
  resource_attributes: string;
  service_name: string;
  session_id: string;
  distinct_id: string;
  /** How long the row is kept, from its UTC day. */
  retention_days: number;
}

const DAY_MS = 86_400_000;

/** Stores the rows, in inserts of a bounded size; each row expires `retention_days` after its UTC day. */
export async function insertLogs(ch: ClickHouse, rows: readonly LogRow[]): Promise<void> {
  const stored = rows.map(({ retention_days, ...row }) => {
    const day = Math.floor(Date.parse(row.timestamp) / DAY_MS) * DAY_MS;
    return { ...row, expires_at: new Date(day + retention_days * DAY_MS).toISOString() };
  });
  for (const chunk of bySize(stored, (row) => row.body.length + row.attributes.length + row.resource_attributes.length)) {
    await ch.insert('logs', chunk);
  }
}
