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
CREATE TABLE IF NOT EXISTS {database}.session_replay_snapshots
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

CREATE TABLE IF NOT EXISTS {database}.session_replay_summaries
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
