/**
 * The funnel correlation form and its request: the legacy funnel fields of `insights/funnel/correlation/`
 * (docs/insights.md, "Funnel correlation"), and the answer split into what goes with converting and what goes
 * with dropping off.
 */
import type { CorrelationEntry, CorrelationRequest, CorrelationType, FunnelWindowUnit } from '../api/types';

export interface CorrelationForm {
  /** Event names of the steps, in order (two or more). */
  steps: string[];
  windowInterval: number;
  windowUnit: FunnelWindowUnit;
  dateFrom: string;
  type: CorrelationType;
  /** Comma-separated: person properties (`properties`, `$all` for every one) or events (`event_with_properties`). */
  names: string;
}

export const WINDOW_UNITS: readonly FunnelWindowUnit[] = ['minute', 'hour', 'day', 'week', 'month'];

export const CORRELATION_TYPES: ReadonlyArray<{ value: CorrelationType; label: string }> = [
  { value: 'events', label: 'Events' },
  { value: 'properties', label: 'Person properties' },
  { value: 'event_with_properties', label: 'Properties of events' },
];

export function defaultCorrelationForm(): CorrelationForm {
  return { steps: ['$pageview', ''], windowInterval: 14, windowUnit: 'day', dateFrom: '-30d', type: 'events', names: '' };
}

function nameList(text: string): string[] {
  return text
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

/** What the form lacks before it can be sent, or null. */
export function correlationProblem(form: CorrelationForm): string | null {
  if (form.steps.filter((step) => step.trim() !== '').length < 2) return 'A funnel needs at least two steps with an event.';
  if (!Number.isInteger(form.windowInterval) || form.windowInterval < 1) return 'The conversion window is a whole number of at least 1.';
  if (form.type === 'properties' && nameList(form.names).length === 0) return 'Name the person properties to correlate, or $all.';
  if (form.type === 'event_with_properties' && nameList(form.names).length === 0) return 'Name the events whose properties to correlate.';
  return null;
}

export function correlationRequest(form: CorrelationForm): CorrelationRequest {
  const request: CorrelationRequest = {
    events: form.steps
      .map((step) => step.trim())
      .filter((step) => step !== '')
      .map((id, order) => ({ id, type: 'events', order, name: id })),
    date_from: form.dateFrom,
    funnel_window_interval: form.windowInterval,
    funnel_window_interval_unit: form.windowUnit,
    funnel_correlation_type: form.type,
  };
  if (form.type === 'properties') request.funnel_correlation_names = nameList(form.names);
  if (form.type === 'event_with_properties') request.funnel_correlation_event_names = nameList(form.names);
  return request;
}

/** The answer's entries, those that go with converting and those that go with dropping off, in the answer's order. */
export function correlationSides(events: readonly CorrelationEntry[]): { success: CorrelationEntry[]; failure: CorrelationEntry[] } {
  return { success: events.filter((entry) => entry.correlation_type === 'success'), failure: events.filter((entry) => entry.correlation_type === 'failure') };
}

/** `<event>::<property>::<value>` and `<property>::<value>` names, readable: `purchase · plan = pro`. */
export function correlationName(name: string): string {
  const parts = name.split('::');
  if (parts.length === 3) return `${parts[0]} · ${parts[1]} = ${parts[2]}`;
  if (parts.length === 2) return `${parts[0]} = ${parts[1]}`;
  return name;
}
