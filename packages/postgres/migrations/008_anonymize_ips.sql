-- PostHog's `Team.anonymize_ips`: ingestion drops an event's `$ip` before storing it (after GeoIP has located
-- it), so no stored event keeps the client address.
ALTER TABLE projects ADD COLUMN anonymize_ips boolean NOT NULL DEFAULT false;
