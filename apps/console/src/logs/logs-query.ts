/**
 * The HogQL behind the Logs screen: a fixed SELECT over the `logs` table with one condition per filter that is
 * set. Every value the person typed goes in as a bound `{placeholder}`, never into the query text.
 */
export interface LogFilters {
  /** Text the body contains, case-insensitively. */
  text: string;
  /** `''` for every level, else a lowercase level (`info`, `warn`, …). */
  level: string;
  session: string;
  /** A distinct id. */
  person: string;
  /** Hours back from now. */
  hours: number;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'fatal'] as const;
export const LOG_RANGES = [
  { hours: 1, label: 'Last hour' },
  { hours: 24, label: 'Last 24 hours' },
  { hours: 24 * 7, label: 'Last 7 days' },
  { hours: 24 * 30, label: 'Last 30 days' },
] as const;
export const LOG_LIMIT = 200;

/** `%`, `_` and `\` match themselves in the body search. */
function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
}

export function logsQuery(filters: LogFilters): { query: string; values: Record<string, unknown> } {
  const conditions = ['timestamp > now() - toIntervalHour({hours})'];
  const values: Record<string, unknown> = { hours: filters.hours };
  if (filters.text.trim() !== '') {
    conditions.push('body ILIKE {text}');
    values.text = likePattern(filters.text.trim());
  }
  if (filters.level !== '') {
    conditions.push('level = {level}');
    values.level = filters.level;
  }
  if (filters.session.trim() !== '') {
    conditions.push('session_id = {session}');
    values.session = filters.session.trim();
  }
  if (filters.person.trim() !== '') {
    conditions.push('distinct_id = {person}');
    values.person = filters.person.trim();
  }
  return {
    query: `SELECT timestamp, level, body, service_name, session_id, distinct_id FROM logs WHERE ${conditions.join(' AND ')} ORDER BY timestamp DESC LIMIT ${LOG_LIMIT}`,
    values,
  };
}
