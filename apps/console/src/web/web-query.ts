/**
 * The Web analytics screen's state and its requests, without the DOM (unit-tested): the date range, the
 * comparison and the value filters kept in the address; the `WebOverviewQuery`, `WebStatsTableQuery`, visitors
 * trend and live-visitors nodes built from them; and how their answers read on screen.
 */
import type { Interval, QueryNode, WebOverviewItem } from '../api/types';
import { duration, figure, propertyText } from '../format';
import { DATE_RANGES } from '../insights/query';

/** A value clicked in a table: the events whose property `key` is exactly `value`. */
export interface WebFilter {
  key: string;
  value: string;
}

export interface WebState {
  dateFrom: string;
  /** Empty for now. */
  dateTo: string;
  compare: boolean;
  filters: WebFilter[];
}

export const DEFAULT_RANGE = '-7d';

/** The screen's state from its address (`from`, `to`, `compare=1`, `filters` as JSON); what does not read stays at its default. */
export function readWebState(search: URLSearchParams): WebState {
  let filters: WebFilter[] = [];
  try {
    const parsed: unknown = JSON.parse(search.get('filters') ?? '[]');
    if (Array.isArray(parsed))
      filters = (parsed as unknown[]).flatMap((each) => {
        const { key, value } = (each ?? {}) as Record<string, unknown>;
        return typeof key === 'string' && typeof value === 'string' ? [{ key, value }] : [];
      });
  } catch {
    // a hand-edited address: no filters
  }
  return { dateFrom: search.get('from') || DEFAULT_RANGE, dateTo: search.get('to') ?? '', compare: search.get('compare') === '1', filters };
}

/** The address's parameters for `state` (undefined: left out). */
export function webStateParams(state: WebState): Record<string, string | undefined> {
  return {
    from: state.dateFrom === DEFAULT_RANGE ? undefined : state.dateFrom,
    to: state.dateTo || undefined,
    compare: state.compare ? '1' : undefined,
    filters: state.filters.length ? JSON.stringify(state.filters) : undefined,
  };
}

/** `filters` with `filter` added (a filter on the same property is replaced: one value per property). */
export function withFilter(filters: readonly WebFilter[], filter: WebFilter): WebFilter[] {
  return [...filters.filter((each) => each.key !== filter.key), filter];
}

function shared(state: WebState): Record<string, unknown> {
  return {
    dateRange: { date_from: state.dateFrom, date_to: state.dateTo || null },
    properties: state.filters.map(({ key, value }) => ({ key, value, operator: 'exact', type: 'event' })),
    compareFilter: { compare: state.compare },
  };
}

export function overviewNode(state: WebState): QueryNode {
  return { kind: 'WebOverviewQuery', ...shared(state) };
}

/** One table of the screen: a breakdown of the stats query, what its value column is called, and the event property a clicked value filters on. */
export interface WebTable {
  breakdownBy: string;
  label: string;
  /** Null for session breakdowns (entry and exit page, sources): the query API filters on event and person properties only. */
  property: string | null;
  /** The outbound links table: `WebExternalClicksTableQuery` rows `[url, visitors, clicks]` instead of a breakdown. */
  outbound?: true;
}

/** The tabbed panels: pages, sources, devices, places. */
export const WEB_PANELS: ReadonlyArray<{ id: string; title: string; bounceRate: boolean; tables: readonly WebTable[] }> = [
  {
    id: 'pages',
    title: 'Pages',
    bounceRate: true,
    tables: [
      { breakdownBy: 'Page', label: 'Path', property: '$pathname' },
      { breakdownBy: 'InitialPage', label: 'Entry path', property: null },
      { breakdownBy: 'ExitPage', label: 'Exit path', property: null },
      { breakdownBy: 'ExternalClick', label: 'Outbound link', property: null, outbound: true },
    ],
  },
  {
    id: 'sources',
    title: 'Sources',
    bounceRate: true,
    tables: [
      { breakdownBy: 'InitialChannelType', label: 'Channel', property: null },
      { breakdownBy: 'InitialReferringDomain', label: 'Referring domain', property: null },
      { breakdownBy: 'InitialUTMSource', label: 'UTM source', property: null },
      { breakdownBy: 'InitialUTMMedium', label: 'UTM medium', property: null },
      { breakdownBy: 'InitialUTMCampaign', label: 'UTM campaign', property: null },
    ],
  },
  {
    id: 'devices',
    title: 'Devices',
    bounceRate: false,
    tables: [
      { breakdownBy: 'DeviceType', label: 'Device type', property: '$device_type' },
      { breakdownBy: 'Browser', label: 'Browser', property: '$browser' },
      { breakdownBy: 'OS', label: 'OS', property: '$os' },
    ],
  },
  {
    id: 'places',
    title: 'Places',
    bounceRate: false,
    tables: [
      { breakdownBy: 'Country', label: 'Country', property: '$geoip_country_code' },
      { breakdownBy: 'City', label: 'City', property: null },
      { breakdownBy: 'Language', label: 'Language', property: '$browser_language' },
      { breakdownBy: 'Timezone', label: 'Timezone', property: null },
    ],
  },
];

export const TABLE_ROWS = 10;

export function statsNode(state: WebState, table: WebTable, bounceRate: boolean): QueryNode {
  // One row per destination, whatever the query string or fragment it was linked with.
  if (table.outbound) return { kind: 'WebExternalClicksTableQuery', ...shared(state), stripQueryParams: true, limit: TABLE_ROWS };
  return { kind: 'WebStatsTableQuery', ...shared(state), breakdownBy: table.breakdownBy, includeBounceRate: bounceRate, limit: TABLE_ROWS };
}

/** The interval of the visitors chart: the date range preset's, by day for custom dates. */
export function chartInterval(state: WebState): Interval {
  const preset = DATE_RANGES.find((range) => range.value === state.dateFrom && state.dateTo === '');
  return preset?.interval ?? 'day';
}

/** Unique visitors (persons with a pageview) per interval, as PostHog's web analytics chart counts them. */
export function visitorsNode(state: WebState): QueryNode {
  return {
    kind: 'TrendsQuery',
    series: [{ kind: 'EventsNode', event: '$pageview', name: '$pageview', custom_name: 'Visitors', math: 'dau' }],
    interval: chartInterval(state),
    ...shared(state),
  };
}

/**
 * At most `concurrency` of the tasks given to the returned function run at once; the others wait their turn, in
 * order, and one whose `signal` was aborted meanwhile is dropped (rejected with the signal's reason). A started
 * task is not given the signal: the server goes on with a query whose request was abandoned, so the task holds its
 * place until the answer comes. The server refuses a project's queries past a few at once, and the screen asks
 * for seven.
 */
export function limiter(concurrency: number): <T>(task: () => Promise<T>, signal?: AbortSignal) => Promise<T> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async <T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> => {
    if (running >= concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      signal?.throwIfAborted();
      return await task();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

/** Persons who sent any event in the last 30 minutes, whatever the screen's filters. */
export const LIVE_VISITORS: QueryNode = {
  kind: 'HogQLQuery',
  query: 'SELECT count(DISTINCT person_id) FROM events WHERE timestamp >= now() - INTERVAL 30 MINUTE',
};

/** An overview figure for people: a count, a duration, a rounded percentage; `—` when there is none. */
export function overviewValue(kind: WebOverviewItem['kind'], value: number | null): string {
  if (value === null) return '—';
  if (kind === 'duration_s') return duration(value);
  if (kind === 'percentage') return `${Math.round(value)}%`;
  return figure(value);
}

export const OVERVIEW_LABELS: Record<string, string> = {
  visitors: 'Visitors',
  views: 'Page views',
  sessions: 'Sessions',
  'session duration': 'Session duration',
  'bounce rate': 'Bounce rate',
};

/** The change from the previous period as shown (`+25%`, `−10%`, `0%`) and whether it is good news; null without one. */
export function overviewChange(item: WebOverviewItem): { text: string; good: boolean | null } | null {
  const change = item.changeFromPreviousPct;
  if (change === null) return null;
  const text = change > 0 ? `+${change}%` : change < 0 ? `−${-change}%` : '0%';
  if (change === 0) return { text, good: null };
  return { text, good: change > 0 !== Boolean(item.isIncreaseBad) };
}

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' });

/** A country code as its English name (`FR` → `France`), the code itself when unknown. */
export function countryName(code: string): string {
  try {
    return regionNames.of(code) ?? code;
  } catch {
    return code;
  }
}

/** A breakdown value as text: `(none)` for a missing one, a country's name, `1280 × 800`, `Paris, FR`, `UTC+5.5`. */
export function breakdownLabel(breakdownBy: string, value: unknown): string {
  if (value === null || value === undefined) return '(none)';
  if (Array.isArray(value)) {
    const parts = value.filter((part): part is string => typeof part === 'string' && part !== '');
    if (parts.length === 0) return '(none)';
    if (breakdownBy === 'Viewport') return parts.join(' × ');
    // City [country, name], Region [country, code, name]: the most precise first.
    return [...parts.slice(1).reverse(), parts[0]].join(', ');
  }
  if (breakdownBy === 'Timezone' && typeof value === 'number') return value === 0 ? 'UTC' : `UTC${value > 0 ? '+' : '−'}${Math.abs(value)}`;
  const text = propertyText(value);
  return breakdownBy === 'Country' ? countryName(text) : text;
}

/** Whether a value an event sent may be a link's target: an http(s) address (never `javascript:` or `data:`). */
export function isWebAddress(value: unknown): value is string {
  return typeof value === 'string' && /^https?:\/\//i.test(value);
}
