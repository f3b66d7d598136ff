/**
 * A dashboard's filters applied to one tile's query (and `/query/`'s `filters_override` to its query), as PostHog's
 * `apply_dashboard_filters` does: property filters are AND-ed with the query's own, a date range replaces the
 * query's (both ends and `explicitDate`, when either end is set), a breakdown replaces the query's, and `interval`
 * and `filterTestAccounts` are set on the kinds that have them; a HogQLQuery gets them in its `filters` (what its
 * `{filters}` placeholder stands for). A display wrapper (`InsightVizNode`, …) gets them on its `source`. The
 * dashboard's variables replace the values of a HogQLQuery's variables of the same id.
 */

type Node = Record<string, unknown>;

const WRAPPERS = new Set(['InsightVizNode', 'DataVisualizationNode', 'DataTableNode']);
const WITH_INTERVAL = new Set(['TrendsQuery', 'FunnelsQuery', 'StickinessQuery', 'LifecycleQuery']);
const WITH_BREAKDOWN = new Set(['TrendsQuery', 'FunnelsQuery', 'RetentionQuery']);
const INSIGHT_KINDS = new Set(['TrendsQuery', 'FunnelsQuery', 'RetentionQuery', 'StickinessQuery', 'LifecycleQuery', 'PathsQuery']);

const isObject = (value: unknown): value is Node => typeof value === 'object' && value !== null && !Array.isArray(value);
const isSet = (value: unknown): boolean => value !== undefined && value !== null;

/** The query's own property filters (a list, or an AND/OR group) AND-ed with `extra`. */
function withProperties(own: unknown, extra: unknown[]): unknown {
  if (own === undefined || own === null || (Array.isArray(own) && own.length === 0)) return extra;
  if (Array.isArray(own)) return [...(own as unknown[]), ...extra];
  return { type: 'AND', values: [own, { type: 'AND', values: extra }] };
}

function dateRange(own: unknown, filters: Node): Node {
  return { ...(isObject(own) ? own : {}), date_from: filters.date_from ?? null, date_to: filters.date_to ?? null, explicitDate: filters.explicitDate ?? null };
}

function applyToHogQL(query: Node, filters: Node): Node {
  const own = isObject(query.filters) ? query.filters : {};
  const out: Node = { ...own };
  if (Array.isArray(filters.properties) && filters.properties.length > 0) out.properties = withProperties(own.properties, filters.properties);
  if (isSet(filters.date_from) || isSet(filters.date_to)) out.dateRange = dateRange(own.dateRange, filters);
  if (isSet(filters.filterTestAccounts)) out.filterTestAccounts = filters.filterTestAccounts;
  return { ...query, filters: out };
}

function applyToSource(source: Node, filters: Node): Node {
  if (source.kind === 'HogQLQuery') return applyToHogQL(source, filters);
  if (!INSIGHT_KINDS.has(String(source.kind))) return source;
  const kind = String(source.kind);
  const out: Node = { ...source };
  if (Array.isArray(filters.properties) && filters.properties.length > 0) out.properties = withProperties(source.properties, filters.properties);
  if (isSet(filters.date_from) || isSet(filters.date_to)) {
    out.dateRange = dateRange(source.dateRange, filters);
  }
  if (isObject(filters.breakdown_filter) && WITH_BREAKDOWN.has(kind)) out.breakdownFilter = filters.breakdown_filter;
  if (isSet(filters.interval) && WITH_INTERVAL.has(kind)) out.interval = filters.interval;
  if (isSet(filters.filterTestAccounts)) out.filterTestAccounts = filters.filterTestAccounts;
  return out;
}

/** `query` as a tile of a dashboard with `filters` runs it (the stored query when the filters set nothing). */
export function withDashboardFilters(query: Node, filters: Node): Node {
  if (WRAPPERS.has(String(query.kind)) && isObject(query.source)) return { ...query, source: applyToSource(query.source, filters) };
  return applyToSource(query, filters);
}

/** `query` with `overrides` (`{<id>: {value}}`) replacing the values of its HogQLQuery's variables of those ids. */
export function withVariables(query: Node, overrides: Node): Node {
  if (WRAPPERS.has(String(query.kind)) && isObject(query.source)) return { ...query, source: withVariables(query.source, overrides) };
  if (query.kind !== 'HogQLQuery' || !isObject(query.variables)) return query;
  const variables: Node = { ...query.variables };
  for (const [id, override] of Object.entries(overrides)) {
    const own = variables[id];
    if (isObject(own) && isObject(override)) variables[id] = { ...own, variableId: id, value: override.value ?? null };
  }
  return { ...query, variables };
}

/** The filters a tile runs with: its own `filters_overrides` when it has any, else the dashboard's. */
export const tileFilters = (dashboard: Node, overrides: Node): Node => (Object.keys(overrides).length > 0 ? overrides : dashboard);
