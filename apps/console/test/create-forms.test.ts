import { cohortBody, featureBody, newBehavior, newCohortForm, newFeatureForm, newSurveyForm, surveyBody } from '../src/flags/create-forms';
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

  it('sends behaviors beside person conditions, in an AND or OR group, each with the fields its kind needs', () => {
    const body = cohortBody({
      ...newCohortForm(),
      name: 'Lapsed buyers',
      match: 'OR',
      filters: [plan],
      behaviors: [
        { ...newBehavior(), event: ' purchase ', kind: 'performed_event_multiple', operator: 'gte', count: '3', window: '4', unit: 'week' },
        { ...newBehavior(), event: 'purchase', kind: 'stopped_performing_event', recentDays: '14', negation: true },
        { ...newBehavior(), event: 'signup', kind: 'performed_event_first_time', count: 'ignored' },
      ],
    });
    expect(body).toEqual({
      body: {
        name: 'Lapsed buyers',
        is_static: false,
        filters: {
          properties: {
            type: 'OR',
            values: [
              { type: 'person', key: 'plan', operator: 'exact', value: ['pro', 'enterprise'] },
              {
                type: 'behavioral',
                key: 'purchase',
                event_type: 'events',
                value: 'performed_event_multiple',
                time_value: 4,
                time_interval: 'week',
                operator: 'gte',
                operator_value: 3,
              },
              {
                type: 'behavioral',
                key: 'purchase',
                event_type: 'events',
                value: 'stopped_performing_event',
                time_value: 30,
                time_interval: 'day',
                negation: true,
                seq_time_value: 14,
                seq_time_interval: 'day',
              },
              { type: 'behavioral', key: 'signup', event_type: 'events', value: 'performed_event_first_time', time_value: 30, time_interval: 'day' },
            ],
          },
        },
      },
    });
    // Behaviors alone make a cohort; a blank person row is left out.
    expect(cohortBody({ ...newCohortForm(), name: 'Buyers', behaviors: [{ ...newBehavior(), event: 'purchase' }] })).toMatchObject({
      body: { filters: { properties: { type: 'AND', values: [{ type: 'behavioral', value: 'performed_event' }] } } },
    });
  });

  it('names what is missing in a behavior', () => {
    const named = (behavior: Partial<ReturnType<typeof newBehavior>>) =>
      cohortBody({ ...newCohortForm(), name: 'B', behaviors: [{ ...newBehavior(), event: 'buy', ...behavior }] });
    expect(named({ event: ' ' })).toEqual({ problem: { attr: 'filters', detail: 'Name the event of each behavior.' } });
    expect(named({ window: '0' })).toEqual({ problem: { attr: 'filters', detail: 'The window of buy must be a whole number from 1 to 9999.' } });
    expect(named({ kind: 'performed_event_multiple', count: 'x' })).toEqual({
      problem: { attr: 'filters', detail: 'The count of buy must be a whole number from 1 to 9999.' },
    });
    expect(named({ kind: 'restarted_performing_event', recentDays: '' })).toEqual({
      problem: { attr: 'filters', detail: 'The recent window of buy must be a whole number of days from 1 to 9999.' },
    });
  });

  it('names the field of what it cannot send', () => {
    expect(cohortBody({ ...newCohortForm(), name: '  ', filters: [plan] })).toEqual({ problem: { attr: 'name', detail: 'Name the cohort.' } });
    expect(cohortBody({ ...newCohortForm(), name: 'Paying' })).toEqual({
      problem: { attr: 'filters', detail: 'Add a condition on a person property or a behavior.' },
    });
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
