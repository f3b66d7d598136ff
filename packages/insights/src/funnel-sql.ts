/**
 * The funnel of every actor, in one ClickHouse query (docs/insights.md, "Funnels: how it is computed"). Per
 * actor the candidate events are gathered, sorted, and run through the step state machine with `arrayFold`;
 * each actor yields the furthest step reached, the events of the reported chain and the breakdown value it
 * counts under. Everything user-supplied is a bound parameter.
 */
import { PERSON_ID_EXPRESSION, PERSON_OVERRIDES_SUBQUERY } from '@plover/clickhouse';
import { WINDOW_UNIT_SECONDS, type FunnelInput } from './funnel-input';
import type { Params } from './params';
import { propertiesCondition, propertyColumn, propertyText, type FilterScope } from './properties';
import { seriesEventCondition } from './series';
import type { InsightContext, Interval, Series } from './types';

const GROUP_KEY_COLUMNS = ['e.`$group_0`', 'e.`$group_1`', 'e.`$group_2`', 'e.`$group_3`', 'e.`$group_4`'] as const;

/** Local wall-clock bounds of the range (both inclusive, to the second) and the project timezone, bound. */
export interface FunnelBounds {
  from: string;
  to: string;
  tz: string;
}

/** `let name = value in body`: binds a value once inside lambdas, so that its SQL is not repeated. */
function bind(name: string, value: string, body: string): string {
  return `arrayMap(${name} -> ${body}, [${value}])[1]`;
}

/** `arr` with element `index` (1-based SQL) replaced by `value`. */
function setAt(arr: string, index: string, value: string): string {
  return `arrayMap((old, j) -> if(j = ${index}, ${value}, old), ${arr}, arrayEnumerate(${arr}))`;
}

const SLOT = 'Tuple(Int64, UInt8, Array(UInt32))';
const EMPTY_SLOT = `CAST((0, 0, []), '${SLOT}')`;

/** The period an event's timestamp falls in, as the range's bucket text (`YYYY-MM-DD HH:MM:SS`). */
export function periodExpression(interval: Interval, tz: string): string {
  const start = {
    minute: `toStartOfMinute(e.timestamp, ${tz})`,
    hour: `toStartOfHour(e.timestamp, ${tz})`,
    day: `toStartOfDay(e.timestamp, ${tz})`,
    week: `toStartOfWeek(e.timestamp, 0, ${tz})`,
    month: `toStartOfMonth(e.timestamp, ${tz})`,
  }[interval];
  return `formatDateTime(${start}, '%Y-%m-%d %H:%i:%S', ${tz})`;
}

/**
 * The ordered/strict state machine over `items` — `(ts, event index, steps, split)`, steps 1-based, exclusion
 * gaps negative — for breakdown value `val` and entry period `period`. State: slot k holds the chain that
 * reached step k (`(entry ts, excluded, event indexes)`; slot 0 is "entered at this timestamp"), the best
 * chain so far `(step, entry, excluded, indexes)`, the last timestamp seen, and whether the funnel completed.
 */
function orderedFold(
  input: FunnelInput,
  params: Params,
  windowMicros: string,
  ev: string,
  items: string,
  restricted: { step: boolean; period: boolean },
): string {
  const n = input.steps.length;
  const strict = input.orderType === 'strict';
  const stepMismatch = restricted.step ? `(k - 1 = ${params.add(input.attributionStep, 'UInt8')} AND ${ev}[it.2].3 != val)` : '0';
  const periodMismatch = restricted.period ? `(k = 1 AND ${ev}[it.2].5 != period)` : '0';
  // One step of one item: a = (slots, best), st = the step (negative: an exclusion gap).
  const advance = `(a, st) -> ${bind(
    'k',
    'toUInt8(abs(st))',
    bind(
      'prev',
      'a.1[k]',
      `if(prev.1 = 0 OR it.1 - prev.1 > ${windowMicros} OR (a.1[k + 1].1 = prev.1),
        a,
        if(st < 0,
          if(prev.2 = 1, a, (${setAt('a.1', 'k', '(prev.1, toUInt8(1), prev.3)')},
            if(a.2.1 = k - 1 AND it.1 - a.2.2 <= ${windowMicros}, (a.2.1, a.2.2, toUInt8(1), a.2.4), a.2))),
          if(${stepMismatch} OR ${periodMismatch} OR (it.4 = 1 AND has(prev.3, it.2)),
            a,
            ${bind(
              'nw',
              '(prev.1, prev.2, arrayPushBack(prev.3, it.2))',
              `(if(prev.2 = 1, a.1, ${setAt('a.1', 'k + 1', 'nw')}),
                if(k > a.2.1 OR (k = a.2.1 AND a.2.3 = 1), (k, nw.1, nw.2, nw.3), a.2))`,
            )})))`,
    ),
  )}`;
  const reset = strict
    ? `arrayMap((slot, j) -> if(j > 1 AND it.4 = 0 AND NOT has(it.3, toInt8(j - 1)), ${EMPTY_SLOT}, slot), r.1, arrayEnumerate(r.1))`
    : 'r.1';
  const last = params.add(n + 1, 'UInt8');
  // s = (slots, best, last ts, done)
  const item = `(s, it) -> if(s.4 = 1 OR (it.1 != s.3 AND s.1[${last}].1 != 0),
      (s.1, s.2, it.1, toUInt8(1)),
      ${bind(
        'r',
        `arrayFold(${advance}, arrayReverse(it.3), (if(it.1 != s.3, ${setAt('s.1', '1', `CAST((it.1, 0, []), '${SLOT}')`)}, s.1), s.2))`,
        `(${reset}, r.2, it.1, toUInt8(0))`,
      )})`;
  const initial = `CAST((arrayResize([${EMPTY_SLOT}], ${last}, ${EMPTY_SLOT}), (0, 0, 0, []), -1, 0), 'Tuple(Array(${SLOT}), Tuple(UInt8, Int64, UInt8, Array(UInt32)), Int64, UInt8)')`;
  const best = `arrayFold(${item}, ${items}, ${initial}).2`;
  return bind('b', best, '(if(b.3 = 1, toInt8(-1), toInt8(b.1) - 1), b.4)');
}

/**
 * The unordered funnel: per step the events (indexes) that matched it within the window before the current
 * event; an event matching several steps counts for the one whose latest event is oldest. The best is the
 * most distinct steps at once, its chain the first event of each step in time order.
 */
function unorderedFold(input: FunnelInput, params: Params, windowMicros: string, ev: string): string {
  const n = params.add(input.steps.length, 'UInt8');
  const latest = (queue: string) => `if(empty(${queue}), toInt64(0), ${ev}[${queue}[-1]].1)`;
  const item = `(s, x, i) -> ${bind(
    'ps',
    'arrayFilter(st -> st > 0, x.4)',
    `if(empty(ps),
      s,
      ${bind(
        'chosen',
        `toUInt8(arraySort(st -> (${latest('s.1[st]')}, st), ps)[1])`,
        bind(
          'q',
          `arrayMap(queue -> arrayFilter(j -> x.1 - ${ev}[j].1 <= ${windowMicros}, queue), ${setAt('s.1', 'chosen', 'arrayPushBack(s.1[chosen], toUInt32(i))')})`,
          bind(
            'count',
            'toUInt8(arrayCount(queue -> notEmpty(queue), q))',
            `(q, if(count > s.2.1, (count, arraySort(j -> (${ev}[j].1, j), arrayMap(queue -> queue[1], arrayFilter(queue -> notEmpty(queue), q)))), s.2))`,
          ),
        ),
      )})`,
  )}`;
  const initial = `CAST((arrayResize([emptyArrayUInt32()], ${n}, emptyArrayUInt32()), (0, [])), 'Tuple(Array(Array(UInt32)), Tuple(UInt8, Array(UInt32)))')`;
  return bind('b', `arrayFold(${item}, ${ev}, arrayEnumerate(${ev}), ${initial}).2`, '(toInt8(b.1) - 1, b.2)');
}

/**
 * Ordered and strict funnels take events in timestamp order; events sharing a timestamp but matching different
 * steps are split into one item per step and taken in step order (marked `split`: no strict reset, no event used
 * twice in a chain, no exclusions), as PostHog does.
 */
function itemsOf(ev: string): string {
  const starts = `arrayMap((x, i) -> i = 1 OR x.1 != ${ev}[i - 1].1, ${ev}, arrayEnumerate(${ev}))`;
  const ends = `arrayMap((x, i) -> i = length(${ev}) OR x.1 != ${ev}[i + 1].1, ${ev}, arrayEnumerate(${ev}))`;
  const firsts = `arrayFill((x, f) -> f, ${ev}, ${starts})`;
  const lasts = `arrayReverseFill((x, f) -> f, ${ev}, ${ends})`;
  const split = `arrayMap((f, l) -> f.4 != l.4, ${firsts}, ${lasts})`;
  const exploded = `arrayFlatten(arrayMap((x, i, m) -> if(m, arrayMap(st -> (x.1, toUInt32(i), [st], toUInt8(1)), arrayFilter(st -> st > 0, x.4)), [(x.1, toUInt32(i), x.4, toUInt8(0))]), ${ev}, arrayEnumerate(${ev}), ${split}))`;
  return `arraySort(t -> (t.1, t.3[1] * t.4, t.2), ${exploded})`;
}

export async function entityCondition(series: Series, params: Params, scope: FilterScope, attr: string): Promise<string> {
  const name = await seriesEventCondition(series, params, scope);
  return `(${name} AND ${await propertiesCondition(series.properties, params, scope, `${attr}__properties`)})`;
}

/** Who an event counts for: its person (merged persons resolved), or its key of group type `group`. */
export function actorExpression(group: number | null): string {
  return group === null ? `toString(${PERSON_ID_EXPRESSION})` : GROUP_KEY_COLUMNS[group]!;
}

export interface ActorFunnelOptions {
  /** Run once per entrance period (funnel trends): only first-step events in that period enter. */
  byPeriod: boolean;
}

/**
 * One row per actor and breakdown value (and entrance period with `byPeriod`): `actor`, `val`, `period`,
 * `reached` (0-based furthest step; actors excluded or never entering are left out), `times` (the reported
 * chain's event timestamps in microseconds, in step order) and `uuids`.
 */
export async function actorFunnelSql(
  input: FunnelInput,
  params: Params,
  ctx: InsightContext,
  bounds: FunnelBounds,
  options: ActorFunnelOptions,
): Promise<string> {
  const scope: FilterScope = { personId: PERSON_ID_EXPRESSION, ctx };
  const global = await propertiesCondition(input.properties, params, scope, 'properties');
  const steps = await Promise.all(input.steps.map((step, i) => entityCondition(step, params, scope, `events__${i}`)));
  const exclusions = await Promise.all(input.exclusions.map((exclusion, i) => entityCondition(exclusion.series, params, scope, `exclusions__${i}`)));
  const gaps: string[] = [];
  for (let gap = 1; gap < input.steps.length; gap += 1) {
    const covering = input.exclusions.flatMap((exclusion, j) => (exclusion.fromStep < gap && gap <= exclusion.toStep ? [exclusions[j]!] : []));
    if (covering.length > 0) gaps.push(`-${gap + 1} * (${covering.join(' OR ')})`);
  }
  const stepArray = `arrayFilter(x -> x != 0, CAST([${[...steps.map((condition, i) => `${i + 1} * ${condition}`), ...gaps].join(', ')}], 'Array(Int8)'))`;
  const strict = input.orderType === 'strict';
  const scanned = [...input.steps, ...input.exclusions.map((exclusion) => exclusion.series)];
  const names = scanned.flatMap((series) => (series.event === null ? [] : [series.event]));
  const prefilter = strict || names.length < scanned.length ? '1' : `e.event IN ${params.add(names, 'Array(String)')}`;
  const group = input.aggregationGroupTypeIndex;
  const actor = actorExpression(group);
  const breakdown = input.breakdown;
  const value = breakdown === null ? "''" : propertyText(propertyColumn(breakdown.type, breakdown.groupTypeIndex), breakdown.property, params);
  const period = options.byPeriod ? periodExpression(input.interval, bounds.tz) : "''";

  const events = `SELECT ${actor} AS actor, toUnixTimestamp64Micro(e.timestamp) AS ts, e.uuid AS uuid, ${value} AS bd, ${stepArray} AS steps, ${period} AS pd
    FROM events AS e FINAL LEFT JOIN (${PERSON_OVERRIDES_SUBQUERY}) AS o ON e.person_id = o.old_person_id
    WHERE e.team_id = {projectId:Int64}
      AND e.timestamp >= toDateTime64(${params.add(bounds.from, 'String')}, 6, ${bounds.tz})
      AND e.timestamp < toDateTime64(${params.add(bounds.to, 'String')}, 6, ${bounds.tz}) + INTERVAL 1 SECOND
      AND ${prefilter} AND ${global}`;
  const kept = [strict ? '1' : 'notEmpty(steps)', group === null ? '1' : "actor != ''"].join(' AND ');

  const attributionStep = params.add(input.attributionStep + 1, 'Int8');
  const values = {
    none: "['']",
    first_touch: "[argMinIf(bd, (ts, uuid), bd != '')]",
    last_touch: "[argMaxIf(bd, (ts, uuid), bd != '')]",
    all_events: 'groupUniqArray(bd)',
    step: `groupUniqArrayIf(bd, has(steps, ${attributionStep}))`,
  }[breakdown === null ? 'none' : input.attribution];
  const periods = options.byPeriod ? 'groupUniqArrayIf(pd, has(steps, toInt8(1)))' : "['']";
  const restricted = { step: breakdown !== null && input.attribution === 'step' && input.orderType !== 'unordered', period: options.byPeriod };
  const filtered = breakdown !== null && input.attribution === 'all_events' ? 'arrayFilter(x -> x.3 = val, all_ev)' : 'all_ev';
  const windowMicros = params.add(input.window.amount * WINDOW_UNIT_SECONDS[input.window.unit] * 1_000_000, 'Int64');
  const fold =
    input.orderType === 'unordered'
      ? unorderedFold(input, params, windowMicros, 'ev')
      : orderedFold(input, params, windowMicros, 'ev', itemsOf('ev'), restricted);

  return `SELECT actor, val, period, result.1 AS reached, arrayMap(i -> ev[i].1, result.2) AS times, arrayMap(i -> ev[i].2, result.2) AS uuids
    FROM (
      SELECT actor, val, period, ${filtered} AS ev, ${fold} AS result
      FROM (
        SELECT actor, arraySort(x -> (x.1, x.4, x.2), groupArray((ts, uuid, bd, steps, pd))) AS all_ev, ${values} AS vals, ${periods} AS pds
        FROM (${events}) WHERE ${kept}
        GROUP BY actor
      )
      ARRAY JOIN vals AS val
      ARRAY JOIN pds AS period
    )
    WHERE result.1 >= 0`;
}
