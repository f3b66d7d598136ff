/** The paths builder's controls: event types, start and end points, steps and links, cleaning rules, filters, time. */
import { FiltersFieldset, SuggestionLists, TimeFields, type Suggestions } from './fields';
import { EDGE_LIMITS, PATH_EVENT_TYPES, STEP_LIMITS, type CleaningRule, type PathsForm } from './paths-form';

export function PathsBuilder({ form, onChange, suggestions }: { form: PathsForm; onChange: (form: PathsForm) => void; suggestions: Suggestions }) {
  const set = <K extends keyof PathsForm>(key: K, value: PathsForm[K]) => onChange({ ...form, [key]: value });
  const setRule = (index: number, rule: CleaningRule) =>
    set(
      'cleaning',
      form.cleaning.map((existing, position) => (position === index ? rule : existing)),
    );
  return (
    <form class="builder" onSubmit={(event) => event.preventDefault()} aria-label="Paths builder">
      <SuggestionLists suggestions={suggestions} />
      <fieldset>
        <legend>Path items</legend>
        {PATH_EVENT_TYPES.map((type) => (
          <label class="checkbox" key={type.value}>
            <input
              type="checkbox"
              checked={form.eventTypes.includes(type.value)}
              onChange={(event) =>
                set(
                  'eventTypes',
                  PATH_EVENT_TYPES.map((each) => each.value).filter((value) =>
                    value === type.value ? event.currentTarget.checked : form.eventTypes.includes(value),
                  ),
                )
              }
            />
            <span>{type.label}</span>
          </label>
        ))}
        {form.eventTypes.length === 0 && <p class="muted">None ticked: every event is an item, by URL, screen or event name.</p>}
      </fieldset>

      <fieldset>
        <legend>Where paths start and end</legend>
        <label>
          <span>Start point</span>
          <input value={form.startPoint} placeholder="anywhere" onInput={(event) => set('startPoint', event.currentTarget.value)} />
        </label>
        <label>
          <span>End point</span>
          <input value={form.endPoint} placeholder="anywhere" onInput={(event) => set('endPoint', event.currentTarget.value)} />
        </label>
        <div class="row">
          <label>
            <span>Steps</span>
            <input
              type="number"
              class="narrow"
              min={STEP_LIMITS.min}
              max={STEP_LIMITS.max}
              value={form.stepLimit}
              onInput={(event) => set('stepLimit', Number(event.currentTarget.value))}
            />
          </label>
          <label>
            <span>Most links</span>
            <input
              type="number"
              class="narrow"
              min={EDGE_LIMITS.min}
              max={EDGE_LIMITS.max}
              value={form.edgeLimit}
              onInput={(event) => set('edgeLimit', Number(event.currentTarget.value))}
            />
          </label>
        </div>
      </fieldset>

      <fieldset>
        <legend>Path cleaning</legend>
        {form.cleaning.length === 0 && <p class="muted">Rules rewrite items, e.g. /product/\d+ as /product/:id, so alike pages merge.</p>}
        {form.cleaning.map((rule, index) => (
          <div class="row" role="group" aria-label={`Cleaning rule ${index + 1}`} key={index}>
            <label class="grow">
              <span>Pattern</span>
              <input
                value={rule.regex}
                class="mono"
                placeholder="/product/\d+"
                onInput={(event) => setRule(index, { ...rule, regex: event.currentTarget.value })}
              />
            </label>
            <label class="grow">
              <span>Replace with</span>
              <input value={rule.alias} placeholder="/product/:id" onInput={(event) => setRule(index, { ...rule, alias: event.currentTarget.value })} />
            </label>
            <button
              type="button"
              class="icon"
              aria-label={`Remove cleaning rule ${index + 1}`}
              onClick={() =>
                set(
                  'cleaning',
                  form.cleaning.filter((_, position) => position !== index),
                )
              }
            >
              ×
            </button>
          </div>
        ))}
        <button type="button" class="secondary" onClick={() => set('cleaning', [...form.cleaning, { regex: '', alias: '' }])}>
          Add cleaning rule
        </button>
      </fieldset>

      <FiltersFieldset filters={form.filters} onChange={(filters) => set('filters', filters)} cohorts={suggestions.cohorts} unfiltered="Every event counts." />

      <TimeFields value={form} onChange={(range) => onChange({ ...form, ...range })} interval={false} />
    </form>
  );
}
