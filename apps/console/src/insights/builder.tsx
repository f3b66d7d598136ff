/**
 * The trend builder's controls: the kind (trends, stickiness, lifecycle), series (event and math), property
 * filters, breakdown, interval and date range, comparison, formula and visualisation — each only where the kind
 * takes it. Each edits a {@link TrendForm} and hands back the changed copy.
 */
import type { MathType } from '../api/types';
import { Segmented } from '../components/segmented';
import { BreakdownFields, FiltersFieldset, SuggestionLists, TimeFields, type Suggestions } from './fields';
import {
  KIND_VISUALIZATIONS,
  MATHS,
  PROPERTY_MATHS,
  TREND_KINDS,
  newSeries,
  seriesLetter,
  takesBreakdown,
  takesCompare,
  withKind,
  type SeriesForm,
  type TrendForm,
  type Visualization,
} from './query';

const VISUALIZATION_LABELS: ReadonlyArray<{ value: Visualization; label: string }> = [
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
  const kind = form.insight;
  // Lifecycle reads one series: the first.
  const shown = kind === 'LIFECYCLE' ? form.series.slice(0, 1) : form.series;
  const visualizations = VISUALIZATION_LABELS.filter((choice) => KIND_VISUALIZATIONS[kind].includes(choice.value));

  return (
    <form class="builder" onSubmit={(event) => event.preventDefault()} aria-label="Trend builder">
      <SuggestionLists suggestions={suggestions} />

      <fieldset>
        <legend>Insight</legend>
        <Segmented name="insight-kind" label="Insight" options={TREND_KINDS} value={kind} onChange={(next) => onChange(withKind(form, next))} />
        {kind === 'STICKINESS' && <p class="muted">Persons by how many intervals of the range they did the event in.</p>}
        {kind === 'LIFECYCLE' && <p class="muted">Persons per interval: new, returning from the one before, resurrecting after a gap, and gone dormant.</p>}
      </fieldset>

      <fieldset>
        <legend>Series</legend>
        {shown.map((series, index) => (
          <SeriesRow
            key={index}
            index={index}
            series={series}
            measure={kind === 'TRENDS'}
            onChange={(next) => set('series', replaceAt(form.series, index, next))}
            onRemove={
              shown.length > 1
                ? () =>
                    set(
                      'series',
                      form.series.filter((_, position) => position !== index),
                    )
                : undefined
            }
          />
        ))}
        {kind !== 'LIFECYCLE' && (
          <button type="button" class="secondary" onClick={() => set('series', [...form.series, newSeries('')])}>
            Add series
          </button>
        )}
      </fieldset>

      <FiltersFieldset filters={form.filters} onChange={(filters) => set('filters', filters)} cohorts={suggestions.cohorts} unfiltered="Every event counts." />

      {takesBreakdown(kind) && <BreakdownFields value={form} onChange={(breakdown) => onChange({ ...form, ...breakdown })} />}

      <TimeFields value={form} onChange={(range) => onChange({ ...form, ...range })}>
        {takesCompare(kind) && (
          <label class="checkbox">
            <input type="checkbox" checked={form.compare} onChange={(event) => set('compare', event.currentTarget.checked)} />
            <span>Compare to the previous period</span>
          </label>
        )}
      </TimeFields>

      {takesBreakdown(kind) && <Formula form={form} onChange={(formula) => set('formula', formula)} />}

      {visualizations.length > 1 && (
        <fieldset>
          <legend>Show as</legend>
          <Segmented
            name="visualization"
            label="Show as"
            options={visualizations}
            value={form.visualization}
            onChange={(choice) => set('visualization', choice)}
          />
        </fieldset>
      )}
    </form>
  );
}

function Formula({ form, onChange }: { form: TrendForm; onChange: (formula: string) => void }) {
  return (
    <fieldset>
      <legend>Formula</legend>
      <label>
        <span class="visually-hidden">Formula</span>
        <input
          value={form.formula}
          placeholder={form.series.length > 1 ? 'e.g. A / B' : 'e.g. A * 100'}
          onInput={(event) => onChange(event.currentTarget.value)}
          aria-describedby="formula-help"
        />
      </label>
      <p id="formula-help" class="muted">
        Letters are the series ({form.series.map((_, index) => seriesLetter(index)).join(', ')}); + − × ÷ and parentheses.
      </p>
    </fieldset>
  );
}

function SeriesRow({
  index,
  series,
  measure,
  onChange,
  onRemove,
}: {
  index: number;
  series: SeriesForm;
  /** Whether the math applies (trends only: stickiness and lifecycle count persons). */
  measure: boolean;
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
      {measure && (
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
      )}
      {measure && PROPERTY_MATHS.includes(series.math) && (
        <label>
          <span>Of property</span>
          <input list="property-keys" value={series.mathProperty} required onInput={(event) => set('mathProperty', event.currentTarget.value)} />
        </label>
      )}
      {measure && series.math === 'unique_group' && (
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
