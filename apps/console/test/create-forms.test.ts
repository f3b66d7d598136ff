import { cohortBody, featureBody, newCohortForm, newFeatureForm, newSurveyForm, surveyBody } from '../src/flags/create-forms';
import { newFilter } from '../src/filters/property-filter';

describe('the cohort form', () => {
  const plan = { ...newFilter('person'), key: ' plan ', value: 'pro, enterprise' };

  it('sends person conditions as one AND group, values as typed', () => {
    expect(cohortBody({ ...newCohortForm(), name: ' Paying ', description: '', filters: [plan, newFilter('person')] })).toEqual({
      body: {
        name: 'Paying',
        is_static: false,
        filters: { properties: { type: 'AND', values: [{ type: 'person', key: 'plan', operator: 'exact', value: ['pro', 'enterprise'] }] } },
      },
    });
  });

  it('sends a fixed list as distinct ids, each once, split at commas and line breaks', () => {
    expect(cohortBody({ ...newCohortForm(), name: 'Testers', description: 'QA', kind: 'list', distinctIds: 'a-1, b-2\n\n a-1 \nc-3,' })).toEqual({
      body: { name: 'Testers', description: 'QA', is_static: true, distinct_ids: ['a-1', 'b-2', 'c-3'] },
    });
  });

  it('names the field of what it cannot send', () => {
    expect(cohortBody({ ...newCohortForm(), name: '  ', filters: [plan] })).toEqual({ problem: { attr: 'name', detail: 'Name the cohort.' } });
    expect(cohortBody({ ...newCohortForm(), name: 'Paying' })).toEqual({ problem: { attr: 'filters', detail: 'Add a condition on a person property.' } });
    expect(cohortBody({ ...newCohortForm(), name: 'Paying', filters: [{ ...plan, operator: 'gt', value: 'lots' }] })).toEqual({
      problem: { attr: 'filters', detail: 'Filter on plan: lots is not a number.' },
    });
  });
});

describe('the early access feature form', () => {
  it('leaves out what is empty, so the server makes the flag key from the name', () => {
    expect(featureBody({ ...newFeatureForm(), name: ' Dark mode ', stage: 'alpha', flagKey: ' ' })).toEqual({
      body: { name: 'Dark mode', stage: 'alpha', description: undefined, documentation_url: undefined, feature_flag_key: undefined },
    });
    expect(featureBody({ ...newFeatureForm(), name: 'Dark mode', documentationUrl: 'https://docs.example/dark', flagKey: 'dark' }).body).toMatchObject({
      stage: 'beta',
      documentation_url: 'https://docs.example/dark',
      feature_flag_key: 'dark',
    });
  });

  it('sends an empty name for the API to refuse by its field', () => {
    expect(featureBody(newFeatureForm())).toMatchObject({ body: { name: '' } });
  });
});

describe('the survey form', () => {
  const now = new Date('2026-11-27T10:00:00Z');

  it('asks one open question, as a draft or running from now', () => {
    const form = { ...newSurveyForm(), name: 'Friction', question: ' What stopped you? ' };
    expect(surveyBody(form, now)).toEqual({
      body: { name: 'Friction', description: undefined, type: 'popover', questions: [{ type: 'open', question: 'What stopped you?' }], start_date: null },
    });
    expect(surveyBody({ ...form, type: 'widget', launch: true }, now)).toMatchObject({ body: { type: 'widget', start_date: '2026-11-27T10:00:00.000Z' } });
  });

  it('needs the question', () => {
    expect(surveyBody({ ...newSurveyForm(), name: 'Friction' }, now)).toEqual({ problem: { attr: 'questions', detail: 'Write the question to ask.' } });
  });
});
