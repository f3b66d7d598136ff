/**
 * docs/insights.md "Paths" in plain TypeScript over events already read back (no SQL): the oracle the paths
 * property test compares the engine with. Cleaning rules and grouping patterns are evaluated with JavaScript
 * regular expressions, so the test uses only patterns that RE2 and JavaScript read alike.
 */
import { groupingRegex, type PathEdge, type PathsInput } from '../../src/paths';
import { matchesGroup, propertyText, resolvePeriods, type PlainEvent, type ReferenceContext } from './reference';

const SESSION_GAP_MS = 30 * 60 * 1000;

interface Step {
  item: string;
  at: number;
  event: PlainEvent;
}

const compareText = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

function itemOf(input: PathsInput, event: PlainEvent): string {
  const mapped = (kind: '$pageview' | '$screen') =>
    input.includeEventTypes.length === 0 ? !input.excludeEvents.includes(kind) : input.includeEventTypes.includes(kind);
  let item = event.event;
  if (event.event === '$pageview' && mapped('$pageview')) item = (propertyText(event.properties.$current_url) ?? '').replace(/(.)\/$/, '$1');
  if (event.event === '$screen' && mapped('$screen')) item = propertyText(event.properties.$screen_name) ?? '';
  for (const rule of input.cleaning) item = item.replace(new RegExp(rule.regex, 'g'), rule.alias.replace(/\\(\d)/g, '$$$1'));
  const grouping = input.pathGroupings.find((pattern) => new RegExp(groupingRegex(pattern)).test(item));
  return grouping ?? item;
}

function kept(input: PathsInput, event: PlainEvent): boolean {
  if (input.includeEventTypes.length === 0) return true;
  return input.includeEventTypes.some((kind) => (kind === 'custom_event' ? !event.event.startsWith('$') : event.event === kind));
}

/** The path cut to its points and step limit; null when it lacks a point. */
function cut(input: PathsInput, path: Step[]): Step[] | null {
  const limit = input.stepLimit;
  const indexOf = (steps: Step[], item: string) => steps.findIndex((step) => step.item === item);
  const single = (point: string) => (point.length > 1 && point.endsWith('/') ? point.slice(0, -1) : point);
  if (input.startPoint !== null && input.endPoint !== null) {
    const start = indexOf(path, input.startPoint);
    if (start < 0) return null;
    const fromStart = path.slice(start);
    const end = indexOf(fromStart, input.endPoint);
    if (end < 0) return null;
    const between = fromStart.slice(0, end + 1);
    if (between.length <= limit) return between;
    const half = Math.floor(limit / 2);
    return [...between.slice(0, half), { ...between[half]!, item: '...' }, ...between.slice(between.length - half)];
  }
  if (input.endPoint !== null) {
    const end = indexOf(path, single(input.endPoint));
    return end < 0 ? null : path.slice(0, end + 1).slice(-limit);
  }
  if (input.startPoint !== null) {
    const start = indexOf(path, single(input.startPoint));
    return start < 0 ? null : path.slice(start).slice(0, limit);
  }
  return path.slice(0, limit);
}

/** The kept paths of every person (persons resolved), each cut as the input says. */
export function referencePathList(input: PathsInput, ctx: ReferenceContext, allEvents: readonly PlainEvent[]): { person: string; path: Step[] }[] {
  const trendsLike = {
    series: [],
    interval: 'day' as const,
    properties: null,
    breakdown: null,
    compare: false,
    formula: null,
    display: 'ActionsLineGraph' as const,
  };
  const { current } = resolvePeriods({ ...trendsLike, dateFrom: input.dateFrom, dateTo: input.dateTo }, ctx, allEvents);
  const byPerson = new Map<string, Step[]>();
  for (const event of allEvents) {
    if (event.timestamp < current.fromInstant || event.timestamp >= current.endInstant) continue;
    if (!matchesGroup(event, input.properties, ctx) || !kept(input, event)) continue;
    const item = itemOf(input, event);
    if (input.includeEventTypes.length > 0 && input.excludeEvents.includes(item)) continue;
    byPerson.set(event.person, [...(byPerson.get(event.person) ?? []), { item, at: event.timestamp, event }]);
  }
  const result: { person: string; path: Step[] }[] = [];
  for (const [person, steps] of byPerson) {
    steps.sort((a, b) => a.at - b.at || compareText(a.event.uuid, b.event.uuid));
    const sessions: Step[][] = [];
    steps.forEach((step, i) => {
      if (i === 0 || step.at - steps[i - 1]!.at >= SESSION_GAP_MS) sessions.push([]);
      sessions[sessions.length - 1]!.push(step);
    });
    for (const session of sessions) {
      const compact = session.filter((step, i) => step.item !== (session[i + 1]?.item ?? ''));
      const path = cut(input, compact);
      if (path !== null) result.push({ person, path });
    }
  }
  return result;
}

export function referencePaths(input: PathsInput, ctx: ReferenceContext, allEvents: readonly PlainEvent[]): PathEdge[] {
  const edges = new Map<string, { source: string; target: string; value: number; seconds: number }>();
  for (const { path } of referencePathList(input, ctx, allEvents)) {
    for (let i = 1; i < path.length; i += 1) {
      const source = `${i}_${path[i - 1]!.item}`;
      const target = `${i + 1}_${path[i]!.item}`;
      const edge = edges.get(`${source}\u0000${target}`) ?? { source, target, value: 0, seconds: 0 };
      edge.value += 1;
      edge.seconds += (path[i]!.at - path[i - 1]!.at) / 1000;
      edges.set(`${source}\u0000${target}`, edge);
    }
  }
  const listed = [...edges.values()]
    .filter(
      (edge) => (input.minEdgeWeight === null || edge.value >= input.minEdgeWeight) && (input.maxEdgeWeight === null || edge.value <= input.maxEdgeWeight),
    )
    .sort((a, b) => b.value - a.value || compareText(a.source, b.source) || compareText(a.target, b.target))
    .slice(0, input.edgeLimit)
    .map((edge) => ({ source: edge.source, target: edge.target, value: edge.value, average_conversion_time: (edge.seconds / edge.value) * 1000 }));
  const next = new Map<string, string[]>();
  for (const edge of listed) next.set(edge.source, [...(next.get(edge.source) ?? []), edge.target]);
  const seen = new Set<string>();
  const stack = listed.filter((edge) => edge.source.startsWith('1_')).map((edge) => edge.source);
  while (stack.length > 0) {
    const node = stack.pop()!;
    seen.add(node);
    for (const target of next.get(node) ?? []) if (!seen.has(target)) stack.push(target);
  }
  return listed.filter((edge) => seen.has(edge.source));
}
