-- A project's logs settings, in PostHog's name (its `Team.logs_settings`): `{capture_console_logs?}`, which decide's
-- remote config turns into posthog-js's `logs.captureConsoleLogs` (docs/logs.md#browser-console-capture). Null
-- (the default) is every setting off. Validated by the management API's schema (@plover/accounts).
ALTER TABLE projects
  ADD COLUMN logs_settings jsonb CHECK (jsonb_typeof(logs_settings) = 'object');
