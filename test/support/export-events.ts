/**
 * Events shaped like a PostHog batch export (the JSON lines its S3 destination writes: `uuid, event, properties,
 * distinct_id, timestamp, team_id, elements_chain, created_at, person_id, set, set_once`), with anonymous
 * visitors who identify ($identify with `$anon_distinct_id` and `$set`), for the CLI's import tests and bench.
 * Deterministic for a seed; timestamps fall on the `days` days before `end`.
 */
import { seededRandom } from './random';

export interface ExportRow {
  uuid: string;
  event: string;
  properties: Record<string, unknown>;
  distinct_id: string;
  timestamp: string;
  team_id: number;
  elements_chain: string;
  created_at: string;
  person_id: string;
  set: Record<string, unknown> | null;
  set_once: Record<string, unknown> | null;
}

function uuidOf(random: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const BROWSERS = ['Chrome', 'Firefox', 'Safari'];
const PAGES = ['/', '/pricing', '/docs', '/blog'];

/** `count` rows: each person browses anonymously, identifies once (setting `email` and `plan`), then buys or not. */
export function exportRows(options: { count: number; seed?: number; days?: number; end?: Date; withUuids?: boolean }): ExportRow[] {
  const random = seededRandom(options.seed ?? 1);
  const days = options.days ?? 7;
  const end = (options.end ?? new Date()).getTime();
  const rows: ExportRow[] = [];
  let person = 0;
  while (rows.length < options.count) {
    person++;
    const anon = `anon-${person}`;
    const user = `user-${person}@example.com`;
    const start = end - Math.floor(random() * days * 86_400_000) - 3_600_000;
    const browser = BROWSERS[person % BROWSERS.length]!;
    const steps = 2 + Math.floor(random() * 6);
    for (let step = 0; step < steps && rows.length < options.count; step++) {
      const identified = step > 0;
      const event = step === 1 ? '$identify' : step === steps - 1 && random() < 0.5 ? 'purchase' : '$pageview';
      const properties: Record<string, unknown> = { $browser: browser, $current_url: `https://example.com${PAGES[step % PAGES.length]}` };
      let set: Record<string, unknown> | null = null;
      if (event === '$identify') {
        properties.$anon_distinct_id = anon;
        set = { email: user, plan: person % 3 === 0 ? 'pro' : 'free' };
      }
      if (event === 'purchase') properties.amount = 10 + (person % 90);
      rows.push({
        uuid: options.withUuids === false ? '' : uuidOf(random),
        event,
        properties,
        distinct_id: identified ? user : anon,
        timestamp: new Date(start + step * 60_000).toISOString(),
        team_id: 99,
        elements_chain: '',
        created_at: new Date(start + step * 60_000 + 1000).toISOString(),
        person_id: '00000000-0000-0000-0000-000000000000',
        set,
        set_once: null,
      });
    }
  }
  return rows;
}

/** The same row as an SDK sends it to `/batch/` (what the import must be equal to). */
export function sdkEvent(row: ExportRow): Record<string, unknown> {
  return {
    ...(row.uuid ? { uuid: row.uuid } : {}),
    event: row.event,
    distinct_id: row.distinct_id,
    timestamp: row.timestamp,
    properties: { ...row.properties, ...(row.set ? { $set: row.set } : {}) },
  };
}
