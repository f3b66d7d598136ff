/**
 * docs/insights.md "Funnels" in plain TypeScript over events already read back (no SQL): the oracle the funnel
 * property test compares the engine with. Steps visualisation: per breakdown value the cumulative counts and
 * the average and median seconds between consecutive steps.
 */
import { WINDOW_UNIT_SECONDS, type FunnelInput } from '../../src/funnel-input';
import type { Series } from '../../src/types';
import { matchesGroup, propertyText, resolvePeriods, type PlainEvent, type ReferenceContext } from './reference';

export interface FunnelGroup {
  /** The breakdown value (`Other` for the merged rest); null without a breakdown. */
  value: string | null;
  counts: number[];
  average: (number | null)[];
  median: (number | null)[];
}

interface Candidate {
  event: PlainEvent;
  /** 1-based steps matched; a negative -(g+1) for an exclusion covering gap g. */
  steps: number[];
  value: string;
}

interface Slot {
  entry: number;
  excluded: boolean;
  chain: number[];
}

const EMPTY: Slot = { entry: 0, excluded: false, chain: [] };

function matches(series: Series, event: PlainEvent, ctx: ReferenceContext): boolean {
  return (series.event === null || event.event === series.event) && matchesGroup(event, series.properties, ctx);
}

function breakdownValue(input: FunnelInput, event: PlainEvent): string {
  const breakdown = input.breakdown;
  if (breakdown === null) return '';
  const source = breakdown.type === 'event' ? event.properties : breakdown.type === 'person' ? event.personProperties : (event.groupProperties[breakdown.groupTypeIndex ?? 0] ?? {});
  return propertyText(source[breakdown.property]) ?? '';
}

/** The ordered/strict state machine (PostHog's): the furthest step (0-based, -1 = out) and the chain's events. */
function ordered(input: FunnelInput, events: readonly Candidate[], val: string, windowMs: number): { reached: number; chain: number[] } {
  const n = input.steps.length;
  const strict = input.orderType === 'strict';
  const restrictStep = input.breakdown !== null && input.attribution === 'step';
  const slots: Slot[] = Array.from({ length: n + 1 }, () => EMPTY);
  let best = { step: 0, ...EMPTY };
  // Items: events in timestamp order; a timestamp whose events match different steps is split into one item per step.
  const items: { index: number; steps: number[]; split: boolean }[] = [];
  for (let i = 0; i < events.length; ) {
    let j = i;
    while (j < events.length && events[j]!.event.timestamp === events[i]!.event.timestamp) j += 1;
    const group = events.slice(i, j).map((candidate, k) => ({ candidate, index: i + k }));
    const split = group.some(({ candidate }) => candidate.steps.join() !== group[0]!.candidate.steps.join());
    if (split) {
      const parts = group.flatMap(({ candidate, index }) => candidate.steps.filter((step) => step > 0).map((step) => ({ index, steps: [step], split: true })));
      items.push(...parts.sort((a, b) => a.steps[0]! - b.steps[0]! || a.index - b.index));
    } else items.push(...group.map(({ candidate, index }) => ({ index, steps: candidate.steps, split: false })));
    i = j;
  }
  let lastTs = -1;
  for (const item of items) {
    const ts = events[item.index]!.event.timestamp;
    if (ts !== lastTs) {
      if (slots[n]!.entry !== 0) break;
      slots[0] = { entry: ts, excluded: false, chain: [] };
      lastTs = ts;
    }
    for (const st of [...item.steps].reverse()) {
      const k = Math.abs(st);
      const prev = slots[k - 1]!;
      if (prev.entry === 0 || ts - prev.entry > windowMs || slots[k]!.entry === prev.entry) continue;
      if (st < 0) {
        if (prev.excluded) continue;
        slots[k - 1] = { ...prev, excluded: true };
        if (best.step === k - 1 && ts - best.entry <= windowMs) best = { ...best, excluded: true };
        continue;
      }
      if (restrictStep && k - 1 === input.attributionStep && events[item.index]!.value !== val) continue;
      if (item.split && prev.chain.includes(item.index)) continue;
      const next: Slot = { entry: prev.entry, excluded: prev.excluded, chain: [...prev.chain, item.index] };
      if (!prev.excluded) slots[k] = next;
      if (k > best.step || (k === best.step && best.excluded)) best = { step: k, ...next };
    }
    if (strict && !item.split) for (let s = 1; s <= n; s += 1) if (!item.steps.includes(s)) slots[s] = EMPTY;
  }
  return { reached: best.excluded ? -1 : best.step - 1, chain: best.chain };
}

/** Unordered: the most distinct steps within one window, an event counting for the step whose latest event is oldest. */
function unordered(input: FunnelInput, events: readonly Candidate[], windowMs: number): { reached: number; chain: number[] } {
  let queues: number[][] = input.steps.map(() => []);
  let best = { count: 0, chain: [] as number[] };
  events.forEach((candidate, index) => {
    const positive = candidate.steps.filter((step) => step > 0);
    if (positive.length === 0) return;
    const latest = (step: number) => {
      const queue = queues[step - 1]!;
      return queue.length === 0 ? 0 : events[queue[queue.length - 1]!]!.event.timestamp;
    };
    const chosen = [...positive].sort((a, b) => latest(a) - latest(b) || a - b)[0]!;
    queues[chosen - 1] = [...queues[chosen - 1]!, index];
    queues = queues.map((queue) => queue.filter((j) => candidate.event.timestamp - events[j]!.event.timestamp <= windowMs));
    const count = queues.filter((queue) => queue.length > 0).length;
    if (count > best.count) {
      const firsts = queues.filter((queue) => queue.length > 0).map((queue) => queue[0]!);
      best = { count, chain: firsts.sort((a, b) => events[a]!.event.timestamp - events[b]!.event.timestamp || a - b) };
    }
  });
  return { reached: best.count - 1, chain: best.chain };
}

/** The R-7 median (ClickHouse's quantileExactInclusive(0.5)). */
function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const h = (sorted.length - 1) / 2;
  const low = Math.floor(h);
  return sorted[low]! + (h - low) * ((sorted[Math.min(low + 1, sorted.length - 1)] ?? 0) - sorted[low]!);
}

function compareText(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

export function referenceFunnelSteps(input: FunnelInput, ctx: ReferenceContext, allEvents: readonly PlainEvent[]): FunnelGroup[] {
  const trendsLike = { series: [], interval: 'day' as const, properties: null, breakdown: null, compare: false, formula: null, display: 'ActionsLineGraph' as const };
  const { current } = resolvePeriods({ ...trendsLike, dateFrom: input.dateFrom, dateTo: input.dateTo }, ctx, allEvents);
  const windowMs = input.window.amount * WINDOW_UNIT_SECONDS[input.window.unit] * 1000;
  const n = input.steps.length;
  const byActor = new Map<string, Candidate[]>();
  for (const event of allEvents) {
    if (event.timestamp < current.fromInstant || event.timestamp >= current.endInstant || !matchesGroup(event, input.properties, ctx)) continue;
    const steps = input.steps.flatMap((step, i) => (matches(step, event, ctx) ? [i + 1] : []));
    for (let gap = 1; gap < n; gap += 1) {
      if (input.exclusions.some((exclusion) => exclusion.fromStep < gap && gap <= exclusion.toStep && matches(exclusion.series, event, ctx))) steps.push(-(gap + 1));
    }
    if (input.orderType !== 'strict' && steps.length === 0) continue;
    const actor = input.aggregationGroupTypeIndex === null ? event.person : (event.groups[input.aggregationGroupTypeIndex] ?? '');
    if (actor === '') continue;
    byActor.set(actor, [...(byActor.get(actor) ?? []), { event, steps, value: breakdownValue(input, event) }]);
  }

  const perValue = new Map<string, { exact: number[]; gaps: number[][] }>();
  for (const candidates of byActor.values()) {
    candidates.sort((a, b) => a.event.timestamp - b.event.timestamp || compareText(a.steps.join(), b.steps.join()));
    const valued = candidates.filter((candidate) => candidate.value !== '');
    const values =
      input.breakdown === null
        ? ['']
        : input.attribution === 'first_touch'
          ? [valued[0]?.value ?? '']
          : input.attribution === 'last_touch'
            ? [valued[valued.length - 1]?.value ?? '']
            : input.attribution === 'all_events'
              ? [...new Set(candidates.map((candidate) => candidate.value))]
              : [...new Set(candidates.filter((candidate) => candidate.steps.includes(input.attributionStep + 1)).map((candidate) => candidate.value))];
    for (const val of values) {
      const events = input.breakdown !== null && input.attribution === 'all_events' ? candidates.filter((candidate) => candidate.value === val) : candidates;
      const { reached, chain } = input.orderType === 'unordered' ? unordered(input, events, windowMs) : ordered(input, events, val, windowMs);
      if (reached < 0) continue;
      const entry = perValue.get(val) ?? { exact: Array<number>(n).fill(0), gaps: input.steps.map(() => []) };
      entry.exact[reached]! += 1;
      for (let k = 1; k <= reached; k += 1) {
        const seconds = (events[chain[k]!]!.event.timestamp - events[chain[k - 1]!]!.event.timestamp) / 1000;
        if (seconds > 0) entry.gaps[k]!.push(seconds);
      }
      perValue.set(val, entry);
    }
  }

  const ranked = [...perValue.entries()].sort(([va, a], [vb, b]) => {
    for (let i = n - 1; i >= 0; i -= 1) if (a.exact[i] !== b.exact[i]) return b.exact[i]! - a.exact[i]!;
    return compareText(va, vb);
  });
  const limit = input.breakdown?.limit ?? 1;
  const merged = new Map<string, { exact: number[]; gaps: number[][] }>();
  ranked.forEach(([value, entry], rank) => {
    const shown = rank < limit ? value : 'Other';
    const into = merged.get(shown) ?? { exact: Array<number>(n).fill(0), gaps: input.steps.map(() => []) };
    entry.exact.forEach((count, i) => (into.exact[i]! += count));
    entry.gaps.forEach((gaps, i) => into.gaps[i]!.push(...gaps));
    merged.set(shown, into);
  });
  const groups = [...merged.entries()].map(([value, entry]) => {
    let atLeast = 0;
    const counts = [...entry.exact].reverse().map((count) => (atLeast += count)).reverse();
    return {
      value: input.breakdown === null ? null : value,
      counts,
      average: entry.gaps.map((gaps, i) => (i === 0 || gaps.length === 0 ? null : gaps.reduce((sum, gap) => sum + gap, 0) / gaps.length)),
      median: entry.gaps.map((gaps, i) => (i === 0 ? null : median(gaps))),
    };
  });
  if (groups.length === 0 && input.breakdown === null) {
    return [{ value: null, counts: Array<number>(n).fill(0), average: Array<null>(n).fill(null), median: Array<null>(n).fill(null) }];
  }
  return groups;
}
