-- OpenTelemetry logs (docs/logs.md): one row per log record capture accepted on `/i/v1/logs`, written by the logs
-- consumer. Ordered by project then time, which is how every read asks for them (a project's recent lines).
--
-- Dedupe: the bus delivers at least once and an exporter retries an export it got no answer to; capture derives
-- each record's uuid from the request's bytes and the record's place in it, so every copy of a record has the
-- same uuid and timestamp, lands on the same sorting key and collapses. Reads use FINAL.
--
-- Retention: `expires_at` is the record's UTC day plus the retention the consumer was configured with when it
-- stored the row (LOGS_RETENTION_DAYS). Reads hide rows past it; the TTL deletes them in background merges.
CREATE TABLE IF NOT EXISTS {database}.logs
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
