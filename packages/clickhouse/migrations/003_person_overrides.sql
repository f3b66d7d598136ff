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
CREATE TABLE IF NOT EXISTS {database}.person_overrides
(
    team_id Int64,
    old_person_id UUID,
    override_person_id UUID,
    version Int64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (team_id, old_person_id);
