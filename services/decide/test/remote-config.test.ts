/**
 * The session recording config as the SDKs read it, from a project's stored replay settings: off by default,
 * on once the project opts in, every setting carried through, and a change served by the next request.
 */
import { runInNewContext } from 'node:vm';
import request from 'supertest';
import { updateSessionReplaySettings, type SessionReplaySettingsPatch } from '@plover/accounts';
import { writeDefinitions } from '@plover/flag-store';
import type { ServiceApp } from '@plover/http';
import { openMigratedPGlite, type MigratedDatabase } from '../../../packages/postgres/test/support/backends';
import { buildApp, setup } from './support/harness';

describe('session recording config (remote config, /decide, /flags)', () => {
  let database: MigratedDatabase;
  let app: ServiceApp;
  let token: string;
  let projectId: number;

  beforeAll(async () => {
    database = await openMigratedPGlite();
    app = buildApp(database.sql);
    const credentials = await setup(database.sql);
    token = credentials.project.api_token;
    projectId = credentials.project.id;
  });

  afterAll(() => database.close());

  /** As the management API writes them: inside writeDefinitions, so decide drops its cached copy. */
  const configure = (patch: SessionReplaySettingsPatch) => writeDefinitions(database.sql, projectId, (tx) => updateSessionReplaySettings(tx, projectId, patch));

  /** `config.js` as posthog-js 1.350 and later evaluate it. */
  async function scriptConfig(): Promise<Record<string, unknown>> {
    const script = await request(app).get(`/array/${token}/config.js`).expect(200);
    expect(script.headers['content-type']).toMatch(/^application\/javascript/);
    const window: { _POSTHOG_REMOTE_CONFIG?: Record<string, { config: Record<string, unknown> }> } = {};
    runInNewContext(script.text, { window });
    return window._POSTHOG_REMOTE_CONFIG![token]!.config;
  }

  it('is false, with network timing on by default, until the project opts in', async () => {
    const config = await request(app).get(`/array/${token}/config`).expect(200);
    expect(config.body).toMatchObject({ sessionRecording: false, capturePerformance: { network_timing: true, web_vitals: false } });
    expect((await scriptConfig()).sessionRecording).toBe(false);
  });

  it('carries every setting once the project opts in, on the next request', async () => {
    await configure({
      session_recording_opt_in: true,
      session_recording_sample_rate: 0.5,
      session_recording_minimum_duration_milliseconds: 1_500,
      session_recording_linked_flag: { id: 1, key: 'record', variant: 'yes' },
      session_recording_masking_config: { maskAllInputs: true },
      session_recording_url_blocklist_config: [{ url: '/admin', matching: 'regex' }],
      capture_console_log_opt_in: false,
      capture_performance_opt_in: false,
    });
    const expected = {
      endpoint: '/s/',
      recorderVersion: 'v2',
      consoleLogRecordingEnabled: false,
      sampleRate: '0.5',
      minimumDurationMilliseconds: 1_500,
      linkedFlag: { flag: 'record', variant: 'yes' },
      networkPayloadCapture: null,
      masking: { maskAllInputs: true },
      urlTriggers: [],
      urlBlocklist: [{ url: '/admin', matching: 'regex' }],
      eventTriggers: [],
      triggerMatchType: null,
      scriptConfig: null,
      recordCanvas: false,
      canvasFps: null,
      canvasQuality: null,
      version: 1,
    };
    const config = await request(app).get(`/array/${token}/config`).expect(200);
    expect(config.body.sessionRecording).toEqual(expected);
    expect(config.body.capturePerformance).toBe(false);
    expect((await scriptConfig()).sessionRecording).toEqual(expected);
    for (const path of ['/decide/', '/decide/?v=2', '/decide/?v=3', '/decide/?v=4', '/flags/?v=2&config=true', '/flags/']) {
      const answer = await request(app).post(path).send({ token, distinct_id: 'someone' }).expect(200);
      expect([path, answer.body.sessionRecording, answer.body.capturePerformance]).toEqual([path, expected, false]);
    }
    // /flags answers the config fields only when asked.
    expect((await request(app).post('/flags/?v=2').send({ token, distinct_id: 'someone' }).expect(200)).body).not.toHaveProperty('sessionRecording');
  });

  it('is false again once the project opts out', async () => {
    await configure({ session_recording_opt_in: false });
    expect((await request(app).get(`/array/${token}/config`).expect(200)).body.sessionRecording).toBe(false);
    expect((await request(app).post('/decide/?v=4').send({ token, distinct_id: 'someone' }).expect(200)).body.sessionRecording).toBe(false);
  });

  it("turns posthog-js's console-log capture on and off with the project's logs settings, on every config route", async () => {
    const logsOf = async () => {
      const answers = [
        (await request(app).get(`/array/${token}/config`).expect(200)).body,
        await scriptConfig(),
        (await request(app).post('/flags/?v=2&config=true').send({ token, distinct_id: 'someone' }).expect(200)).body,
        (await request(app).post('/decide/?v=4').send({ token, distinct_id: 'someone' }).expect(200)).body,
      ] as Array<{ logs?: unknown }>;
      return answers.map((answer) => answer.logs);
    };
    expect(await logsOf()).toEqual(Array(4).fill({ captureConsoleLogs: false }));
    await configure({ logs_settings: { capture_console_logs: true } });
    expect(await logsOf()).toEqual(Array(4).fill({ captureConsoleLogs: true }));
    await configure({ logs_settings: null });
    expect(await logsOf()).toEqual(Array(4).fill({ captureConsoleLogs: false }));
  });
});
