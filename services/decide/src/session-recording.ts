/**
 * The remote config's replay fields, from a project's session replay settings: `sessionRecording`, which turns
 * posthog-js's recorder on and tells it what to record, and `capturePerformance`, whose network timing the
 * recorder adds to recordings. PostHog builds the same from its `Team` (Django `remote_config.py`); the
 * field-by-field rules are in docs/decide.md#session-recording.
 */
import type { SessionReplaySettings } from '@plover/accounts';

/** Where posthog-js sends `$snapshot` events; capture serves it (docs/capture.md#session-replay-s). */
export const SNAPSHOT_ENDPOINT = '/s/';

/** `false` (record nothing; the SDK also drops what it buffered) unless the project opted in. */
export function sessionRecordingConfig(settings: SessionReplaySettings | undefined): false | Record<string, unknown> {
  if (!settings?.session_recording_opt_in) return false;
  const canvas = settings.session_replay_config?.record_canvas === true;
  return {
    endpoint: SNAPSHOT_ENDPOINT,
    // Fixed; posthog-js ignores it, older SDKs read it.
    recorderVersion: 'v2',
    consoleLogRecordingEnabled: settings.capture_console_log_opt_in,
    sampleRate: sampleRateText(settings.session_recording_sample_rate),
    minimumDurationMilliseconds: settings.session_recording_minimum_duration_milliseconds || null,
    linkedFlag: linkedFlag(settings.session_recording_linked_flag),
    networkPayloadCapture: nonEmpty(settings.session_recording_network_payload_capture_config),
    masking: nonEmpty(settings.session_recording_masking_config),
    urlTriggers: settings.session_recording_url_trigger_config,
    urlBlocklist: settings.session_recording_url_blocklist_config,
    eventTriggers: settings.session_recording_event_trigger_config,
    triggerMatchType: settings.session_recording_trigger_match_type_config,
    // The default recorder script (lazy-recorder), which /static/ serves.
    scriptConfig: null,
    recordCanvas: canvas,
    canvasFps: canvas ? 3 : null,
    canvasQuality: canvas ? '0.4' : null,
    version: 1,
  };
}

/**
 * `logs`: posthog-js captures the browser console and posts it to `/i/v1/logs` when `captureConsoleLogs` is true
 * (PostHog's `Team.logs_settings.capture_console_logs`); false tells an SDK that turned it on earlier to stop.
 */
export function logsConfig(settings: SessionReplaySettings | undefined): { captureConsoleLogs: boolean } {
  return { captureConsoleLogs: settings?.logs_settings?.capture_console_logs === true };
}

/** Network timing for the recorder when the project captures performance; web vitals are not offered. */
export function capturePerformanceConfig(settings: SessionReplaySettings | undefined): false | Record<string, unknown> {
  if (!settings?.capture_performance_opt_in) return false;
  return { network_timing: true, web_vitals: false, web_vitals_allowed_metrics: null };
}

/** A string, as PostHog sends it (`"0.5"`, not `"0.50"`); 1 and none are `null`: record every session. */
function sampleRateText(rate: number | null): string | null {
  return rate === null || rate >= 1 ? null : String(rate);
}

/** The flag's key, or `{flag, variant}` when one variant of it is linked. */
function linkedFlag(flag: SessionReplaySettings['session_recording_linked_flag']): string | { flag: string; variant: string } | null {
  if (!flag) return null;
  return flag.variant ? { flag: flag.key, variant: flag.variant } : flag.key;
}

function nonEmpty<T extends object>(value: T | null): T | null {
  return value && Object.keys(value).length > 0 ? value : null;
}
