import type { SessionReplaySettings } from '@plover/accounts';
import { NEW_PROJECT_REPLAY_SETTINGS } from '../../../packages/accounts/test/support/replay-settings';
import { capturePerformanceConfig, sessionRecordingConfig } from '../src/session-recording';

/** A new project's settings (the migration's defaults), opted in. */
const ON: SessionReplaySettings = { ...NEW_PROJECT_REPLAY_SETTINGS, session_recording_opt_in: true };

describe('sessionRecordingConfig', () => {
  it('is false for a project that has not opted in, or whose settings are unknown', () => {
    expect(sessionRecordingConfig({ ...ON, session_recording_opt_in: false })).toBe(false);
    expect(sessionRecordingConfig(undefined)).toBe(false);
  });

  it('turns recording on with the fields posthog-js reads, in PostHog’s order, for the defaults', () => {
    const config = sessionRecordingConfig(ON);
    expect(JSON.stringify(config)).toBe(
      JSON.stringify({
        endpoint: '/s/',
        recorderVersion: 'v2',
        consoleLogRecordingEnabled: true,
        sampleRate: null,
        minimumDurationMilliseconds: null,
        linkedFlag: null,
        networkPayloadCapture: null,
        masking: null,
        urlTriggers: [],
        urlBlocklist: [],
        eventTriggers: [],
        triggerMatchType: null,
        scriptConfig: null,
        recordCanvas: false,
        canvasFps: null,
        canvasQuality: null,
        version: 1,
      }),
    );
  });

  it.each<[string, Partial<SessionReplaySettings>, Record<string, unknown>]>([
    ['a sample rate, as a string without trailing zeros', { session_recording_sample_rate: 0.5 }, { sampleRate: '0.5' }],
    ['a sample rate of 0 (record nothing)', { session_recording_sample_rate: 0 }, { sampleRate: '0' }],
    ['a sample rate of 1 (record everything)', { session_recording_sample_rate: 1 }, { sampleRate: null }],
    ['a minimum duration', { session_recording_minimum_duration_milliseconds: 2_500 }, { minimumDurationMilliseconds: 2_500 }],
    ['a minimum duration of 0', { session_recording_minimum_duration_milliseconds: 0 }, { minimumDurationMilliseconds: null }],
    ['a linked flag', { session_recording_linked_flag: { id: 3, key: 'beta' } }, { linkedFlag: 'beta' }],
    ['a linked flag with a null variant', { session_recording_linked_flag: { id: 3, key: 'beta', variant: null } }, { linkedFlag: 'beta' }],
    ['a linked variant', { session_recording_linked_flag: { id: 3, key: 'beta', variant: 'test' } }, { linkedFlag: { flag: 'beta', variant: 'test' } }],
    [
      'network payload capture',
      { session_recording_network_payload_capture_config: { recordHeaders: true } },
      { networkPayloadCapture: { recordHeaders: true } },
    ],
    ['an empty network payload config', { session_recording_network_payload_capture_config: {} }, { networkPayloadCapture: null }],
    [
      'masking',
      { session_recording_masking_config: { maskAllInputs: false, maskTextSelector: '*' } },
      { masking: { maskAllInputs: false, maskTextSelector: '*' } },
    ],
    ['an empty masking config', { session_recording_masking_config: {} }, { masking: null }],
    [
      'URL triggers and blocklist',
      {
        session_recording_url_trigger_config: [{ url: '/checkout', matching: 'regex' }],
        session_recording_url_blocklist_config: [{ url: '/admin', matching: 'regex' }],
      },
      { urlTriggers: [{ url: '/checkout', matching: 'regex' }], urlBlocklist: [{ url: '/admin', matching: 'regex' }] },
    ],
    [
      'event triggers matched by any',
      { session_recording_event_trigger_config: ['purchase'], session_recording_trigger_match_type_config: 'any' },
      { eventTriggers: ['purchase'], triggerMatchType: 'any' },
    ],
    ['console logs off', { capture_console_log_opt_in: false }, { consoleLogRecordingEnabled: false }],
    ['canvas recording', { session_replay_config: { record_canvas: true } }, { recordCanvas: true, canvasFps: 3, canvasQuality: '0.4' }],
    ['canvas recording off', { session_replay_config: { record_canvas: false } }, { recordCanvas: false, canvasFps: null, canvasQuality: null }],
  ])('%s', (_name, settings, expected) => {
    expect(sessionRecordingConfig({ ...ON, ...settings })).toMatchObject(expected);
  });

  it('never tells the SDK the retention period (storage reads it, not the recorder)', () => {
    expect(JSON.stringify(sessionRecordingConfig({ ...ON, session_recording_retention_period: '5y' }))).not.toContain('5y');
  });
});

describe('capturePerformanceConfig', () => {
  it('is network timing when the project captures performance, else false', () => {
    expect(capturePerformanceConfig(ON)).toEqual({ network_timing: true, web_vitals: false, web_vitals_allowed_metrics: null });
    expect(capturePerformanceConfig({ ...ON, capture_performance_opt_in: false })).toBe(false);
    expect(capturePerformanceConfig(undefined)).toBe(false);
  });
});
