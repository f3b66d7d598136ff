-- Event and property definitions (PostHog's EventDefinition, PropertyDefinition and EventProperty): the names a
-- project's events and properties have been seen with, kept up to date by ingestion (services/ingestion
-- src/definitions.ts) and listed, edited and deleted by the management API (services/management/src/definitions).
-- docs/definitions.md describes what each column holds and when it changes.

CREATE TABLE event_definitions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (char_length(name) <= 400),
  -- When ingestion first stored the event (its own clock, not the event's timestamp).
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Ingestion's clock when it last stored the event, floored to the hour (ingestion writes it at most hourly).
  last_seen_at timestamptz,
  description text NOT NULL DEFAULT '' CHECK (char_length(description) <= 4000),
  tags text[] NOT NULL DEFAULT '{}',
  verified boolean NOT NULL DEFAULT false,
  verified_at timestamptz,
  verified_by_id integer REFERENCES users (id) ON DELETE SET NULL,
  hidden boolean NOT NULL DEFAULT false,
  updated_at timestamptz,
  updated_by_id integer REFERENCES users (id) ON DELETE SET NULL,
  CONSTRAINT event_definitions_project_name_key UNIQUE (project_id, name)
);

CREATE TABLE property_definitions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (char_length(name) <= 400),
  -- 1 event, 2 person, 3 group (with group_type_index).
  type smallint NOT NULL CHECK (type IN (1, 2, 3)),
  group_type_index smallint CHECK ((type = 3) = (group_type_index IS NOT NULL) AND group_type_index BETWEEN 0 AND 4),
  -- The first type detected from a value wins; NULL until a value with a type is seen. A PATCH may change it.
  property_type text CHECK (property_type IN ('DateTime', 'String', 'Numeric', 'Boolean', 'Duration')),
  is_numerical boolean NOT NULL DEFAULT false,
  description text NOT NULL DEFAULT '' CHECK (char_length(description) <= 4000),
  tags text[] NOT NULL DEFAULT '{}',
  verified boolean NOT NULL DEFAULT false,
  verified_at timestamptz,
  verified_by_id integer REFERENCES users (id) ON DELETE SET NULL,
  hidden boolean NOT NULL DEFAULT false,
  updated_at timestamptz,
  updated_by_id integer REFERENCES users (id) ON DELETE SET NULL
);
CREATE UNIQUE INDEX property_definitions_key ON property_definitions (project_id, type, (COALESCE(group_type_index, -1)), name);

-- Which event properties were seen on which events (`event_names` and `filter_by_event_names` of the listing).
CREATE TABLE event_properties (
  project_id integer NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  event text NOT NULL,
  property text NOT NULL,
  PRIMARY KEY (project_id, event, property)
);
