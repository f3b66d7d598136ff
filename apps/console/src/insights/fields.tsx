/**
 * Controls every insight builder shares: the suggestion lists, the filters on every event, the breakdown and the
 * date range. Each edits a
 * part of the caller's form and hands back that part changed.
 */
import type { ComponentChildren } from 'preact';
import type { Cohort, Interval } from '../api/types';
import { PropertyFilters } from '../components/property-filters';
import type { FilterForm } from '../filters/property-filter';
import { DATE_RANGES, INTERVALS, type BreakdownValue, type RangeValue } from './query';

/** Suggestions for the fields: names from the project's latest events, and its cohorts. */
export interface Suggestions {
  events: string[];
  properties: string[];
  cohorts: Cohort[];
}

export const NO_SUGGESTIONS: Suggestions = { events: [], properties: [], cohorts: [] };

/** The insight's filters on every event it counts (event, person or cohort); `unfiltered` says what none means. */
export function FiltersFieldset({
  filters,
  onChange,
  cohorts,
  unfiltered,
}: {
  filters: FilterForm[];
  onChange: (filters: FilterForm[]) => void;
  cohorts: readonly Cohort[];
  unfiltered: string;
}) {
  return (
    <fieldset>
      <legend>Filters</legend>
      {filters.length === 0 && <p class="muted">{unfiltered}</p>}
      <PropertyFilters filters={filters} onChange={onChange} types={['event', 'person', 'cohort']} cohorts={cohorts} label="Filter" keyList="property-keys" />
    </fieldset>
  );
}

/** The `<datalist>`s the event (`event-names`) and property (`property-keys`) fields suggest from. */
export function SuggestionLists({ suggestions }: { suggestions: Suggestions }) {
  return (
    <>
      <datalist id="event-names">
        {suggestions.events.map((name) => (
          <option key={name} value={name} />
        ))}
      </datalist>
      <datalist id="property-keys">
        {suggestions.properties.map((name) => (
          <option key={name} value={name} />
        ))}
      </datalist>
    </>
  );
}

export function BreakdownFields({ value, onChange }: { value: BreakdownValue; onChange: (value: BreakdownValue) => void }) {
  return (
    <fieldset>
      <legend>Breakdown</legend>
      <div class="row">
        <label>
          <span>Property of</span>
          <select
            value={value.breakdownType}
            onChange={(event) => onChange({ ...value, breakdownType: event.currentTarget.value as BreakdownValue['breakdownType'] })}
          >
            <option value="event">the event</option>
            <option value="person">the person</option>
          </select>
        </label>
        <label class="grow">
          <span>Property</span>
          <input
            list="property-keys"
            value={value.breakdown}
            placeholder="none"
            onInput={(event) => onChange({ ...value, breakdown: event.currentTarget.value })}
          />
        </label>
      </div>
    </fieldset>
  );
}

const CUSTOM_RANGE = 'custom';

/** The date range (a preset, which also sets the interval, or custom dates), the interval, and the caller's extras. */
export function TimeFields({
  value,
  onChange,
  interval = true,
  children,
}: {
  value: RangeValue;
  onChange: (value: RangeValue) => void;
  /** Whether the interval applies (and is shown). */
  interval?: boolean;
  children?: ComponentChildren;
}) {
  const presetRange = DATE_RANGES.find((range) => range.value === value.dateFrom && value.dateTo === '');
  return (
    <fieldset>
      <legend>Time</legend>
      <div class="row">
        <label>
          <span>Date range</span>
          <select
            value={presetRange ? presetRange.value : CUSTOM_RANGE}
            onChange={(event) => {
              const chosen = event.currentTarget.value;
              const preset = DATE_RANGES.find((range) => range.value === chosen);
              if (preset) onChange({ dateFrom: preset.value, dateTo: '', interval: preset.interval });
              else
                onChange({
                  ...value,
                  dateFrom: new Date(Date.now() - 7 * 86_400_000).toISOString().slice(0, 10),
                  dateTo: new Date().toISOString().slice(0, 10),
                });
            }}
          >
            {DATE_RANGES.map((range) => (
              <option key={range.value} value={range.value}>
                {range.label}
              </option>
            ))}
            <option value={CUSTOM_RANGE}>Custom dates…</option>
          </select>
        </label>
        {interval && (
          <label>
            <span>Interval</span>
            <select value={value.interval} onChange={(event) => onChange({ ...value, interval: event.currentTarget.value as Interval })}>
              {INTERVALS.map((choice) => (
                <option key={choice} value={choice}>
                  {choice}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      {!presetRange && (
        <div class="row">
          <label>
            <span>From</span>
            <input value={value.dateFrom} onInput={(event) => onChange({ ...value, dateFrom: event.currentTarget.value })} placeholder="2026-01-31 or -30d" />
          </label>
          <label>
            <span>To</span>
            <input value={value.dateTo} onInput={(event) => onChange({ ...value, dateTo: event.currentTarget.value })} placeholder="now" />
          </label>
        </div>
      )}
      {children}
    </fieldset>
  );
}
