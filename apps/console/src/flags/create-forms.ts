/**
 * The create forms beside feature flags — cohorts, early access features, surveys — as the console edits them
 * (every value as typed) and the bodies the API takes. A form checks only what the API lets through (a cohort's
 * name, its filter rows, a survey's question); the rest is the API's to refuse, and either way the problem names
 * the field it is about (`attr`, as in the API's errors) so the form shows it there.
 */
import type { BehavioralFilter, CohortCreate, EarlyAccessFeatureCreate, SurveyCreate } from '../api/types';
import { filterProblem, newFilter, toApiFilters, type FilterForm } from '../filters/property-filter';

/** A problem with one field of a form, shaped like the API's validation errors. */
export interface FieldProblem {
  attr: string;
  detail: string;
}

/** A form's body, or the first problem found before sending it. */
export type Checked<Body> = { body: Body } | { problem: FieldProblem };

const trimmed = (text: string): string | undefined => (text.trim() === '' ? undefined : text.trim());

/** What a behavioral criterion asks of a person's events (PostHog's kinds the API calculates). */
export const BEHAVIOR_KINDS = [
  { value: 'performed_event', label: 'performed' },
  { value: 'performed_event_multiple', label: 'performed a number of times' },
  { value: 'performed_event_first_time', label: 'performed for the first time' },
  { value: 'stopped_performing_event', label: 'stopped performing' },
  { value: 'restarted_performing_event', label: 'restarted performing' },
] as const;
export type BehaviorKind = (typeof BEHAVIOR_KINDS)[number]['value'];
export const WINDOW_UNITS = ['day', 'week', 'month', 'year'] as const;
export const COUNT_OPERATORS = [
  { value: 'gte', label: 'at least' },
  { value: 'exact', label: 'exactly' },
  { value: 'lte', label: 'at most' },
] as const;

/** One behavioral criterion as typed: the event, what the person did with it, over which window. */
export interface BehaviorForm {
  /** "did not" when true. */
  negation: boolean;
  kind: BehaviorKind;
  event: string;
  /** The window: this many units back from now. */
  window: string;
  unit: (typeof WINDOW_UNITS)[number];
  /** performed a number of times: how the count compares. */
  operator: (typeof COUNT_OPERATORS)[number]['value'];
  count: string;
  /** stopped / restarted: the recent window, in days. */
  recentDays: string;
}

export function newBehavior(): BehaviorForm {
  return { negation: false, kind: 'performed_event', event: '', window: '30', unit: 'day', operator: 'gte', count: '2', recentDays: '7' };
}

export interface CohortForm {
  name: string;
  description: string;
  /** Dynamic (person properties and what persons did), or a fixed list of distinct ids. */
  kind: 'properties' | 'list';
  /** Whether a person must meet all the conditions or any of them. */
  match: 'AND' | 'OR';
  filters: FilterForm[];
  behaviors: BehaviorForm[];
  /** Distinct ids separated by commas or line breaks. */
  distinctIds: string;
}

export function newCohortForm(): CohortForm {
  return { name: '', description: '', kind: 'properties', match: 'AND', filters: [newFilter('person')], behaviors: [], distinctIds: '' };
}

const wholeNumber = (text: string): number | undefined => (/^\s*[1-9][0-9]{0,3}\s*$/.test(text) ? Number(text) : undefined);

/** A behavioral criterion's API filter, or the problem with it. */
function behaviorFilter(form: BehaviorForm): { filter: BehavioralFilter } | { problem: string } {
  const event = form.event.trim();
  if (event === '') return { problem: 'Name the event of each behavior.' };
  const window = wholeNumber(form.window);
  if (window === undefined) return { problem: `The window of ${event} must be a whole number from 1 to 9999.` };
  const filter: BehavioralFilter = { type: 'behavioral', key: event, event_type: 'events', value: form.kind, time_value: window, time_interval: form.unit };
  if (form.negation) filter.negation = true;
  if (form.kind === 'performed_event_multiple') {
    const count = wholeNumber(form.count);
    if (count === undefined) return { problem: `The count of ${event} must be a whole number from 1 to 9999.` };
    Object.assign(filter, { operator: form.operator, operator_value: count });
  }
  if (form.kind === 'stopped_performing_event' || form.kind === 'restarted_performing_event') {
    const recent = wholeNumber(form.recentDays);
    if (recent === undefined) return { problem: `The recent window of ${event} must be a whole number of days from 1 to 9999.` };
    Object.assign(filter, { seq_time_value: recent, seq_time_interval: 'day' });
  }
  return { filter };
}

export function cohortBody(form: CohortForm): Checked<CohortCreate> {
  const name = trimmed(form.name);
  if (name === undefined) return { problem: { attr: 'name', detail: 'Name the cohort.' } };
  const common = { name, description: trimmed(form.description) };
  if (form.kind === 'list') {
    const ids = form.distinctIds
      .split(/[\n,]/)
      .map((id) => id.trim())
      .filter((id) => id !== '');
    return { body: { ...common, is_static: true, distinct_ids: [...new Set(ids)] } };
  }
  const problem = form.filters.map(filterProblem).find((text) => text !== null);
  if (problem !== undefined) return { problem: { attr: 'filters', detail: problem } };
  const behaviors: BehavioralFilter[] = [];
  for (const behavior of form.behaviors) {
    const checked = behaviorFilter(behavior);
    if ('problem' in checked) return { problem: { attr: 'filters', detail: checked.problem } };
    behaviors.push(checked.filter);
  }
  const values = [...toApiFilters(form.filters), ...behaviors];
  if (values.length === 0) return { problem: { attr: 'filters', detail: 'Add a condition on a person property or a behavior.' } };
  return { body: { ...common, is_static: false, filters: { properties: { type: form.match, values } } } };
}

/** PostHog's stages of an early access feature, in order. */
export const FEATURE_STAGES = ['draft', 'concept', 'alpha', 'beta', 'general-availability', 'archived'] as const;

export interface FeatureForm {
  name: string;
  description: string;
  stage: string;
  documentationUrl: string;
  /** The key of the flag the server creates for the feature; empty: made from the name. */
  flagKey: string;
}

export function newFeatureForm(): FeatureForm {
  return { name: '', description: '', stage: 'beta', documentationUrl: '', flagKey: '' };
}

export function featureBody(form: FeatureForm): { body: EarlyAccessFeatureCreate } {
  return {
    body: {
      name: form.name.trim(),
      description: trimmed(form.description),
      stage: form.stage,
      documentation_url: trimmed(form.documentationUrl),
      feature_flag_key: trimmed(form.flagKey),
    },
  };
}

/** How posthog-js shows a survey: its own popover, a widget the site opens, or only through the API. */
export const SURVEY_TYPES = [
  { value: 'popover', label: 'Popover' },
  { value: 'widget', label: 'Feedback widget' },
  { value: 'api', label: 'API (your own UI)' },
] as const;

export interface SurveyForm {
  name: string;
  description: string;
  type: string;
  /** One open question. */
  question: string;
  /** Runs from now on, or stays a draft. */
  launch: boolean;
}

export function newSurveyForm(): SurveyForm {
  return { name: '', description: '', type: 'popover', question: '', launch: false };
}

/** `now` is when a launched survey starts. */
export function surveyBody(form: SurveyForm, now = new Date()): Checked<SurveyCreate> {
  const question = trimmed(form.question);
  if (question === undefined) return { problem: { attr: 'questions', detail: 'Write the question to ask.' } };
  return {
    body: {
      name: form.name.trim(),
      description: trimmed(form.description),
      type: form.type,
      questions: [{ type: 'open', question }],
      start_date: form.launch ? now.toISOString() : null,
    },
  };
}
