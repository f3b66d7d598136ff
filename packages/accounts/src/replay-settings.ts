/**
 * A project's session replay settings (PostHog's `Team` fields of the same names): what decide's remote config
 * tells posthog-js's recorder, and how long recordings are kept; with them its logs settings, which turn
 * posthog-js's console-log capture on (docs/logs.md#browser-console-capture). The management API validates a change with
 * `sessionReplaySettingsSchema` and writes it with `updateSessionReplaySettings`; decide reads them with
 * `readSessionReplaySettings`. docs/decide.md#session-recording says how each one reaches the SDK.
 */
import { ApiError } from '@plover/core';
import type { SqlExecutor } from '@plover/postgres';

export interface UrlPattern {
  /** A regular expression the SDK matches against the page URL. */
  url: string;
  matching: 'regex';
}

export interface SessionReplaySettings {
  session_recording_opt_in: boolean;
  /** 0 to 1; null records every session. */
  session_recording_sample_rate: number | null;
  /** 0 to 30,000; null sends every session whatever its length. */
  session_recording_minimum_duration_milliseconds: number | null;
  /** Record only while this flag (or this variant of it) is on for the user. */
  session_recording_linked_flag: { id: number; key: string; variant?: string | null } | null;
  session_recording_network_payload_capture_config: { recordHeaders?: boolean; recordBody?: boolean } | null;
  session_recording_masking_config: { maskAllInputs?: boolean; maskTextSelector?: string | null; blockSelector?: string | null } | null;
  session_recording_url_trigger_config: UrlPattern[];
  session_recording_url_blocklist_config: UrlPattern[];
  /** Event names that start recording. */
  session_recording_event_trigger_config: string[];
  /** How the triggers combine; null leaves it to the SDK (all). */
  session_recording_trigger_match_type_config: 'any' | 'all' | null;
  session_replay_config: { record_canvas?: boolean } | null;
  capture_console_log_opt_in: boolean;
  capture_performance_opt_in: boolean;
  session_recording_retention_period: '30d' | '90d' | '1y' | '5y';
  /** `capture_console_logs`: posthog-js sends the browser console to `/i/v1/logs`; null is every setting off. */
  logs_settings: { capture_console_logs?: boolean } | null;
}

/** A change: any subset of the settings. */
export type SessionReplaySettingsPatch = Partial<SessionReplaySettings>;

const MAX_PATTERNS = 100;
const MAX_TEXT = 1_000;
/** A flag key's bound in the feature flags table. */
const MAX_FLAG_KEY = 400;

const urlPatterns = {
  type: 'array',
  maxItems: MAX_PATTERNS,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'matching'],
    properties: { url: { type: 'string', minLength: 1, maxLength: MAX_TEXT }, matching: { type: 'string', const: 'regex' } },
  },
} as const;

const nullableText = { type: ['string', 'null'], maxLength: MAX_TEXT } as const;

/**
 * The JSON schema of a change (PATCH body fields), one property per setting with its bounds. The URL patterns'
 * regular expressions are compiled by `updateSessionReplaySettings`, which a schema cannot do.
 */
export const sessionReplaySettingsSchema = {
  $id: 'https://plover.dev/schemas/accounts/session-replay-settings.json',
  type: 'object',
  additionalProperties: false,
  properties: {
    session_recording_opt_in: { type: 'boolean' },
    session_recording_sample_rate: { type: ['number', 'null'], minimum: 0, maximum: 1 },
    session_recording_minimum_duration_milliseconds: { type: ['integer', 'null'], minimum: 0, maximum: 30_000 },
    session_recording_linked_flag: {
      type: ['object', 'null'],
      additionalProperties: false,
      required: ['id', 'key'],
      properties: {
        id: { type: 'integer', minimum: 1, maximum: 2_147_483_647 },
        key: { type: 'string', minLength: 1, maxLength: MAX_FLAG_KEY },
        variant: { type: ['string', 'null'], maxLength: MAX_FLAG_KEY },
      },
    },
    session_recording_network_payload_capture_config: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: { recordHeaders: { type: 'boolean' }, recordBody: { type: 'boolean' } },
    },
    session_recording_masking_config: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: { maskAllInputs: { type: 'boolean' }, maskTextSelector: nullableText, blockSelector: nullableText },
    },
    session_recording_url_trigger_config: urlPatterns,
    session_recording_url_blocklist_config: urlPatterns,
    session_recording_event_trigger_config: { type: 'array', maxItems: MAX_PATTERNS, items: { type: 'string', minLength: 1, maxLength: MAX_TEXT } },
    session_recording_trigger_match_type_config: { type: ['string', 'null'], enum: ['any', 'all', null] },
    session_replay_config: { type: ['object', 'null'], additionalProperties: false, properties: { record_canvas: { type: 'boolean' } } },
    capture_console_log_opt_in: { type: 'boolean' },
    capture_performance_opt_in: { type: 'boolean' },
    session_recording_retention_period: { type: 'string', enum: ['30d', '90d', '1y', '5y'] },
    logs_settings: { type: ['object', 'null'], additionalProperties: false, properties: { capture_console_logs: { type: 'boolean' } } },
  },
} as const;

type Setting = keyof SessionReplaySettings;

/** Every setting, in the schema's order; these names are the only ones ever written into SQL text. */
export const SESSION_REPLAY_SETTINGS = Object.keys(sessionReplaySettingsSchema.properties) as Setting[];

const JSON_COLUMNS = new Set<Setting>([
  'session_recording_linked_flag',
  'session_recording_network_payload_capture_config',
  'session_recording_masking_config',
  'session_recording_url_trigger_config',
  'session_recording_url_blocklist_config',
  'session_recording_event_trigger_config',
  'session_replay_config',
  'logs_settings',
]);

// numeric comes back as text from both drivers; as float8 it is a number.
const SELECT_LIST = SESSION_REPLAY_SETTINGS.map((name) => (name === 'session_recording_sample_rate' ? `${name}::float8 AS ${name}` : name)).join(', ');

export async function readSessionReplaySettings(sql: SqlExecutor, projectId: number): Promise<SessionReplaySettings | undefined> {
  const result = await sql.query<SessionReplaySettings>('accounts.readSessionReplaySettings', `SELECT ${SELECT_LIST} FROM projects WHERE id = $1`, [projectId]);
  return result.rows[0];
}

/**
 * Writes the settings `patch` holds (already valid against `sessionReplaySettingsSchema`) and returns them all;
 * undefined when the project does not exist. A URL pattern that is no regular expression is a 400 naming it.
 * Decide caches settings with the flag definitions: run this inside flag-store's `writeDefinitions` so that
 * every decide process serves the change.
 */
export async function updateSessionReplaySettings(
  sql: SqlExecutor,
  projectId: number,
  patch: SessionReplaySettingsPatch,
): Promise<SessionReplaySettings | undefined> {
  checkPatterns('session_recording_url_trigger_config', patch.session_recording_url_trigger_config);
  checkPatterns('session_recording_url_blocklist_config', patch.session_recording_url_blocklist_config);
  const params: unknown[] = [projectId];
  const assignments: string[] = [];
  for (const name of SESSION_REPLAY_SETTINGS) {
    const value = patch[name];
    if (value === undefined) continue;
    const json = JSON_COLUMNS.has(name);
    params.push(json && value !== null ? JSON.stringify(value) : value);
    assignments.push(`${name} = $${params.length}${json ? '::jsonb' : ''}`);
  }
  if (assignments.length === 0) return readSessionReplaySettings(sql, projectId);
  const result = await sql.query<SessionReplaySettings>(
    'accounts.updateSessionReplaySettings',
    `UPDATE projects SET ${assignments.join(', ')}, updated_at = now() WHERE id = $1 RETURNING ${SELECT_LIST}`,
    params,
  );
  return result.rows[0];
}

function checkPatterns(setting: Setting, patterns: UrlPattern[] | undefined): void {
  patterns?.forEach((pattern, i) => {
    try {
      new RegExp(pattern.url);
    } catch {
      throw ApiError.validation(`${JSON.stringify(pattern.url)} is not a valid regular expression.`, `${setting}__${i}__url`);
    }
  });
}
