-- Survey responses hidden from results: the uuid of a `survey sent` event, per survey. Results read with
-- `exclude_archived=true` leave these events out; unarchiving deletes the row.
CREATE TABLE survey_response_archives (
  survey_id uuid NOT NULL REFERENCES surveys (id) ON DELETE CASCADE,
  response_uuid uuid NOT NULL,
  archived_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (survey_id, response_uuid)
);
