/** The retention builder's controls: the cohort and return events, cohort kind, period and count, cumulative, filters. */
import { Segmented } from '../components/segmented';
import { FiltersFieldset, SuggestionLists, type Suggestions } from './fields';
import { MAX_INTERVALS, RETENTION_PERIODS, type RetentionForm, type RetentionPeriod, type RetentionType } from './retention-form';

const TYPES: ReadonlyArray<{ value: RetentionType; label: string }> = [
  { value: 'retention_first_time', label: 'First time' },
  { value: 'retention_recurring', label: 'Recurring' },
];

export function RetentionBuilder({ form, onChange, suggestions }: { form: RetentionForm; onChange: (form: RetentionForm) => void; suggestions: Suggestions }) {
  const set = <K extends keyof RetentionForm>(key: K, value: RetentionForm[K]) => onChange({ ...form, [key]: value });
  return (
    <form class="builder" onSubmit={(event) => event.preventDefault()} aria-label="Retention builder">
      <SuggestionLists suggestions={suggestions} />
      <fieldset>
        <legend>Cohorts</legend>
        <label>
          <span>Persons who did</span>
          <input list="event-names" value={form.targetEvent} required onInput={(event) => set('targetEvent', event.currentTarget.value)} />
        </label>
        <Segmented name="retention-type" label="Cohort by" options={TYPES} value={form.retentionType} onChange={(type) => set('retentionType', type)} />
        <p class="muted">
          {form.retentionType === 'retention_first_time'
            ? 'Each person is in the cohort of the period of their first such event.'
            : 'Each person is in the cohort of every period with such an event.'}
        </p>
        <label>
          <span>Came back to do</span>
          <input list="event-names" value={form.returningEvent} required onInput={(event) => set('returningEvent', event.currentTarget.value)} />
        </label>
      </fieldset>

      <fieldset>
        <legend>Periods</legend>
        <div class="row">
          <label>
            <span>Period</span>
            <select value={form.period} onChange={(event) => set('period', event.currentTarget.value as RetentionPeriod)}>
              {RETENTION_PERIODS.map((period) => (
                <option key={period} value={period}>
                  {period}
                </option>
              ))}
            </select>
          </label>
          <label>
            <span>How many</span>
            <input
              type="number"
              class="narrow"
              min={1}
              max={MAX_INTERVALS}
              value={form.totalIntervals}
              onInput={(event) => set('totalIntervals', Number(event.currentTarget.value))}
            />
          </label>
        </div>
        <label class="checkbox">
          <input type="checkbox" checked={form.cumulative} onChange={(event) => set('cumulative', event.currentTarget.checked)} />
          <span>Cumulative: count a person in every period up to their last return</span>
        </label>
        <label class="checkbox">
          <input type="checkbox" checked={form.rollingWindows} onChange={(event) => set('rollingWindows', event.currentTarget.checked)} />
          <span>24-hour windows: count periods from each person's first event, not from the calendar</span>
        </label>
      </fieldset>

      <FiltersFieldset filters={form.filters} onChange={(filters) => set('filters', filters)} cohorts={suggestions.cohorts} unfiltered="Every event counts." />
    </form>
  );
}
