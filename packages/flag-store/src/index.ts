export { onDefinitionsChanged, writeDefinitions } from './definitions';
export { definitionVersions, loadDefinitions, type ProjectDefinitions } from './reads';
export { ACTIVE_SURVEY, selectSurveys, surveyFields, type SurveyRow } from './surveys';
export { addCohortMembers, cohortMemberCountSql, staticCohortMemberships } from './cohort-members';
