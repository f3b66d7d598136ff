-- Events, one row per captured event (after person processing). Columns follow PostHog's `events` table
-- (posthog/models/event/sql.py) so its queries translate directly.
--
-- Dedupe: capture and the bus are at-least-once, so the same event (same uuid) can be inserted more than once.
-- ReplacingMergeTree collapses rows with equal sorting key, keeping the one with the greatest `inserted_at`;
-- it does so in background merges, so until then duplicates exist on disk and every read that must not see
-- them selects `FROM events FINAL`, which applies the same collapse at read time. FINAL only merges rows whose
-- sorting keys are equal, within the granules the query reads anyway (team and day come first in the key),
-- and background merges keep the number of parts it has to reconcile small, so it is far cheaper than
-- deduplicating by uuid in every query (GROUP BY uuid / LIMIT 1 BY uuid).
--
-- The key is PostHog's with the uuid itself at the end instead of cityHash64(uuid), so two different events
-- can never collapse on a hash collision. A redelivered or retried event carries the same team, event name,
-- distinct_id and uuid, and its timestamp is set at capture, so it lands on the same key and the same month
-- partition (collapsing never crosses partitions). The key holds the day, not the timestamp itself, so even a
-- client retry whose skew-corrected timestamp moved by a few milliseconds still collapses (unless it crossed
-- midnight UTC). A uuid reused for a different event name or distinct_id is a different row by design.
CREATE TABLE IF NOT EXISTS {database}.events
(
    uuid UUID,
    event String,
    properties String CODEC(ZSTD(3)),
    timestamp DateTime64(6, 'UTC'),
    team_id Int64,
    distinct_id String,
    elements_chain String,
    -- When ingestion produced the row.
    created_at DateTime64(6, 'UTC'),
    person_id UUID,
    person_properties String CODEC(ZSTD(3)),
    person_created_at DateTime64(3, 'UTC'),
    person_mode Enum8('full' = 0, 'propertyless' = 1, 'force_upgrade' = 2),
    group0_properties String CODEC(ZSTD(3)),
    group1_properties String CODEC(ZSTD(3)),
    group2_properties String CODEC(ZSTD(3)),
    group3_properties String CODEC(ZSTD(3)),
    group4_properties String CODEC(ZSTD(3)),
    group0_created_at DateTime64(3, 'UTC'),
    group1_created_at DateTime64(3, 'UTC'),
    group2_created_at DateTime64(3, 'UTC'),
    group3_created_at DateTime64(3, 'UTC'),
    group4_created_at DateTime64(3, 'UTC'),
    -- properties.$group_0..4, $session_id and $window_id as real columns, written by ingestion (which has the
    -- parsed properties at hand) so filters and GROUP BYs on them never parse the JSON.
    `$group_0` String,
    `$group_1` String,
    `$group_2` String,
    `$group_3` String,
    `$group_4` String,
    session_id String,
    window_id String,
    historical_migration Bool DEFAULT false,
    -- The ReplacingMergeTree version: of several copies of an event, the last one written wins.
    inserted_at DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
PARTITION BY toYYYYMM(timestamp)
ORDER BY (team_id, toDate(timestamp), event, cityHash64(distinct_id), uuid);
