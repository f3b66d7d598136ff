/**
 * Rows of property filters (property, operator, value) with an add button: persons', events' and flag
 * conditions' filters. Which kinds of filter a row may be comes from the caller; a cohort filter picks a cohort.
 */
import type { Cohort, GroupType } from '../api/types';
import { COHORT_OPERATORS, needsValue, newFilter, OPERATORS, type FilterForm, type FilterType, type OperatorChoice } from '../filters/property-filter';

const TYPE_LABELS: Record<FilterType, string> = { event: 'Event property', person: 'Person property', group: 'Group property', cohort: 'Cohort' };

export interface PropertyFiltersProps {
  filters: FilterForm[];
  onChange: (filters: FilterForm[]) => void;
  /** What a row may filter on; the first is a new row's. */
  types: readonly FilterType[];
  operators?: readonly OperatorChoice[];
  cohorts?: readonly Cohort[];
  /** The group types a group filter may be of (the first is a new row's); with one, no choice is shown. */
  groupTypes?: readonly GroupType[];
  /** Names the rows for assistive technology: `${label} 1`, `${label} 2`… */
  label: string;
  /** A `<datalist>` of property names to suggest. */
  keyList?: string;
}

export function PropertyFilters({ filters, onChange, types, operators = OPERATORS, cohorts = [], groupTypes = [], label, keyList }: PropertyFiltersProps) {
  const replace = (index: number, filter: FilterForm) => onChange(filters.map((existing, position) => (position === index ? filter : existing)));
  const fresh = (type: FilterType): FilterForm => ({ ...newFilter(type), groupTypeIndex: groupTypes[0]?.group_type_index ?? 0 });
  return (
    <div class="property-filters">
      {filters.map((filter, index) => {
        const set = <K extends keyof FilterForm>(key: K, value: FilterForm[K]) => replace(index, { ...filter, [key]: value });
        const choices = filter.type === 'cohort' ? COHORT_OPERATORS : operators;
        return (
          <div class="filter-row" role="group" aria-label={`${label} ${index + 1}`} key={index}>
            {types.length > 1 && (
              <label>
                <span>Filter on</span>
                <select value={filter.type} onChange={(event) => replace(index, fresh(event.currentTarget.value as FilterType))}>
                  {types.map((type) => (
                    <option key={type} value={type}>
                      {TYPE_LABELS[type]}
                    </option>
                  ))}
                </select>
              </label>
            )}
            {filter.type === 'group' && groupTypes.length > 1 && (
              <label>
                <span>Group type</span>
                <select value={filter.groupTypeIndex} onChange={(event) => set('groupTypeIndex', Number(event.currentTarget.value))}>
                  {groupTypes.map((group) => (
                    <option key={group.group_type_index} value={group.group_type_index}>
                      {group.name_singular || group.group_type}
                    </option>
                  ))}
                </select>
              </label>
            )}
            {filter.type !== 'cohort' && (
              <label class="grow">
                <span>{types.length > 1 ? 'Property' : TYPE_LABELS[filter.type]}</span>
                <input list={keyList} value={filter.key} spellcheck={false} onInput={(event) => set('key', event.currentTarget.value)} />
              </label>
            )}
            <label>
              <span>Operator</span>
              <select value={filter.operator} onChange={(event) => set('operator', event.currentTarget.value)}>
                {!choices.some((choice) => choice.value === filter.operator) && <option value={filter.operator}>{filter.operator}</option>}
                {choices.map((choice) => (
                  <option key={choice.value} value={choice.value}>
                    {choice.label}
                  </option>
                ))}
              </select>
            </label>
            {filter.type === 'cohort' ? (
              <label class="grow">
                <span>Cohort</span>
                <select value={filter.value} onChange={(event) => set('value', event.currentTarget.value)}>
                  <option value="">Choose a cohort…</option>
                  {!cohorts.some((cohort) => String(cohort.id) === filter.value) && filter.value !== '' && (
                    <option value={filter.value}>Cohort {filter.value}</option>
                  )}
                  {cohorts.map((cohort) => (
                    <option key={cohort.id} value={String(cohort.id)}>
                      {cohort.name}
                    </option>
                  ))}
                </select>
              </label>
            ) : (
              needsValue(filter.operator) && (
                <label class="grow">
                  <span>Value</span>
                  <input value={filter.value} onInput={(event) => set('value', event.currentTarget.value)} />
                </label>
              )
            )}
            <button
              type="button"
              class="icon"
              aria-label={`Remove ${label.toLowerCase()} ${index + 1}`}
              onClick={() => onChange(filters.filter((_, position) => position !== index))}
            >
              ×
            </button>
          </div>
        );
      })}
      <button type="button" class="secondary" onClick={() => onChange([...filters, fresh(types[0]!)])}>
        Add filter
      </button>
    </div>
  );
}
