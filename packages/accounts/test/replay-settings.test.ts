import {
  bootstrap,
  readSessionReplaySettings,
  SESSION_REPLAY_SETTINGS,
  sessionReplaySettingsSchema,
  updateSessionReplaySettings,
  type SessionReplaySettings,
} from '@plover/accounts';
import { ajv } from '@plover/contracts';
import { ApiError } from '@plover/core';
import { migrate, PgSql, type Sql } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';
import { describeWith, realService } from '../../../test/support/services';
import { createTestDatabase, type TestDatabase } from '../../postgres/test/support/database';
import { NEW_PROJECT_REPLAY_SETTINGS as DEFAULTS } from './support/replay-settings';

const EVERY_SETTING: SessionReplaySettings = {
  session_recording_opt_in: true,
  session_recording_sample_rate: 0.25,
  session_recording_minimum_duration_milliseconds: 2_000,
  session_recording_linked_flag: { id: 7, key: 'record-me', variant: 'test' },
  session_recording_network_payload_capture_config: { recordHeaders: true, recordBody: false },
  session_recording_masking_config: { maskAllInputs: true, maskTextSelector: '.secret', blockSelector: null },
  session_recording_url_trigger_config: [{ url: '^https://shop\\.example/checkout', matching: 'regex' }],
  session_recording_url_blocklist_config: [{ url: '/admin', matching: 'regex' }],
  session_recording_event_trigger_config: ['$pageview', 'purchase'],
  session_recording_trigger_match_type_config: 'any',
  session_replay_config: { record_canvas: true },
  capture_console_log_opt_in: false,
  capture_performance_opt_in: false,
  session_recording_retention_period: '1y',
  logs_settings: { capture_console_logs: true },
};

/** The same contract on PGlite and on Postgres: defaults, a full write, a partial write, clearing, refusals. */
function settingsContract(open: () => Promise<Sql>): void {
  let sql: Sql;
  let projectId: number;

  beforeAll(async () => {
    sql = await open();
    await migrate(sql);
    projectId = (await bootstrap(sql, { adminEmail: 'a@example.com', projectName: 'P', timezone: 'UTC' }))!.project.id;
  });

  afterAll(() => sql.close());

  it('starts with PostHog’s defaults for a new project', async () => {
    expect(await readSessionReplaySettings(sql, projectId)).toEqual(DEFAULTS);
  });

  it('writes every setting and reads back exactly what was written', async () => {
    expect(await updateSessionReplaySettings(sql, projectId, EVERY_SETTING)).toEqual(EVERY_SETTING);
    expect(await readSessionReplaySettings(sql, projectId)).toEqual(EVERY_SETTING);
  });

  it('changes only what the patch holds; null clears a nullable setting (SQL NULL, not JSON null)', async () => {
    const after = await updateSessionReplaySettings(sql, projectId, { session_recording_sample_rate: 1, session_recording_linked_flag: null });
    expect(after).toEqual({ ...EVERY_SETTING, session_recording_sample_rate: 1, session_recording_linked_flag: null });
    const stored = await sql.query<{ is_null: boolean }>('test.null', 'SELECT session_recording_linked_flag IS NULL AS is_null FROM projects WHERE id = $1', [
      projectId,
    ]);
    expect(stored.rows[0]!.is_null).toBe(true);
  });

  it('an empty patch reads the settings; an unknown project is undefined', async () => {
    expect(await updateSessionReplaySettings(sql, projectId, {})).toEqual(await readSessionReplaySettings(sql, projectId));
    expect(await updateSessionReplaySettings(sql, 999_999, { session_recording_opt_in: true })).toBeUndefined();
    expect(await readSessionReplaySettings(sql, 999_999)).toBeUndefined();
  });

  it('refuses a URL pattern that is no regular expression with a 400 naming it, writing nothing', async () => {
    const before = await readSessionReplaySettings(sql, projectId);
    const write = updateSessionReplaySettings(sql, projectId, {
      session_recording_opt_in: false,
      session_recording_url_blocklist_config: [
        { url: 'ok', matching: 'regex' },
        { url: '([a-z', matching: 'regex' },
      ],
    });
    await expect(write).rejects.toBeInstanceOf(ApiError);
    await expect(write).rejects.toMatchObject({ status: 400, attr: 'session_recording_url_blocklist_config__1__url' });
    expect(await readSessionReplaySettings(sql, projectId)).toEqual(before);
  });

  it('the table refuses values outside the bounds whatever writes them', async () => {
    for (const [column, value] of [
      ['session_recording_sample_rate', 1.5],
      ['session_recording_minimum_duration_milliseconds', 30_001],
      ['session_recording_retention_period', '2y'],
      ['session_recording_trigger_match_type_config', 'some'],
    ] as const) {
      await expect(sql.query('test.bounds', `UPDATE projects SET ${column} = $1 WHERE id = $2`, [value, projectId])).rejects.toThrow();
    }
  });
}

describe('the session replay settings schema', () => {
  // The project's ajv instance (strict, union types allowed), as the management API compiles request schemas.
  const validate = ajv.compile(sessionReplaySettingsSchema);

  it('has one property per setting and accepts every setting at once', () => {
    expect(SESSION_REPLAY_SETTINGS.sort()).toEqual(Object.keys(DEFAULTS).sort());
    expect(validate(EVERY_SETTING)).toBe(true);
    expect(validate(DEFAULTS)).toBe(true);
  });

  it.each<[string, Record<string, unknown>]>([
    ['a sample rate above 1', { session_recording_sample_rate: 1.01 }],
    ['a negative sample rate', { session_recording_sample_rate: -0.1 }],
    ['a sample rate as text', { session_recording_sample_rate: '0.5' }],
    ['a minimum duration above 30 s', { session_recording_minimum_duration_milliseconds: 30_001 }],
    ['a fractional minimum duration', { session_recording_minimum_duration_milliseconds: 1.5 }],
    ['a linked flag without a key', { session_recording_linked_flag: { id: 1 } }],
    ['a linked flag with an unknown field', { session_recording_linked_flag: { id: 1, key: 'k', extra: true } }],
    ['a URL trigger matching other than regex', { session_recording_url_trigger_config: [{ url: 'a', matching: 'exact' }] }],
    ['a URL blocklist of 101 patterns', { session_recording_url_blocklist_config: Array.from({ length: 101 }, () => ({ url: 'a', matching: 'regex' })) }],
    ['a null URL trigger list', { session_recording_url_trigger_config: null }],
    ['an empty event trigger', { session_recording_event_trigger_config: [''] }],
    ['a trigger match type other than any or all', { session_recording_trigger_match_type_config: 'some' }],
    ['a retention period PostHog does not offer', { session_recording_retention_period: '2y' }],
    ['an unknown masking option', { session_recording_masking_config: { maskEverything: true } }],
    ['a setting that does not exist', { session_recording_everything: true }],
  ])('refuses %s', (_name, patch) => {
    expect(validate(patch)).toBe(false);
  });
});

describe('session replay settings on PGlite', () => {
  settingsContract(() => PGliteSql.open({}));
});

const postgres = realService('TEST_DATABASE_URL');
describeWith(postgres)('session replay settings on Postgres', () => {
  let database: TestDatabase;
  settingsContract(async () => {
    database = await createTestDatabase(postgres.url!);
    return new PgSql({ connectionString: database.url });
  });
  afterAll(() => database.drop());
});
