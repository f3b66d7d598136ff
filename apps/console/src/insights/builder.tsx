/**
 * The trend builder's controls: series (event and math), property filters, breakdown, interval and date range,
 * comparison, formula and visualisation. Each edits a {@link TrendForm} and hands back the changed copy.
 */
import type { Cohort, Interval, MathType } from '../api/types';
import { PropertyFilters } from '../components/property-filters';
import { Segmented } from '../components/segmented';
import { DATE_RANGES, INTERVALS, MATHS, PROPERTY_MATHS, newSeries, seriesLetter, type SeriesForm, type TrendForm, type Visualization } from './query';

/** Suggestions for the fields: names from the project's latest events, and its cohorts. */
export interface Suggestions {
  events: string[];
  properties: string[];
  cohorts: Cohort[];
}

const CUSTOM_RANGE = 'custom';

const VISUALIZATIONS: ReadonlyArray<{ value: Visualization; label: string }> = [
  { value: 'line', label: 'Line' },
  { value: 'bar', label: 'Bar' },
  { value: 'number', label: 'Number' },
  { value: 'table', label: 'Table' },
];

function replaceAt<T>(items: readonly T[], index: number, item: T): T[] {
  return items.map((existing, position) => (position === index ? item : existing));
}

export function Builder({ form, onChange, suggestions }: { form: TrendForm; onChange: (form: TrendForm) => void; suggestions: Suggestions }) {
  const set = <K extends keyof TrendForm>(key: K, value: TrendForm[K]) => onChange({ ...form, [key]: value });
  const presetRange = DATE_RANGES.find((range) => range.value === form.dateFrom && form.dateTo === '');

  return (
    <form class="builder" onSubmit={(event) => event.preventDefault()} aria-label="Trend builder">
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

      <fieldset>
        <legend>Series</legend>
        {form.series.map((series, index) => (
          <SeriesRow
            key={index}
            index={index}
            series={series}
            onChange={(next) => set('series', replaceAt(form.series, index, next))}
            onRemove={
              form.series.length > 1
                ? () =>
                    set(
                      'series',
                      form.series.filter((_, position) => position !== index),
                    )
                : undefined
            }
          />
        ))}
        <button type="button" class="secondary" onClick={() => set('series', [...form.series, newSeries('')])}>
          Add series
        </button>
      </fieldset>

      <fieldset>
        <legend>Filters</legend>
        {form.filters.length === 0 && <p class="muted">Every event counts.</p>}
        <PropertyFilters
          filters={form.filters}
          onChange={(filters) => set('filters', filters)}
          types={['event', 'person', 'cohort']}
          cohorts={suggestions.cohorts}
          label="Filter"
          keyList="property-keys"
        />
      </fieldset>

      <fieldset>
        <legend>Breakdown</legend>
        <div class="row">
          <label>
            <span>Property of</span>
            <select value={form.breakdownType} onChange={(event) => set('breakdownType', event.currentTarget.value as TrendForm['breakdownType'])}>
              <option value="event">the event</option>
              <option value="person">the person</option>
            </select>
          </label>
          <label class="grow">
            <span>Property</span>
            <input list="property-keys" value={form.breakdown} placeholder="none" onInput={(event) => set('breakdown', event.currentTarget.value)} />
          </label>
        </div>
      </fieldset>

      <fieldset>
        <legend>Time</legend>
        <div class="row">
          <label>
            <span>Date range</span>
            <select
              value={presetRange ? presetRange.value : CUSTOM_RANGE}
              onChange={(event) => {
                const value = event.currentTarget.value;
                const preset = DATE_RANGES.find((range) => range.value === value);
                if (preset) onChange({ ...form, dateFrom: preset.value, dateTo: '', interval: preset.interval });
                else
                  onChange({
                    ...form,
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
          <label>
            <span>Interval</span>
            <select value={form.interval} onChange={(event) => set('interval', event.currentTarget.value as Interval)}>
              {INTERVALS.map((interval) => (
                <option key={interval} value={interval}>
                  {interval}
                </option>
              ))}
            </select>
          </label>
        </div>
        {!presetRange && (
          <div class="row">
            <label>
              <span>From</span>
              <input value={form.dateFrom} onInput={(event) => set('dateFrom', event.currentTarget.value)} placeholder="2026-01-31 or -30d" />
            </label>
            <label>
              <span>To</span>
              <input value={form.dateTo} onInput={(event) => set('dateTo', event.currentTarget.value)} placeholder="now" />
            </label>
          </div>
        )}
        <label class="checkbox">
          <input type="checkbox" checked={form.compare} onChange={(event) => set('compare', event.currentTarget.checked)} />
          <span>Compare to the previous period</span>
        </label>
      </fieldset>

      <fieldset>
        <legend>Formula</legend>
        <label>
          <span class="visually-hidden">Formula</span>
          <input
            value={form.formula}
            placeholder={form.series.length > 1 ? 'e.g. A / B' : 'e.g. A * 100'}
            onInput={(event) => set('formula', event.currentTarget.value)}
            aria-describedby="formula-help"
          />
        </label>
        <p id="formula-help" class="muted">
          Letters are the series ({form.series.map((_, index) => seriesLetter(index)).join(', ')}); + − × ÷ and parentheses.
        </p>
      </fieldset>

      <fieldset>
        <legend>Show as</legend>
        <Segmented name="visualization" label="Show as" options={VISUALIZATIONS} value={form.visualization} onChange={(kind) => set('visualization', kind)} />
      </fieldset>
    </form>
  );
}

function SeriesRow({
  index,
  series,
  onChange,
  onRemove,
}: {
  index: number;
  series: SeriesForm;
  onChange: (series: SeriesForm) => void;
  onRemove?: () => void;
}) {
  const letter = seriesLetter(index);
  const set = <K extends keyof SeriesForm>(key: K, value: SeriesForm[K]) => onChange({ ...series, [key]: value });
  return (
    <div class="series-row" role="group" aria-label={`Series ${letter}`}>
      <span class="series-letter" aria-hidden="true">
        {letter}
      </span>
      <label class="grow">
        <span>Event</span>
        <input list="event-names" value={series.event} placeholder="All events" onInput={(event) => set('event', event.currentTarget.value)} />
      </label>
      <label>
        <span>Measure</span>
        <select value={series.math} onChange={(event) => set('math', event.currentTarget.value as MathType)}>
          {MATHS.map((math) => (
            <option key={math.value} value={math.value}>
              {math.label}
            </option>
          ))}
        </select>
      </label>
      {PROPERTY_MATHS.includes(series.math) && (
        <label>
          <span>Of property</span>
          <input list="property-keys" value={series.mathProperty} required onInput={(event) => set('mathProperty', event.currentTarget.value)} />
        </label>
      )}
      {series.math === 'unique_group' && (
        <label>
          <span>Group type</span>
          <input type="number" min={0} max={4} value={series.groupTypeIndex} onInput={(event) => set('groupTypeIndex', Number(event.currentTarget.value))} />
        </label>
      )}
      {onRemove && (
        <button type="button" class="icon" onClick={onRemove} aria-label={`Remove series ${letter}`}>
          ×
        </button>
      )}
    </div>
  );
}
