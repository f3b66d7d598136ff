/**
 * Rows of behavioral criteria of a cohort (did or did not; what; which event; over which window), with an add
 * button: the cohort builder's "what persons did" conditions, laid out as the property filter rows are.
 */
import { BEHAVIOR_KINDS, COUNT_OPERATORS, newBehavior, WINDOW_UNITS, type BehaviorForm } from '../flags/create-forms';

export function BehaviorFilters({ behaviors, onChange }: { behaviors: BehaviorForm[]; onChange: (behaviors: BehaviorForm[]) => void }) {
  const replace = (index: number, behavior: BehaviorForm) => onChange(behaviors.map((existing, position) => (position === index ? behavior : existing)));
  return (
    <div class="property-filters">
      {behaviors.map((behavior, index) => {
        const set = <K extends keyof BehaviorForm>(key: K, value: BehaviorForm[K]) => replace(index, { ...behavior, [key]: value });
        const sequenced = behavior.kind === 'stopped_performing_event' || behavior.kind === 'restarted_performing_event';
        return (
          <div class="filter-row" role="group" aria-label={`Behavior ${index + 1}`} key={index}>
            <label>
              <span>Person</span>
              <select value={behavior.negation ? 'not' : 'did'} onChange={(event) => set('negation', event.currentTarget.value === 'not')}>
                <option value="did">did</option>
                <option value="not">did not</option>
              </select>
            </label>
            <label>
              <span>What</span>
              <select value={behavior.kind} onChange={(event) => set('kind', event.currentTarget.value as BehaviorForm['kind'])}>
                {BEHAVIOR_KINDS.map((kind) => (
                  <option key={kind.value} value={kind.value}>
                    {kind.label}
                  </option>
                ))}
              </select>
            </label>
            <label class="grow">
              <span>Event</span>
              <input value={behavior.event} spellcheck={false} onInput={(event) => set('event', event.currentTarget.value)} />
            </label>
            {behavior.kind === 'performed_event_multiple' && (
              <>
                <label>
                  <span>Times</span>
                  <select value={behavior.operator} onChange={(event) => set('operator', event.currentTarget.value as BehaviorForm['operator'])}>
                    {COUNT_OPERATORS.map((operator) => (
                      <option key={operator.value} value={operator.value}>
                        {operator.label}
                      </option>
                    ))}
                  </select>
                </label>
                <label>
                  <span>Count</span>
                  <input class="narrow" inputMode="numeric" value={behavior.count} onInput={(event) => set('count', event.currentTarget.value)} />
                </label>
              </>
            )}
            <label>
              <span>In the last</span>
              <input class="narrow" inputMode="numeric" value={behavior.window} onInput={(event) => set('window', event.currentTarget.value)} />
            </label>
            <label>
              <span>Unit</span>
              <select value={behavior.unit} onChange={(event) => set('unit', event.currentTarget.value as BehaviorForm['unit'])}>
                {WINDOW_UNITS.map((unit) => (
                  <option key={unit} value={unit}>
                    {unit}s
                  </option>
                ))}
              </select>
            </label>
            {sequenced && (
              <label>
                <span>Recent days</span>
                <input class="narrow" inputMode="numeric" value={behavior.recentDays} onInput={(event) => set('recentDays', event.currentTarget.value)} />
              </label>
            )}
            <button
              type="button"
              class="icon"
              aria-label={`Remove behavior ${index + 1}`}
              onClick={() => onChange(behaviors.filter((_, position) => position !== index))}
            >
              ×
            </button>
          </div>
        );
      })}
      <button type="button" class="secondary" onClick={() => onChange([...behaviors, newBehavior()])}>
        Add behavior
      </button>
    </div>
  );
}
