/**
 * Actions → one ClickHouse condition over an `events` row (docs/actions.md). An action is a list of steps; an event
 * matches the action when it matches any step, and a step when it meets every condition the step sets: the event
 * name, the page URL, the clicked element (only on `$autocapture` events) and property filters. Element conditions
 * read `elements_chain` as PostHog stores it (`tag.class:attr="value"…;parent…`) with the extractions PostHog
 * materializes (`elements_chain_href`, `…_texts`). Every user value enters the SQL as a bound parameter; regexes run
 * in ClickHouse's RE2 (linear time).
 */
import { ApiError } from '@plover/core';
import { parsePropertyFilters } from './filters';
import type { Params } from './params';
import { propertiesCondition, propertyText, type FilterScope } from './properties';
import { isPropertyGroup, type ActionDefinition, type ActionStep, type PropertyGroup, type StringMatching } from './types';

export const STRING_MATCHINGS: readonly StringMatching[] = ['exact', 'contains', 'regex'];

export const AUTOCAPTURE = '$autocapture';

/** The first `href` of the chain (PostHog's materialized `elements_chain_href`); `''` when none. */
export const ELEMENTS_CHAIN_HREF = `extract(elements_chain, '(?::|")href="(.*?)"')`;
/** The distinct `text` values of the chain (PostHog's `elements_chain_texts`). */
export const ELEMENTS_CHAIN_TEXTS = `arrayDistinct(extractAll(elements_chain, '(?::|")text="(.*?)"'))`;

// ---------------------------------------------------------------------------------------------------------
// CSS selectors → a regex over the chain (PostHog's Selector and build_selector_regex)

export interface SelectorPart {
  /** `>` before this part (it is the parent of the part before it in the list). */
  directChild: boolean;
  tag: string | null;
  classes: string[];
  /** Attributes the chain must carry on this element: `attr_id`, `nth-child`, or a raw attribute name. */
  attributes: [string, string][];
}

/** Splits on spaces outside `[…]`, keeping quoted text whole. */
function splitSelector(selector: string): string[] {
  const parts: string[] = [];
  let inAttribute = false;
  let quote: string | null = null;
  let part = '';
  for (const char of selector) {
    if (char === '[' && quote === null) inAttribute = true;
    if (char === ']' && quote === null) inAttribute = false;
    if (char === '"' || char === "'") {
      if (quote === null) quote = char;
      else if (quote === char) quote = null;
    }
    if (char === ' ' && !inAttribute) {
      parts.push(part);
      part = '';
    } else {
      part += char;
    }
  }
  parts.push(part);
  return parts;
}

/** `tag[name='value']`: the first bracket opens the attribute, the last quote before the final `]` closes it. */
const ATTRIBUTE = /([a-zA-Z]*)\[(.*)=['|"](.*)['|"]\]/;
/** A class separator: a dot not inside a `[…]` (Tailwind's `shadow-[0_4px_rgba(0,0,0,0.1)]`). */
const CLASS_DOT = /\.(?![^[]*\])/;

function selectorPart(raw: string, directChild: boolean): SelectorPart {
  const part: SelectorPart = { directChild, tag: null, classes: [], attributes: [] };
  let tag = raw;
  const attribute = ATTRIBUTE.exec(tag);
  if (attribute) {
    const [, before = '', key = '', value = ''] = attribute;
    part.attributes.push(tag.includes('[id=') ? ['attr_id', value] : [key, value]);
    tag = before;
  }
  if (tag.includes('nth-child(')) {
    const [before = '', after = ''] = tag.split(':nth-child(');
    part.attributes.push(['nth-child', after.replaceAll(')', '')]);
    tag = before;
  }
  if (tag.includes('.')) {
    const [before = '', ...classes] = tag.split(CLASS_DOT);
    part.classes = classes;
    tag = before;
  }
  if (tag.includes('#')) {
    const [before = '', id] = tag.split('#');
    if (id !== undefined) part.attributes.push(['attr_id', id]);
    tag = before;
  }
  if (tag !== '') part.tag = tag;
  return part;
}

/** The parts of a selector, the target element first and its ancestors after it. */
export function parseSelector(selector: string): SelectorPart[] {
  const cleaned = selector.replaceAll('> * > ', '').replaceAll('> *', '').replaceAll('\\:', ':').trim();
  const tokens = splitSelector(cleaned).reverse();
  const parts: SelectorPart[] = [];
  tokens.forEach((token, index) => {
    if (token === '>' || token === '') return;
    parts.push(selectorPart(token, index > 0 && tokens[index - 1] === '>'));
  });
  return parts;
}

/** A literal for a regex (what Python's re.escape guards: every metacharacter, and `-`, `#`, `&`, `~`, space). */
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\\-#&~ ]/g, (char) => (char === ' ' ? '\\x20' : `\\${char}`));
}

/** A value as the chain writes it: double quotes escaped as `\"`, whether the selector escaped them or not. */
function chainEscaped(value: string): string {
  return value.replaceAll('\\"', '"').replaceAll('"', '\\"');
}

/**
 * The regex PostHog matches a selector with against `elements_chain`: each part from the target outwards anchors
 * at an element start and needs its tag, its classes (sorted), its attributes (sorted by name); a `>` allows any
 * characters up to the next part, a space too (PostHog writes neither as a strict boundary).
 */
export function selectorRegex(selector: string): string {
  let regex = '';
  for (const part of parseSelector(selector)) {
    if (part.tag !== null && part.tag !== '*') regex += escapeRegex(part.tag);
    if (part.classes.length > 0) regex += '.*?\\.' + [...part.classes].sort().map(escapeRegex).join('\\..*?');
    if (part.attributes.length > 0) {
      regex += '.*?';
      // Later attributes of one name replace earlier ones, as a dict's keys do.
      const attributes = new Map(part.attributes);
      for (const [key, value] of [...attributes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        regex += `${escapeRegex(key)}="${escapeRegex(chainEscaped(value))}".*?`;
      }
    }
    regex += '[^;]*?($|;|:([^;^\\s]*(;|$|\\s)))';
    if (part.directChild) regex += '.*';
  }
  return regex === '' ? '' : `(^|;)${regex}`;
}

// ---------------------------------------------------------------------------------------------------------
// Steps → SQL

/** `contains` as PostHog writes it: LIKE/ILIKE `%value%` (so `%` and `_` in the value are wildcards). */
function matchString(column: string, value: string, matching: StringMatching, caseInsensitiveContains: boolean, params: Params): string {
  const bound = params.add(value, 'String');
  if (matching === 'regex') return `match(${column}, ${bound})`;
  if (matching === 'contains') return `${caseInsensitiveContains ? 'ilike' : 'like'}(${column}, concat('%', ${bound}, '%'))`;
  return `${column} = ${bound}`;
}

function stepProperties(step: ActionStep, attr: string): PropertyGroup | null {
  const group = parsePropertyFilters(step.properties ?? [], attr);
  if (group !== null && hasCohortFilter(group)) {
    throw ApiError.validation('Cohort filters are not supported in action steps.', attr, 'invalid_input');
  }
  return group;
}

function hasCohortFilter(group: PropertyGroup): boolean {
  return group.values.some((value) => (isPropertyGroup(value) ? hasCohortFilter(value) : value.type === 'cohort'));
}

/** Checks a step's property filters the way a query will read them (400 naming `steps__<i>__properties`). */
export function validateActionStep(step: ActionStep, index: number): void {
  stepProperties(step, `steps__${index}__properties`);
}

async function stepCondition(step: ActionStep, index: number, params: Params, scope: FilterScope): Promise<string> {
  const conditions: string[] = [];
  if (step.event) conditions.push(`event = ${params.add(step.event, 'String')}`);
  if (step.event === AUTOCAPTURE) {
    if (step.selector) conditions.push(`match(elements_chain, ${params.add(selectorRegex(step.selector), 'String')})`);
    if (step.tag_name !== undefined && step.tag_name !== null) {
      conditions.push(`match(elements_chain, ${params.add(`(^|;)${step.tag_name}(\\.|$|;|:)`, 'String')})`);
    }
    if (step.href !== undefined && step.href !== null) {
      conditions.push(matchString(ELEMENTS_CHAIN_HREF, step.href, step.href_matching ?? 'exact', true, params));
    }
    if (step.text !== undefined && step.text !== null) {
      conditions.push(`arrayExists(x -> ${matchString('x', step.text, step.text_matching ?? 'exact', true, params)}, ${ELEMENTS_CHAIN_TEXTS})`);
    }
  }
  if (step.url) {
    // A missing URL never matches (in PostHog it is NULL), not even a regex that accepts an empty text.
    const url = propertyText('properties', '$current_url', params);
    conditions.push(`(${url} != '' AND ${matchString(url, step.url, step.url_matching ?? 'contains', false, params)})`);
  }
  const properties = await propertiesCondition(stepProperties(step, `steps__${index}__properties`), params, scope, `steps__${index}__properties`);
  if (properties !== '1') conditions.push(properties);
  return conditions.length === 0 ? '1' : `(${conditions.join(' AND ')})`;
}

/**
 * The condition an event meets when it matches the action: steps OR-ed, each step's conditions AND-ed; an action
 * without steps matches every event (as in PostHog). Column names are unqualified, so the FROM must yield
 * `events` columns.
 */
export async function actionCondition(action: ActionDefinition, params: Params, scope: FilterScope): Promise<string> {
  if (action.steps.length === 0) return '1';
  const steps = await Promise.all(action.steps.map((step, index) => stepCondition(step, index, params, scope)));
  if (steps.includes('1')) return '1';
  return steps.length === 1 ? (steps[0] ?? '1') : `(${steps.join(' OR ')})`;
}
