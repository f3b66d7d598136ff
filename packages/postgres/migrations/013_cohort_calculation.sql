-- Computed membership of dynamic cohorts, in PostHog's shape: every calculation writes its members under a new
-- version, and only once they are all written does `people_version` move to it, in the same transaction that
-- removes the other versions. Readers take `version = people_version`, so they see the previous members until
-- a calculation completes, and a calculation killed half-way leaves rows that no reader ever sees (the next one
-- removes them). Static cohorts keep their members at version 0, which their `people_version` never leaves.
ALTER TABLE cohorts
  ADD COLUMN people_version integer NOT NULL DEFAULT 0,
  -- The version the latest calculation started writing; a calculation only publishes while it is still the latest.
  ADD COLUMN pending_version integer NOT NULL DEFAULT 0,
  ADD COLUMN is_calculating boolean NOT NULL DEFAULT false,
  ADD COLUMN calculation_started_at timestamptz,
  ADD COLUMN last_calculation timestamptz,
  ADD COLUMN errors_calculating integer NOT NULL DEFAULT 0,
  ADD COLUMN last_error_at timestamptz,
  ADD COLUMN last_error text;

ALTER TABLE cohort_people ADD COLUMN version integer NOT NULL DEFAULT 0;
ALTER TABLE cohort_people DROP CONSTRAINT cohort_people_pkey;
ALTER TABLE cohort_people ADD PRIMARY KEY (cohort_id, version, person_id);

-- The scheduled calculation's candidates: dynamic, live cohorts, least recently calculated first.
CREATE INDEX cohorts_calculation_idx ON cohorts (last_calculation NULLS FIRST) WHERE NOT is_static AND NOT deleted;
