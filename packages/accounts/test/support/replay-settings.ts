import type { SessionReplaySettings } from '@plover/accounts';

/** A new project's session replay settings, as the migration's defaults set them (written out, not read from code). */
export const NEW_PROJECT_REPLAY_SETTINGS: SessionReplaySettings = {
  session_recording_opt_in: false,
  session_recording_sample_rate: null,
  session_recording_minimum_duration_milliseconds: null,
  session_recording_linked_flag: null,
  session_recording_network_payload_capture_config: null,
  session_recording_masking_config: null,
  session_recording_url_trigger_config: [],
  session_recording_url_blocklist_config: [],
  session_recording_event_trigger_config: [],
  session_recording_trigger_match_type_config: null,
  session_replay_config: null,
  capture_console_log_opt_in: true,
  capture_performance_opt_in: true,
  session_recording_retention_period: '30d',
  logs_settings: null,
};
