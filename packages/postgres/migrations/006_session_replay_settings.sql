-- Session replay settings of a project, in PostHog's names (its `Team` fields): what the remote config tells
-- posthog-js's recorder (docs/decide.md#session-recording) and how long ingestion keeps recordings. The
-- bounds are checked by the management API's schema first (@plover/accounts `sessionReplaySettingsSchema`);
-- the CHECKs keep the table honest whatever writes it.

ALTER TABLE projects
  -- Off until a project turns it on: capture accepts recordings either way, the config tells SDKs to record.
  ADD COLUMN session_recording_opt_in boolean NOT NULL DEFAULT false,
  -- Share of sessions recorded, 0 to 1; null records every session.
  ADD COLUMN session_recording_sample_rate numeric CHECK (session_recording_sample_rate BETWEEN 0 AND 1),
  -- Sessions shorter than this are not sent; null (or 0) sends every one.
  ADD COLUMN session_recording_minimum_duration_milliseconds integer
    CHECK (session_recording_minimum_duration_milliseconds BETWEEN 0 AND 30000),
  -- `{id, key, variant?}`: record only while this flag (or this variant of it) is on for the user.
  ADD COLUMN session_recording_linked_flag jsonb CHECK (jsonb_typeof(session_recording_linked_flag) = 'object'),
  -- `{recordHeaders?, recordBody?}`: what the network plugin keeps of requests.
  ADD COLUMN session_recording_network_payload_capture_config jsonb
    CHECK (jsonb_typeof(session_recording_network_payload_capture_config) = 'object'),
  -- `{maskAllInputs?, maskTextSelector?, blockSelector?}`.
  ADD COLUMN session_recording_masking_config jsonb CHECK (jsonb_typeof(session_recording_masking_config) = 'object'),
  -- `[{url, matching: 'regex'}]`: recording starts once a page matches (triggers) or pauses on one (blocklist).
  ADD COLUMN session_recording_url_trigger_config jsonb NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(session_recording_url_trigger_config) = 'array'),
  ADD COLUMN session_recording_url_blocklist_config jsonb NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(session_recording_url_blocklist_config) = 'array'),
  -- Event names that start recording.
  ADD COLUMN session_recording_event_trigger_config jsonb NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(session_recording_event_trigger_config) = 'array'),
  -- How URL, event, flag and sampling triggers combine; null leaves it to the SDK (all of them).
  ADD COLUMN session_recording_trigger_match_type_config text
    CHECK (session_recording_trigger_match_type_config IN ('any', 'all')),
  -- `{record_canvas?}`.
  ADD COLUMN session_replay_config jsonb CHECK (jsonb_typeof(session_replay_config) = 'object'),
  -- PostHog's defaults for new projects: console logs recorded, network timing captured.
  ADD COLUMN capture_console_log_opt_in boolean NOT NULL DEFAULT true,
  ADD COLUMN capture_performance_opt_in boolean NOT NULL DEFAULT true,
  ADD COLUMN session_recording_retention_period text NOT NULL DEFAULT '30d'
    CHECK (session_recording_retention_period IN ('30d', '90d', '1y', '5y'));
