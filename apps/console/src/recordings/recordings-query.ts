/**
 * The recordings screen's filters, kept in the address's query string, as the recordings API's parameters
 * (PostHog's RecordingsQuery: JSON-valued lists of distinct ids, summary conditions and console levels).
 */

export interface RecordingFilters {
  /** The API's relative date: `-24h`, `-3d`… */
  dateFrom: string;
  /** One distinct id of the person, as typed; empty for anyone. */
  distinctId: string;
  /** Whole seconds, as typed; empty for any length. */
  minDuration: string;
  /** Only recordings with a console error. */
  errorsOnly: boolean;
  order: string;
}

export const RECORDING_DATE_RANGES: ReadonlyArray<{ value: string; label: string }> = [
  { value: '-24h', label: 'Last 24 hours' },
  { value: '-3d', label: 'Last 3 days' },
  { value: '-7d', label: 'Last 7 days' },
  { value: '-30d', label: 'Last 30 days' },
  { value: '-90d', label: 'Last 90 days' },
];

export const RECORDING_ORDERS: ReadonlyArray<{ value: string; label: string }> = [
  { value: 'start_time', label: 'Newest first' },
  { value: 'duration', label: 'Longest first' },
  { value: 'active_seconds', label: 'Most active first' },
  { value: 'console_error_count', label: 'Most console errors first' },
  { value: 'activity_score', label: 'Highest activity score first' },
];

const DEFAULTS: RecordingFilters = { dateFrom: '-3d', distinctId: '', minDuration: '', errorsOnly: false, order: 'start_time' };

const known = (value: string | null, choices: ReadonlyArray<{ value: string }>, fallback: string) =>
  value !== null && choices.some((choice) => choice.value === value) ? value : fallback;

/** The filters of the address's `from`, `person`, `min`, `errors` and `order` parameters (unknown values fall back to the defaults). */
export function recordingFilters(params: URLSearchParams): RecordingFilters {
  return {
    dateFrom: known(params.get('from'), RECORDING_DATE_RANGES, DEFAULTS.dateFrom),
    distinctId: params.get('person') ?? '',
    minDuration: params.get('min') ?? '',
    errorsOnly: params.get('errors') === '1',
    order: known(params.get('order'), RECORDING_ORDERS, DEFAULTS.order),
  };
}

/** The address parameters of `filters` (undefined: the default, left out). */
export function recordingParams(filters: RecordingFilters): Record<string, string | undefined> {
  return {
    from: filters.dateFrom === DEFAULTS.dateFrom ? undefined : filters.dateFrom,
    person: filters.distinctId || undefined,
    min: filters.minDuration || undefined,
    errors: filters.errorsOnly ? '1' : undefined,
    order: filters.order === DEFAULTS.order ? undefined : filters.order,
  };
}

/** Whether the filters narrow the listing beyond its date range. */
export const isFiltered = (filters: RecordingFilters): boolean => filters.distinctId.trim() !== '' || filters.minDuration !== '' || filters.errorsOnly;

/** The listing's query parameters; a minimum duration that is not a positive number is no condition. */
export function recordingsQuery(filters: RecordingFilters): Record<string, string | undefined> {
  const minimum = Number(filters.minDuration);
  const distinctId = filters.distinctId.trim();
  return {
    date_from: filters.dateFrom,
    distinct_ids: distinctId === '' ? undefined : JSON.stringify([distinctId]),
    having_predicates:
      filters.minDuration.trim() !== '' && Number.isFinite(minimum) && minimum > 0
        ? JSON.stringify([{ type: 'recording', key: 'duration', operator: 'gte', value: minimum }])
        : undefined,
    console_log_filters: filters.errorsOnly ? JSON.stringify([{ type: 'log_entry', key: 'level', operator: 'exact', value: ['error'] }]) : undefined,
    order: filters.order,
    order_direction: 'DESC',
  };
}
