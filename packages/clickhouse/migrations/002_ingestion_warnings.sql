-- Ingestion warnings: what ingestion noticed about an event while still storing it (a refused merge, an
-- oversized person, an unusable timestamp) or instead of storing it (dead-lettered messages). PostHog's
-- `ingestion_warnings` table (posthog/models/ingestion_warnings/sql.py), listed by the management API.
--
-- Dedupe: a redelivered message raises its warnings again. Every column of the sorting key is fixed by the
-- message itself (its team, the warning type, the event's uuid, and `timestamp`, the time the bus appended the
-- message), so the copies collapse like redelivered events do; reads that must not see them use FINAL.
CREATE TABLE IF NOT EXISTS {database}.ingestion_warnings
(
    team_id Int64,
    -- PostHog's type names (cannot_merge_with_illegal_distinct_id, person_properties_size_violation, ...).
    type LowCardinality(String),
    -- A JSON object; keys as PostHog's for its types (eventUuid, distinctId, ...).
    details String CODEC(ZSTD(3)),
    -- When the event reached the bus: the warning's time in listings, and stable across redeliveries.
    timestamp DateTime64(6, 'UTC'),
    -- The event the warning is about; for a message without a usable uuid, one derived from its bus position.
    event_uuid UUID,
    inserted_at DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
PARTITION BY toYYYYMM(timestamp)
ORDER BY (team_id, timestamp, type, event_uuid);
