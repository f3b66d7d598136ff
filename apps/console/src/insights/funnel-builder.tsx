/** The funnel builder's controls: steps (event, name, own filters), filters, window and order, breakdown, time, view. */
import { PropertyFilters } from '../components/property-filters';
import { Segmented } from '../components/segmented';
import { BreakdownFields, FiltersFieldset, SuggestionLists, TimeFields, type Suggestions } from './fields';
import {
  MAX_STEPS,
  newStep,
  WINDOW_UNITS,
  type FunnelForm,
  type FunnelOrder,
  type FunnelStepForm,
  type FunnelVizType,
  type FunnelWindowUnit,
} from './funnel-form';

const VIEWS: ReadonlyArray<{ value: FunnelVizType; label: string }> = [
  { value: 'steps', label: 'Steps' },
  { value: 'time_to_convert', label: 'Time to convert' },
  { value: 'trends', label: 'Trend' },
];

const ORDERS: ReadonlyArray<{ value: FunnelOrder; label: string }> = [
  { value: 'ordered', label: 'in this order, other events between' },
  { value: 'strict', label: 'in this order, nothing between' },
  { value: 'unordered', label: 'in any order' },
];

export function FunnelBuilder({ form, onChange, suggestions }: { form: FunnelForm; onChange: (form: FunnelForm) => void; suggestions: Suggestions }) {
  const set = <K extends keyof FunnelForm>(key: K, value: FunnelForm[K]) => onChange({ ...form, [key]: value });
  const setStep = (index: number, step: FunnelStepForm) =>
    set(
      'steps',
      form.steps.map((existing, position) => (position === index ? step : existing)),
    );
  return (
    <form class="builder" onSubmit={(event) => event.preventDefault()} aria-label="Funnel builder">
      <SuggestionLists suggestions={suggestions} />
      <fieldset>
        <legend>Steps</legend>
        {form.steps.map((step, index) => (
          <div class="series-row funnel-step-form" role="group" aria-label={`Step ${index + 1}`} key={index}>
            <span class="series-letter" aria-hidden="true">
              {index + 1}
            </span>
            <label class="grow">
              <span>Event</span>
              <input list="event-names" value={step.event} required onInput={(event) => setStep(index, { ...step, event: event.currentTarget.value })} />
            </label>
            <label class="grow">
              <span>Name</span>
              <input
                value={step.customName}
                placeholder="the event's"
                onInput={(event) => setStep(index, { ...step, customName: event.currentTarget.value })}
              />
            </label>
            {form.steps.length > 2 && (
              <button
                type="button"
                class="icon"
                aria-label={`Remove step ${index + 1}`}
                onClick={() =>
                  set(
                    'steps',
                    form.steps.filter((_, position) => position !== index),
                  )
                }
              >
                ×
              </button>
            )}
            <div class="step-filters">
              <PropertyFilters
                filters={step.filters}
                onChange={(filters) => setStep(index, { ...step, filters })}
                types={['event', 'person', 'cohort']}
                cohorts={suggestions.cohorts}
                label={`Step ${index + 1} filter`}
                keyList="property-keys"
              />
            </div>
          </div>
        ))}
        <button type="button" class="secondary" disabled={form.steps.length >= MAX_STEPS} onClick={() => set('steps', [...form.steps, newStep()])}>
          Add step
        </button>
      </fieldset>

      <FiltersFieldset
        filters={form.filters}
        onChange={(filters) => set('filters', filters)}
        cohorts={suggestions.cohorts}
        unfiltered="Every step's events count."
      />

      <fieldset>
        <legend>Conversion</legend>
        <div class="row">
          <label>
            <span>Window</span>
            <input
              type="number"
              min={1}
              step={1}
              value={form.windowInterval}
              class="narrow"
              onInput={(event) => set('windowInterval', Number(event.currentTarget.value))}
            />
          </label>
          <label>
            <span>Unit</span>
            <select value={form.windowUnit} onChange={(event) => set('windowUnit', event.currentTarget.value as FunnelWindowUnit)}>
              {WINDOW_UNITS.map((unit) => (
                <option key={unit} value={unit}>
                  {unit}s
                </option>
              ))}
            </select>
          </label>
        </div>
        <div class="row">
          <label class="grow">
            <span>Steps happen</span>
            <select value={form.order} onChange={(event) => set('order', event.currentTarget.value as FunnelOrder)}>
              {ORDERS.map((order) => (
                <option key={order.value} value={order.value}>
                  {order.label}
                </option>
              ))}
            </select>
          </label>
        </div>
      </fieldset>

      <BreakdownFields value={form} onChange={(breakdown) => onChange({ ...form, ...breakdown })} />
      <TimeFields value={form} onChange={(range) => onChange({ ...form, ...range })} interval={form.vizType === 'trends'} />

      <fieldset>
        <legend>Show as</legend>
        <Segmented name="funnel-view" label="Show as" options={VIEWS} value={form.vizType} onChange={(view) => set('vizType', view)} />
      </fieldset>
    </form>
  );
}
