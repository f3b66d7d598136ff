-- Persons, their distinct ids, overrides of merged-away persons, group types and groups: PostHog's
-- posthog_person, posthog_persondistinctid, posthog_grouptypemapping and posthog_group (rules in
-- docs/ingestion.md). Their SQL lives in packages/persons (docs/architecture.md#table-ownership names the one read
-- elsewhere): PersonStore and GroupStore write, PersonReads and GroupStore's reads serve the management API and decide.
-- Every statement binds its values.
--
-- No CHECK on the size of `properties`: PostHog's check_properties_size measures pg_column_size (the
-- stored, possibly compressed jsonb), which application code cannot predict, and a write refused by the
-- database would be a permanent failure for the event. packages/persons enforces the 640 KiB cap on the
-- JSON text before writing and records a warning instead (docs/ingestion.md#persons).
-- No properties_last_updated_at / properties_last_operation either: updates apply in ingestion order
-- (docs/ingestion.md#ordering), so nothing reads them.

CREATE TABLE persons (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  project_id integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  -- UUIDv5 of "<project_id>:<distinct_id>" of the distinct id that created the person; what events carry as person_id.
  uuid uuid NOT NULL,
  properties jsonb NOT NULL DEFAULT '{}',
  is_identified boolean NOT NULL DEFAULT false,
  -- The timestamp of the first event seen for the person (not the wall clock); the older one after a merge.
  created_at timestamptz NOT NULL,
  -- +1 per write, max + 1 on a merge.
  version bigint NOT NULL DEFAULT 0,
  CONSTRAINT persons_project_id_uuid_key UNIQUE (project_id, uuid)
);
-- Management listing, newest first per project (also serves retrieval by id within a project).
CREATE INDEX persons_project_id_created_at_idx ON persons (project_id, created_at DESC, id DESC);
-- Management filter `email` (exact) and the email part of `search`: PostHog indexes properties->'email' too.
CREATE INDEX persons_project_id_email_idx ON persons (project_id, (properties ->> 'email'));

CREATE TABLE person_distinct_ids (
  -- Orders a person's distinct ids as PostHog lists them (oldest first).
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  project_id integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  distinct_id text NOT NULL,
  person_id bigint NOT NULL REFERENCES persons (id) ON DELETE CASCADE,
  -- 0 when attached, +1 each time a merge moves it to another person.
  version bigint NOT NULL DEFAULT 0,
  -- Ingestion's lookup by distinct id, and the management filter `distinct_id`.
  CONSTRAINT person_distinct_ids_project_id_distinct_id_key UNIQUE (project_id, distinct_id)
);
-- A person's distinct ids (responses, merges moving them, the cascade from persons).
CREATE INDEX person_distinct_ids_person_id_idx ON person_distinct_ids (person_id, id);

-- Events keep the person_id they were stored with. When that person is merged away, or its distinct id was
-- used personless before joining another person, queries map old_person_uuid to override_person_uuid so the
-- merged person counts once (docs/ingestion.md#merges). Chains are kept flat: a merge re-points rows that pointed at the
-- merged-away person, so one lookup always gives the surviving person.
CREATE TABLE person_overrides (
  project_id integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  old_person_uuid uuid NOT NULL,
  override_person_uuid uuid NOT NULL,
  -- 0 when written, +1 each time it is re-pointed (a later copy in ClickHouse replaces an older one).
  version bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, old_person_uuid),
  CHECK (old_person_uuid <> override_person_uuid)
);
-- Re-pointing on merge: the rows that point at the person being merged away.
CREATE INDEX person_overrides_override_idx ON person_overrides (project_id, override_person_uuid);

CREATE TABLE group_type_mappings (
  project_id integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  group_type text NOT NULL,
  -- At most five group types per project, indices handed out first come first served (docs/ingestion.md#groups).
  group_type_index smallint NOT NULL CHECK (group_type_index BETWEEN 0 AND 4),
  name_singular text,
  name_plural text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, group_type_index),
  CONSTRAINT group_type_mappings_project_id_group_type_key UNIQUE (project_id, group_type)
);

CREATE TABLE groups (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  project_id integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  group_type_index smallint NOT NULL CHECK (group_type_index BETWEEN 0 AND 4),
  group_key text NOT NULL,
  group_properties jsonb NOT NULL DEFAULT '{}',
  -- The timestamp of the first $groupidentify seen for the group.
  created_at timestamptz NOT NULL,
  -- +1 per write.
  version bigint NOT NULL DEFAULT 0,
  CONSTRAINT groups_project_id_type_key_key UNIQUE (project_id, group_type_index, group_key)
);
-- Management listing per group type, newest first.
CREATE INDEX groups_project_id_type_created_at_idx ON groups (project_id, group_type_index, created_at DESC);
