/**
 * Generated hostile HogQL for the tenant-isolation test: queries that try to reach another project's rows, a
 * physical table, a system table, a file or the network, wrapped in subqueries, joins, CTEs that shadow table
 * names, UNIONs, aliases named like physical tables, quoted and unicode names, comments and placeholders
 * whose values are SQL. Deterministic for a seed.
 */
import { random } from './data';

export interface CorpusQuery {
  query: string;
  values: Record<string, unknown>;
  /** True when the query can only be refused (it names something outside the virtual tables). */
  mustRefuse: boolean;
}

const VIRTUAL = ['events', 'persons', 'sessions', 'person_distinct_ids', 'groups', 'session_replay_events', 'logs', '`events`', '"events"'];
const FORBIDDEN = [
  'system.tables',
  'system.processes',
  'system.one',
  'default.events',
  'person_overrides',
  'session_replay_snapshots',
  'logs_local',
  'events_local',
  "file('/etc/passwd')",
  "url('http://127.0.0.1:1/x', CSV)",
  "s3('http://127.0.0.1:1/b/x')",
  "remote('127.0.0.1', system.one)",
  "mysql('127.0.0.1:3306', 'db', 't', 'u', 'p')",
  "executable('x.sh', CSV, 'a String')",
  "input('a String')",
  'numbers(1e12)',
  "dictionary('d')",
];
const WITNESS: Record<string, string> = {
  events: 'distinct_id',
  '`events`': 'distinct_id',
  '"events"': 'distinct_id',
  persons: 'id',
  sessions: 'session_id',
  person_distinct_ids: 'distinct_id',
  groups: 'key',
  session_replay_events: 'session_id',
  logs: 'body',
};
const ALIASES = ['e', 'events', 'person_overrides', 'system', 'default', '`system.tables`', '"ев"', '`t``x`', 'session_replay_snapshots', 'numbers'];
const CONDITIONS = [
  'team_id = 2',
  'team_id = 2 OR 1 = 1',
  'team_id IN (1, 2)',
  '1 = 1 -- team_id = 1',
  '/* team_id = 2 */ 1 = 1',
  'team_id != 1',
  '{p} = {p}',
  "toString(team_id) = '2'",
];
const PLACEHOLDERS: unknown[] = ['2) OR (1=1', "' OR 1=1 --", '`; SELECT * FROM system.tables', 2, "\\' UNION ALL SELECT * FROM events --", '{p}'];
const FUNCTIONS = [
  'file',
  'url',
  'getSetting',
  'currentUser',
  'dictGet',
  'joinGet',
  'hasColumnInTable',
  'currentDatabase',
  'hostName',
  'generateRandom',
  'cluster',
];

export function corpus(count: number, seed: number): CorpusQuery[] {
  const next = random(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  const out: CorpusQuery[] = [];
  for (let i = 0; i < count; i++) {
    const table = pick(VIRTUAL);
    const witness = WITNESS[table]!;
    const alias = pick(ALIASES);
    const condition = pick(CONDITIONS);
    const values = { p: pick(PLACEHOLDERS) };
    const forbidden = pick(FORBIDDEN);
    const shapes: [string, boolean][] = [
      [`SELECT ${witness} FROM ${table} WHERE ${condition}`, false],
      [`SELECT ${alias}.${witness} FROM ${table} AS ${alias} WHERE ${condition}`, false],
      [`SELECT ${witness} FROM (SELECT * FROM ${table} WHERE ${condition}) AS ${alias}`, false],
      [`WITH events AS (SELECT * FROM events WHERE ${condition}) SELECT ${witness} FROM ${table}`, false],
      [`WITH ${witness === 'distinct_id' ? 'x' : 'events'} AS (SELECT 1 AS one) SELECT ${witness} FROM ${table} WHERE ${condition}`, false],
      [`SELECT ${witness} FROM ${table} WHERE ${condition} UNION ALL SELECT ${witness} FROM ${table}`, false],
      [`SELECT a.${witness} FROM ${table} AS a JOIN ${table} AS b ON a.${witness} = b.${witness} WHERE ${condition}`, false],
      [`SELECT ${witness} FROM ${table} WHERE ${witness} IN (SELECT ${witness} FROM ${table} WHERE ${condition})`, false],
      [`SELECT * FROM ${forbidden}`, true],
      [`SELECT ${witness} FROM ${table} AS ${alias} JOIN ${forbidden} AS f ON 1 = 1`, true],
      [`SELECT ${witness} FROM ${table} WHERE ${witness} IN (SELECT * FROM ${forbidden})`, true],
      [`WITH x AS (SELECT * FROM ${forbidden}) SELECT * FROM x`, true],
      [`SELECT ${pick(FUNCTIONS)}('x') FROM ${table}`, true],
      [`SELECT ${witness} FROM ${table} SETTINGS readonly = 0`, true],
      [`SELECT ${witness} FROM ${table}; DROP TABLE events`, true],
      [`SELECT ${witness} FROM ${table} WHERE ${witness} = {p}`, false],
      [`SELECT * FROM (SELECT 1 AS processes) AS system WHERE 1 IN system.processes`, false],
      [`SELECT count() FROM ${table} AS ${alias} WHERE 1 IN ${alias}`, false],
    ];
    const [query, mustRefuse] = pick(shapes);
    out.push({ query: next() < 0.2 ? `/* ${i} */ ${query} -- end` : query, values, mustRefuse });
  }
  return out;
}
