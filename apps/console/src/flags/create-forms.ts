/**
 * The create forms beside feature flags — cohorts, early access features, surveys — as the console edits them
 * (every value as typed) and the bodies the API takes. A form checks only what the API lets through (a cohort's
 * name, its filter rows, a survey's question); the rest is the API's to refuse, and either way the problem names
 * the field it is about (`attr`, as in the API's errors) so the form shows it there.
 */
import type { CohortCreate, EarlyAccessFeatureCreate, SurveyCreate } from '../api/types';
import { filterProblem, newFilter, toApiFilters, type FilterForm } from '../filters/property-filter';

/** A problem with one field of a form, shaped like the API's validation errors. */
export interface FieldProblem {
  attr: string;
  detail: string;
}

/** A form's body, or the first problem found before sending it. */
export type Checked<Body> = { body: Body } | { problem: FieldProblem };

const trimmed = (text: string): string | undefined => (text.trim() === '' ? undefined : text.trim());

export interface CohortForm {
  name: string;
  description: string;
  /** By person properties, or a fixed list of distinct ids. */
  kind: 'properties' | 'list';
  filters: FilterForm[];
  /** Distinct ids separated by commas or line breaks. */
  distinctIds: string;
}

export function newCohortForm(): CohortForm {
  return { name: '', description: '', kind: 'properties', filters: [newFilter('person')], distinctIds: '' };
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
  const values = toApiFilters(form.filters);
  if (values.length === 0) return { problem: { attr: 'filters', detail: 'Add a condition on a person property.' } };
  return { body: { ...common, is_static: false, filters: { properties: { type: 'AND', values } } } };
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
