import type { CorrelationEntry } from '../src/api/types';
import {
  correlationName,
  correlationProblem,
  correlationRequest,
  correlationSides,
  defaultCorrelationForm,
  type CorrelationForm,
} from '../src/insights/correlation';

const form = (changes: Partial<CorrelationForm>): CorrelationForm => ({ ...defaultCorrelationForm(), ...changes });

describe('funnel correlation requests', () => {
  it('sends the non-empty steps in order with the window, range and what to correlate', () => {
    expect(correlationRequest(form({ steps: [' $pageview ', '', 'signup', 'purchase'], windowInterval: 2, windowUnit: 'hour', dateFrom: '-7d' }))).toEqual({
      events: [
        { id: '$pageview', type: 'events', order: 0, name: '$pageview' },
        { id: 'signup', type: 'events', order: 1, name: 'signup' },
        { id: 'purchase', type: 'events', order: 2, name: 'purchase' },
      ],
      date_from: '-7d',
      funnel_window_interval: 2,
      funnel_window_interval_unit: 'hour',
      funnel_correlation_type: 'events',
    });
  });

  it('names person properties or events as lists, by the correlation type', () => {
    const steps = ['a', 'b'];
    expect(correlationRequest(form({ steps, type: 'properties', names: '$browser, plan,' })).funnel_correlation_names).toEqual(['$browser', 'plan']);
    const withProperties = correlationRequest(form({ steps, type: 'event_with_properties', names: 'purchase' }));
    expect(withProperties.funnel_correlation_event_names).toEqual(['purchase']);
    expect(withProperties.funnel_correlation_names).toBeUndefined();
    expect(correlationRequest(form({ steps, names: 'ignored' })).funnel_correlation_names).toBeUndefined();
  });

  it('says what the form lacks', () => {
    expect(correlationProblem(form({ steps: ['a', ' '] }))).toBe('A funnel needs at least two steps with an event.');
    expect(correlationProblem(form({ steps: ['a', 'b'], windowInterval: 0 }))).toBe('The conversion window is a whole number of at least 1.');
    expect(correlationProblem(form({ steps: ['a', 'b'], type: 'properties' }))).toBe('Name the person properties to correlate, or $all.');
    expect(correlationProblem(form({ steps: ['a', 'b'], type: 'event_with_properties', names: ' , ' }))).toBe('Name the events whose properties to correlate.');
    expect(correlationProblem(form({ steps: ['a', 'b'], type: 'properties', names: '$all' }))).toBeNull();
  });
});

describe('funnel correlation answers', () => {
  const entry = (name: string, type: CorrelationEntry['correlation_type']): CorrelationEntry => ({
    event: { event: name },
    success_count: 1,
    failure_count: 1,
    odds_ratio: 1,
    correlation_type: type,
  });

  it('splits the entries into the two sides, keeping the answer’s order', () => {
    const sides = correlationSides([entry('a', 'success'), entry('b', 'failure'), entry('c', 'success')]);
    expect(sides.success.map((item) => item.event.event)).toEqual(['a', 'c']);
    expect(sides.failure.map((item) => item.event.event)).toEqual(['b']);
  });

  it('reads property names as property = value', () => {
    expect(correlationName('signup')).toBe('signup');
    expect(correlationName('$browser::Chrome')).toBe('$browser = Chrome');
    expect(correlationName('purchase::plan::pro')).toBe('purchase · plan = pro');
  });
});
