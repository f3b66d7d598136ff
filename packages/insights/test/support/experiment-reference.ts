/** Experiment exposures and metric statistics (docs/experiments.md) in plain TypeScript, over stored events. */
import type { VariantSufficientStats } from '../../src/experiment-stats';
import type { ExperimentMetric, ExperimentTarget, MetricSource } from '../../src/experiments';
import type { JsonValue } from '../../src/types';
import type { PlainEvent } from './reference';

/** A property's text as the engine compares it (the generators only write strings and numbers). */
const text = (value: JsonValue | undefined): string =>
  value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);

interface Exposed {
  variant: string;
  first: number;
}

function unitOf(event: PlainEvent, target: ExperimentTarget): string {
  return target.groupTypeIndex === null ? event.person : (event.groups[target.groupTypeIndex] ?? '');
}

function inRange(event: PlainEvent, target: ExperimentTarget): boolean {
  if (event.timestamp < target.start.getTime() || event.timestamp > target.end.getTime()) return false;
  return !target.exposure.filterTestAccounts || !/^(localhost|127\.0\.0\.1)($|:)/.test(text(event.properties.$host));
}

/** Each exposed unit's variant (`$multiple` when excluded) and first exposure. */
export function referenceExposures(events: readonly PlainEvent[], target: ExperimentTarget): Map<string, Exposed> {
  const seen = new Map<string, { variants: Set<string>; first: number; firstVariant: string }>();
  for (const event of events) {
    if (!inRange(event, target)) continue;
    const custom = target.exposure.event;
    const matches =
      custom === null ? event.event === '$feature_flag_called' && text(event.properties.$feature_flag) === target.flagKey : event.event === custom;
    if (!matches) continue;
    const variant = text(event.properties[custom === null ? '$feature_flag_response' : `$feature/${target.flagKey}`]);
    const unit = unitOf(event, target);
    if (unit === '' || !target.variants.includes(variant)) continue;
    const entry = seen.get(unit);
    if (!entry) {
      seen.set(unit, { variants: new Set([variant]), first: event.timestamp, firstVariant: variant });
      continue;
    }
    entry.variants.add(variant);
    if (event.timestamp < entry.first) Object.assign(entry, { first: event.timestamp, firstVariant: variant });
  }
  const exposed = new Map<string, Exposed>();
  for (const [unit, entry] of seen) {
    const variant = target.exposure.multipleVariantHandling === 'first_seen' || entry.variants.size === 1 ? entry.firstVariant : '$multiple';
    exposed.set(unit, { variant, first: entry.first });
  }
  return exposed;
}

function matchesSeries(event: PlainEvent, series: MetricSource): boolean {
  if (series.event !== null && event.event !== series.event) return false;
  // The generated metrics filter on `plan` only, with `is_not`.
  return (series.properties?.values ?? []).every((filter) => 'key' in filter && text(event.properties[filter.key]) !== text(filter.value));
}

function sourceValue(events: readonly PlainEvent[], series: MetricSource): number {
  const matching = events.filter((event) => matchesSeries(event, series));
  if (series.math === 'unique_session') return new Set(matching.map((event) => text(event.properties.$session_id)).filter((id) => id !== '')).size;
  if (series.math === 'sum')
    return matching.reduce(
      (total, event) => total + (Number.isFinite(Number(event.properties[series.mathProperty!])) ? Number(event.properties[series.mathProperty!]) : 0),
      0,
    );
  return matching.length;
}

/** ClickHouse's quantileExact: the element at floor(level × n) of the sorted values. */
function quantileExact(values: readonly number[], level: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(level * sorted.length))]!;
}

export function referenceStatistics(events: readonly PlainEvent[], target: ExperimentTarget, metric: ExperimentMetric): VariantSufficientStats[] {
  const exposed = referenceExposures(events, target);
  const windowed = new Map<string, PlainEvent[]>();
  for (const [unit, { first }] of exposed) {
    windowed.set(
      unit,
      events.filter(
        (event) =>
          inRange(event, target) &&
          unitOf(event, target) === unit &&
          event.timestamp >= first &&
          (metric.window === null || event.timestamp < first + metric.window * 1000),
      ),
    );
  }
  const units = [...exposed].map(([unit, { variant }]) => {
    const own = windowed.get(unit)!;
    if (metric.type === 'funnel') {
      const ordered = [...own].sort((a, b) => a.timestamp - b.timestamp || (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
      let reached = 0;
      for (const event of ordered) if (reached < metric.steps.length && matchesSeries(event, metric.steps[reached]!)) reached += 1;
      return { variant, value: reached === metric.steps.length ? 1 : 0, den: 0, reached };
    }
    if (metric.type === 'ratio') return { variant, value: sourceValue(own, metric.numerator), den: sourceValue(own, metric.denominator), reached: 0 };
    return { variant, value: sourceValue(own, metric.source), den: 0, reached: 0 };
  });
  if (metric.type === 'mean' && units.length > 0 && (metric.lowerPercentile !== null || metric.upperPercentile !== null)) {
    const values = units.map((unit) => unit.value);
    const lower = metric.lowerPercentile === null ? Math.min(...values) : quantileExact(values, metric.lowerPercentile);
    const upper = metric.upperPercentile === null ? Math.max(...values) : quantileExact(values, metric.upperPercentile);
    for (const unit of units) unit.value = Math.min(Math.max(unit.value, lower), upper);
  }
  return target.variants.map((key) => {
    const own = units.filter((unit) => unit.variant === key);
    const statistics: VariantSufficientStats = {
      key,
      number_of_samples: own.length,
      sum: own.reduce((total, unit) => total + unit.value, 0),
      sum_squares: own.reduce((total, unit) => total + unit.value * unit.value, 0),
    };
    if (metric.type === 'ratio') {
      statistics.denominator_sum = own.reduce((total, unit) => total + unit.den, 0);
      statistics.denominator_sum_squares = own.reduce((total, unit) => total + unit.den * unit.den, 0);
      statistics.numerator_denominator_sum_product = own.reduce((total, unit) => total + unit.value * unit.den, 0);
    }
    if (metric.type === 'funnel') statistics.step_counts = metric.steps.map((_, i) => own.filter((unit) => unit.reached >= i + 1).length);
    return statistics;
  });
}
