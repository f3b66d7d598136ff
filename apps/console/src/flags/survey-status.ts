import type { Survey } from '../api/types';

/** Where a survey stands, from its dates: draft before it starts, running, completed once it ends; or archived. */
export function surveyStatus(survey: Survey, now = Date.now()): string {
  if (survey.archived) return 'Archived';
  if (!survey.start_date || Date.parse(survey.start_date) > now) return 'Draft';
  if (survey.end_date && Date.parse(survey.end_date) <= now) return 'Completed';
  return 'Running';
}
