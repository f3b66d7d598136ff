import { isFiltered, recordingFilters, recordingParams, recordingsQuery } from '../src/recordings/recordings-query';

describe('the recordings screen’s filters', () => {
  it('ask for the last three days, newest first, by default', () => {
    const filters = recordingFilters(new URLSearchParams());
    expect(recordingsQuery(filters)).toEqual({
      date_from: '-3d',
      distinct_ids: undefined,
      having_predicates: undefined,
      console_log_filters: undefined,
      order: 'start_time',
      order_direction: 'DESC',
    });
    expect(isFiltered(filters)).toBe(false);
    expect(recordingParams(filters)).toEqual({ from: undefined, person: undefined, min: undefined, errors: undefined, order: undefined });
  });

  it('become the API’s JSON-valued parameters', () => {
    const filters = recordingFilters(new URLSearchParams('from=-30d&person=%20user-1%20&min=90&errors=1&order=duration'));
    expect(recordingsQuery(filters)).toEqual({
      date_from: '-30d',
      distinct_ids: '["user-1"]',
      having_predicates: '[{"type":"recording","key":"duration","operator":"gte","value":90}]',
      console_log_filters: '[{"type":"log_entry","key":"level","operator":"exact","value":["error"]}]',
      order: 'duration',
      order_direction: 'DESC',
    });
    expect(isFiltered(filters)).toBe(true);
    expect(recordingFilters(new URLSearchParams(recordingParams(filters) as Record<string, string>))).toEqual(filters);
  });

  it('fall back to the defaults for values the screen does not offer, and ignore a minimum that is no positive number', () => {
    const filters = recordingFilters(new URLSearchParams('from=-2y&order=toString&min=soon'));
    expect([filters.dateFrom, filters.order]).toEqual(['-3d', 'start_time']);
    expect(recordingsQuery(filters).having_predicates).toBeUndefined();
    expect(recordingsQuery({ ...filters, minDuration: '0' }).having_predicates).toBeUndefined();
  });
});
