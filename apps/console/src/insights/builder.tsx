/**
 * The trend builder's controls: series (event and math), property filters, breakdown, interval and date range,
 * comparison, formula and visualisation. Each edits a {@link TrendForm} and hands back the changed copy.
 */
import type { MathType } from '../api/types';
import { PropertyFilters } from '../components/property-filters';
import { Segmented } from '../components/segmented';
import { BreakdownFields, SuggestionLists, TimeFields, type Suggestions } from './fields';
import { MATHS, PROPERTY_MATHS, newSeries, seriesLetter, type SeriesForm, type TrendForm, type Visualization } from './query';

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

  return (
    <form class="builder" onSubmit={(event) => event.preventDefault()} aria-label="Trend builder">
      <SuggestionLists suggestions={suggestions} />

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

      <BreakdownFields value={form} onChange={(breakdown) => onChange({ ...form, ...breakdown })} />

      <TimeFields value={form} onChange={(range) => onChange({ ...form, ...range })}>
        <label class="checkbox">
          <input type="checkbox" checked={form.compare} onChange={(event) => set('compare', event.currentTarget.checked)} />
          <span>Compare to the previous period</span>
        </label>
      </TimeFields>

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
