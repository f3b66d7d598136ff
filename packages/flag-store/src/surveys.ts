/** Survey rows as both the management API (`/api/projects/:id/surveys/`) and decide (`/api/surveys/?token=`) read them. */
export interface SurveyRow {
  id: string;
  name: string;
  description: string;
  type: string;
  /** As the management API stored them (its schema: a list of objects; objects or null). */
  questions: Array<Record<string, unknown>>;
  appearance: Record<string, unknown> | null;
  conditions: Record<string, unknown> | null;
  start_date: Date | null;
  end_date: Date | null;
  archived: boolean;
  created_at: Date;
  targeting_flag_id: number | null;
  targeting_flag_key: string | null;
  targeting_flag_filters: unknown;
  linked_flag_id: number | null;
  linked_flag_key: string | null;
}

/** A launched, unfinished survey (table alias `s`): what decide serves. */
export const ACTIVE_SURVEY = 'NOT s.deleted AND NOT s.archived AND s.start_date IS NOT NULL AND (s.end_date IS NULL OR s.end_date > now())';

/** `SurveyRow`s of project $1 (table alias `s`) matching `where`, with their targeting and linked flags. */
export function selectSurveys(where: string): string {
  return `SELECT s.id, s.name, s.description, s.type, s.questions, s.appearance, s.conditions, s.start_date, s.end_date, s.archived,
      s.created_at, t.id AS targeting_flag_id, t.key AS targeting_flag_key, t.filters AS targeting_flag_filters, l.id AS linked_flag_id,
      l.key AS linked_flag_key
    FROM surveys s LEFT JOIN feature_flags t ON t.id = s.targeting_flag_id LEFT JOIN feature_flags l ON l.id = s.linked_flag_id
   WHERE s.project_id = $1 AND ${where}`;
}

/** The fields every survey body starts with: the row's own, its dates as ISO text. */
export type SurveyBase = Pick<SurveyRow, 'id' | 'name' | 'description' | 'type' | 'questions' | 'appearance' | 'conditions'> & {
  start_date: string | null;
  end_date: string | null;
};

/** The fields every survey body starts with, as PostHog serializes them. */
export function surveyFields(row: SurveyRow): SurveyBase {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    type: row.type,
    questions: row.questions,
    appearance: row.appearance,
    conditions: row.conditions,
    start_date: row.start_date?.toISOString() ?? null,
    end_date: row.end_date?.toISOString() ?? null,
  };
}
