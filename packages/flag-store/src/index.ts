export { onDefinitionsChanged, writeDefinitions } from './definitions';
export { selectSurveys, surveyFields, type SurveyRow } from './surveys';
