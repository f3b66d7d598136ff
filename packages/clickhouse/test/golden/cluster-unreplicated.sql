-- migrate.createDatabase
CREATE DATABASE IF NOT EXISTS `plover` ON CLUSTER plover;

-- migrate.createLedger
CREATE TABLE IF NOT EXISTS `plover`.plover_migrations_local ON CLUSTER plover
     (version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3))
     ENGINE = ReplacingMergeTree ORDER BY version;

-- migrate.createLedger.distributed
CREATE TABLE IF NOT EXISTS `plover`.plover_migrations ON CLUSTER plover AS `plover`.plover_migrations_local
ENGINE = Distributed(plover, `plover`, plover_migrations_local, version);

-- query migrate.recorded
SELECT version, name FROM `plover`.plover_migrations FINAL;

-- migrate.001_events.1
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
CREATE TABLE IF NOT EXISTS `plover`.events_local ON CLUSTER plover
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

-- migrate.001_events.1.distributed
CREATE TABLE IF NOT EXISTS `plover`.events ON CLUSTER plover AS `plover`.events_local
ENGINE = Distributed(plover, `plover`, events_local, cityHash64(distinct_id));

-- migrate.record {"version":1,"name":"events"}
INSERT INTO `plover`.plover_migrations (version, name) VALUES ({version:UInt32}, {name:String});

-- migrate.002_ingestion_warnings.1
-- Ingestion warnings: what ingestion noticed about an event while still storing it (a refused merge, an
-- oversized person, an unusable timestamp) or instead of storing it (dead-lettered messages). PostHog's
-- `ingestion_warnings` table (posthog/models/ingestion_warnings/sql.py), listed by the management API.
--
-- Dedupe: a redelivered message raises its warnings again. Every column of the sorting key is fixed by the
-- message itself (its team, the warning type, the event's uuid, and `timestamp`, the time the bus appended the
-- message), so the copies collapse like redelivered events do; reads that must not see them use FINAL.
CREATE TABLE IF NOT EXISTS `plover`.ingestion_warnings_local ON CLUSTER plover
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

-- migrate.002_ingestion_warnings.1.distributed
CREATE TABLE IF NOT EXISTS `plover`.ingestion_warnings ON CLUSTER plover AS `plover`.ingestion_warnings_local
ENGINE = Distributed(plover, `plover`, ingestion_warnings_local, cityHash64(event_uuid));

-- migrate.record {"version":2,"name":"ingestion_warnings"}
INSERT INTO `plover`.plover_migrations (version, name) VALUES ({version:UInt32}, {name:String});

-- migrate.003_person_overrides.1
-- Person overrides: events keep the person_id they were stored with, and when that person is later merged
-- into another one (or its distinct id, used personless, joins another person), this maps the old person
-- uuid to the surviving one, so that queries counting unique persons count a merged person once (docs/ingestion.md, merges).
-- A copy of Postgres' person_overrides (packages/postgres/migrations/002_persons.sql), written by ingestion
-- right after Postgres; the layout of PostHog's ClickHouse `person_overrides` table.
--
-- Postgres keeps chains flat (a merge re-points every row that pointed at the merged-away person) and bumps
-- `version` on each re-point, so the row with the greatest version per old person is the current mapping:
-- ReplacingMergeTree(version) keeps it, and reads take argMax(override_person_id, version) so they are right
-- before background merges too. Redelivered copies carry the same version and collapse.
CREATE TABLE IF NOT EXISTS `plover`.person_overrides_local ON CLUSTER plover
(
    team_id Int64,
    old_person_id UUID,
    override_person_id UUID,
    version Int64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (team_id, old_person_id);

-- migrate.003_person_overrides.1.distributed
CREATE TABLE IF NOT EXISTS `plover`.person_overrides ON CLUSTER plover AS `plover`.person_overrides_local
ENGINE = Distributed(plover, `plover`, person_overrides_local, cityHash64(old_person_id));

-- migrate.record {"version":3,"name":"person_overrides"}
INSERT INTO `plover`.plover_migrations (version, name) VALUES ({version:UInt32}, {name:String});

-- migrate.004_materialized_properties.1
-- Materialized columns for the event properties posthog-js sets on (nearly) every event and that insights
-- filter and break down by most. Reading a property out of the JSON `properties` column means decompressing and
-- parsing every row's whole JSON (≈ 1 µs a row); a materialized column is computed once, at insert, and read on
-- its own. packages/insights reads `mat_<key>` instead of the JSON for these keys, so each expression below must
-- give exactly the property text docs/insights.md defines (a string's value, a number's or boolean's JSON
-- literal, '' when missing or null): the insights tests compare the two on every kind of value.
-- Parts written before this migration compute the columns on read until they are merged or materialized.
ALTER TABLE `plover`.events_local ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$browser` LowCardinality(String) MATERIALIZED if(JSONExtractString(properties, '$browser') != '', JSONExtractString(properties, '$browser'), multiIf(JSONExtractRaw(properties, '$browser') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$browser'), '"'), JSONExtractString(JSONExtractRaw(properties, '$browser')), JSONExtractRaw(properties, '$browser')));

-- migrate.004_materialized_properties.1.distributed
-- Materialized columns for the event properties posthog-js sets on (nearly) every event and that insights
-- filter and break down by most. Reading a property out of the JSON `properties` column means decompressing and
-- parsing every row's whole JSON (≈ 1 µs a row); a materialized column is computed once, at insert, and read on
-- its own. packages/insights reads `mat_<key>` instead of the JSON for these keys, so each expression below must
-- give exactly the property text docs/insights.md defines (a string's value, a number's or boolean's JSON
-- literal, '' when missing or null): the insights tests compare the two on every kind of value.
-- Parts written before this migration compute the columns on read until they are merged or materialized.
ALTER TABLE `plover`.events ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$browser` LowCardinality(String) MATERIALIZED if(JSONExtractString(properties, '$browser') != '', JSONExtractString(properties, '$browser'), multiIf(JSONExtractRaw(properties, '$browser') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$browser'), '"'), JSONExtractString(JSONExtractRaw(properties, '$browser')), JSONExtractRaw(properties, '$browser')));

-- migrate.004_materialized_properties.2
ALTER TABLE `plover`.events_local ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$os` LowCardinality(String) MATERIALIZED if(JSONExtractString(properties, '$os') != '', JSONExtractString(properties, '$os'), multiIf(JSONExtractRaw(properties, '$os') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$os'), '"'), JSONExtractString(JSONExtractRaw(properties, '$os')), JSONExtractRaw(properties, '$os')));

-- migrate.004_materialized_properties.2.distributed
ALTER TABLE `plover`.events ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$os` LowCardinality(String) MATERIALIZED if(JSONExtractString(properties, '$os') != '', JSONExtractString(properties, '$os'), multiIf(JSONExtractRaw(properties, '$os') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$os'), '"'), JSONExtractString(JSONExtractRaw(properties, '$os')), JSONExtractRaw(properties, '$os')));

-- migrate.004_materialized_properties.3
ALTER TABLE `plover`.events_local ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$device_type` LowCardinality(String) MATERIALIZED if(JSONExtractString(properties, '$device_type') != '', JSONExtractString(properties, '$device_type'), multiIf(JSONExtractRaw(properties, '$device_type') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$device_type'), '"'), JSONExtractString(JSONExtractRaw(properties, '$device_type')), JSONExtractRaw(properties, '$device_type')));

-- migrate.004_materialized_properties.3.distributed
ALTER TABLE `plover`.events ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$device_type` LowCardinality(String) MATERIALIZED if(JSONExtractString(properties, '$device_type') != '', JSONExtractString(properties, '$device_type'), multiIf(JSONExtractRaw(properties, '$device_type') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$device_type'), '"'), JSONExtractString(JSONExtractRaw(properties, '$device_type')), JSONExtractRaw(properties, '$device_type')));

-- migrate.004_materialized_properties.4
ALTER TABLE `plover`.events_local ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$lib` LowCardinality(String) MATERIALIZED if(JSONExtractString(properties, '$lib') != '', JSONExtractString(properties, '$lib'), multiIf(JSONExtractRaw(properties, '$lib') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$lib'), '"'), JSONExtractString(JSONExtractRaw(properties, '$lib')), JSONExtractRaw(properties, '$lib')));

-- migrate.004_materialized_properties.4.distributed
ALTER TABLE `plover`.events ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$lib` LowCardinality(String) MATERIALIZED if(JSONExtractString(properties, '$lib') != '', JSONExtractString(properties, '$lib'), multiIf(JSONExtractRaw(properties, '$lib') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$lib'), '"'), JSONExtractString(JSONExtractRaw(properties, '$lib')), JSONExtractRaw(properties, '$lib')));

-- migrate.004_materialized_properties.5
ALTER TABLE `plover`.events_local ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$host` String MATERIALIZED if(JSONExtractString(properties, '$host') != '', JSONExtractString(properties, '$host'), multiIf(JSONExtractRaw(properties, '$host') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$host'), '"'), JSONExtractString(JSONExtractRaw(properties, '$host')), JSONExtractRaw(properties, '$host')));

-- migrate.004_materialized_properties.5.distributed
ALTER TABLE `plover`.events ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$host` String MATERIALIZED if(JSONExtractString(properties, '$host') != '', JSONExtractString(properties, '$host'), multiIf(JSONExtractRaw(properties, '$host') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$host'), '"'), JSONExtractString(JSONExtractRaw(properties, '$host')), JSONExtractRaw(properties, '$host')));

-- migrate.004_materialized_properties.6
ALTER TABLE `plover`.events_local ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$pathname` String MATERIALIZED if(JSONExtractString(properties, '$pathname') != '', JSONExtractString(properties, '$pathname'), multiIf(JSONExtractRaw(properties, '$pathname') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$pathname'), '"'), JSONExtractString(JSONExtractRaw(properties, '$pathname')), JSONExtractRaw(properties, '$pathname')));

-- migrate.004_materialized_properties.6.distributed
ALTER TABLE `plover`.events ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$pathname` String MATERIALIZED if(JSONExtractString(properties, '$pathname') != '', JSONExtractString(properties, '$pathname'), multiIf(JSONExtractRaw(properties, '$pathname') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$pathname'), '"'), JSONExtractString(JSONExtractRaw(properties, '$pathname')), JSONExtractRaw(properties, '$pathname')));

-- migrate.004_materialized_properties.7
ALTER TABLE `plover`.events_local ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$current_url` String MATERIALIZED if(JSONExtractString(properties, '$current_url') != '', JSONExtractString(properties, '$current_url'), multiIf(JSONExtractRaw(properties, '$current_url') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$current_url'), '"'), JSONExtractString(JSONExtractRaw(properties, '$current_url')), JSONExtractRaw(properties, '$current_url')));

-- migrate.004_materialized_properties.7.distributed
ALTER TABLE `plover`.events ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$current_url` String MATERIALIZED if(JSONExtractString(properties, '$current_url') != '', JSONExtractString(properties, '$current_url'), multiIf(JSONExtractRaw(properties, '$current_url') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$current_url'), '"'), JSONExtractString(JSONExtractRaw(properties, '$current_url')), JSONExtractRaw(properties, '$current_url')));

-- migrate.004_materialized_properties.8
ALTER TABLE `plover`.events_local ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$referring_domain` String MATERIALIZED if(JSONExtractString(properties, '$referring_domain') != '', JSONExtractString(properties, '$referring_domain'), multiIf(JSONExtractRaw(properties, '$referring_domain') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$referring_domain'), '"'), JSONExtractString(JSONExtractRaw(properties, '$referring_domain')), JSONExtractRaw(properties, '$referring_domain')));

-- migrate.004_materialized_properties.8.distributed
ALTER TABLE `plover`.events ON CLUSTER plover ADD COLUMN IF NOT EXISTS `mat_$referring_domain` String MATERIALIZED if(JSONExtractString(properties, '$referring_domain') != '', JSONExtractString(properties, '$referring_domain'), multiIf(JSONExtractRaw(properties, '$referring_domain') IN ('', 'null'), '', startsWith(JSONExtractRaw(properties, '$referring_domain'), '"'), JSONExtractString(JSONExtractRaw(properties, '$referring_domain')), JSONExtractRaw(properties, '$referring_domain')));

-- migrate.record {"version":4,"name":"materialized_properties"}
INSERT INTO `plover`.plover_migrations (version, name) VALUES ({version:UInt32}, {name:String});

-- migrate.005_session_replay.1
-- Session replay (docs/replay.md): what the replay consumer stores for every `$snapshot` message (one SDK flush
-- of one window of one session), in two tables written together, one row per message in each:
--
-- * session_replay_snapshots: the message's rrweb events as the SDK sent them (compressed `cv` events stay
--   compressed), as JSONL lines `["<window_id>", <event>]`, the form the snapshots API serves. Ordered by session
--   then time, so a whole session (or a page of its blocks) is one contiguous range of the sorting key.
-- * session_replay_summaries: the counts and times of the same message (clicks, keypresses, active time, console
--   levels, urls, ...). A session's summary is the sum of its rows, computed at read time. The narrow rows keep the
--   listing from reading granules sized for the large snapshot payloads.
--
-- Dedupe: the bus delivers at least once, so a message may be stored again after a crash or a retried batch.
-- Both tables are ReplacingMergeTrees whose sorting key ends in the message's uuid (`batch_uuid`), and every
-- column of the key is fixed by the message itself, so a redelivered message lands on the same key and the two
-- copies collapse. Reads use FINAL, which applies that collapse at read time, before anything is summed: a
-- redelivery never doubles a count.
--
-- Retention: `expires_at` is the start (UTC day) of the session the message belongs to, as far as ingestion had
-- seen it, plus the project's retention period; every row of a session normally carries the same value. Reads
-- hide rows past it; the TTL deletes them in background merges.
CREATE TABLE IF NOT EXISTS `plover`.session_replay_snapshots_local ON CLUSTER plover
(
    team_id Int64,
    session_id String,
    window_id String,
    -- The `$snapshot` message's uuid.
    batch_uuid UUID,
    first_timestamp DateTime64(3, 'UTC'),
    last_timestamp DateTime64(3, 'UTC'),
    event_count UInt32,
    -- Bytes of `data` (UTF-8), so that listing a session's blocks need not read them.
    size UInt64,
    -- One line per rrweb event, each `["<window_id>", <event>]` and a newline.
    data String CODEC(ZSTD(3)),
    expires_at DateTime('UTC'),
    inserted_at DateTime64(6, 'UTC') DEFAULT now64(6)
)
ENGINE = ReplacingMergeTree(inserted_at)
PARTITION BY toYYYYMM(first_timestamp)
ORDER BY (team_id, session_id, first_timestamp, batch_uuid)
TTL expires_at;

-- migrate.005_session_replay.1.distributed
CREATE TABLE IF NOT EXISTS `plover`.session_replay_snapshots ON CLUSTER plover AS `plover`.session_replay_snapshots_local
ENGINE = Distributed(plover, `plover`, session_replay_snapshots_local, cityHash64(session_id));

-- migrate.005_session_replay.2
CREATE TABLE IF NOT EXISTS `plover`.session_replay_summaries_local ON CLUSTER plover
(
    team_id Int64,
    session_id String,
    batch_uuid UUID,
    distinct_id String,
    first_timestamp DateTime64(3, 'UTC'),
    last_timestamp DateTime64(3, 'UTC'),
    -- The first page address of the message (a Meta event's href or a `$pageview` custom event's), if any.
    first_url Nullable(String),
    -- Its distinct page addresses in order of appearance, at most 25.
    urls Array(String),
    click_count UInt32,
    keypress_count UInt32,
    mouse_activity_count UInt32,
    active_milliseconds UInt64,
    console_log_count UInt32,
    console_warn_count UInt32,
    console_error_count UInt32,
    event_count UInt32,
    -- Bytes of the message's JSONL lines in session_replay_snapshots.
    size UInt64,
    snapshot_source LowCardinality(String),
    snapshot_library String,
    retention_period_days UInt16,
    expires_at DateTime('UTC'),
    -- The ReplacingMergeTree version, and when the session last received data (an ongoing recording).
    inserted_at DateTime64(6, 'UTC') DEFAULT now64(6),
    -- Listings filter sessions by their start: lets that scan skip granules of other days.
    INDEX first_timestamp_minmax first_timestamp TYPE minmax GRANULARITY 1
)
ENGINE = ReplacingMergeTree(inserted_at)
PARTITION BY toYYYYMM(first_timestamp)
ORDER BY (team_id, session_id, first_timestamp, batch_uuid)
TTL expires_at;

-- migrate.005_session_replay.2.distributed
CREATE TABLE IF NOT EXISTS `plover`.session_replay_summaries ON CLUSTER plover AS `plover`.session_replay_summaries_local
ENGINE = Distributed(plover, `plover`, session_replay_summaries_local, cityHash64(session_id));

-- migrate.record {"version":5,"name":"session_replay"}
INSERT INTO `plover`.plover_migrations (version, name) VALUES ({version:UInt32}, {name:String});

-- migrate.006_logs.1
-- OpenTelemetry logs (docs/logs.md): one row per log record capture accepted on `/i/v1/logs`, written by the logs
-- consumer. Ordered by project then time, which is how every read asks for them (a project's recent lines).
--
-- Dedupe: the bus delivers at least once and an exporter retries an export it got no answer to; capture derives
-- each record's uuid from the request's bytes and the record's place in it, so every copy of a record has the
-- same uuid and timestamp, lands on the same sorting key and collapses. Reads use FINAL.
--
-- Retention: `expires_at` is the record's UTC day plus the retention the consumer was configured with when it
-- stored the row (LOGS_RETENTION_DAYS). Reads hide rows past it; the TTL deletes them in background merges.
CREATE TABLE IF NOT EXISTS `plover`.logs_local ON CLUSTER plover
(
    team_id Int64,
    uuid UUID,
    timestamp DateTime64(6, 'UTC'),
    observed_timestamp DateTime64(6, 'UTC'),
    severity_text LowCardinality(String),
    severity_number UInt8,
    body String CODEC(ZSTD(3)),
    trace_id String,
    span_id String,
    -- The record's and its resource's attributes, each a JSON object.
    attributes String CODEC(ZSTD(3)),
    resource_attributes String CODEC(ZSTD(3)),
    service_name LowCardinality(String),
    session_id String,
    distinct_id String,
    expires_at DateTime('UTC'),
    inserted_at DateTime64(6, 'UTC') DEFAULT now64(6),
    INDEX session_id_bloom session_id TYPE bloom_filter(0.01) GRANULARITY 4,
    INDEX distinct_id_bloom distinct_id TYPE bloom_filter(0.01) GRANULARITY 4
)
ENGINE = ReplacingMergeTree(inserted_at)
PARTITION BY toYYYYMM(timestamp)
ORDER BY (team_id, timestamp, uuid)
TTL expires_at;

-- migrate.006_logs.1.distributed
CREATE TABLE IF NOT EXISTS `plover`.logs ON CLUSTER plover AS `plover`.logs_local
ENGINE = Distributed(plover, `plover`, logs_local, cityHash64(uuid));

-- migrate.record {"version":6,"name":"logs"}
INSERT INTO `plover`.plover_migrations (version, name) VALUES ({version:UInt32}, {name:String});
