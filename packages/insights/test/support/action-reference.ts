/**
 * A plain TypeScript reading of PostHog's action matching, the reference the SQL condition is tested against: the
 * same rules written over one event in memory, with JavaScript regexes in place of ClickHouse's RE2 (the test
 * patterns use the syntax both share). A step's property filters are read with the trends reference's event
 * property matching (no dates or cohorts in them).
 */
import { selectorRegex } from '../../src/actions';
import type { ActionDefinition, ActionStep, StringMatching } from '../../src/types';
import { parsePropertyFilters } from '../../src/filters';
import type { JsonValue } from '../../src/types';
import { matchesGroup } from './reference';

export interface ReferenceEvent {
  event: string;
  currentUrl?: string;
  elementsChain: string;
  /** Event properties besides `$current_url`. */
  properties?: Record<string, JsonValue>;
}

const NO_COHORTS = { timezone: 'UTC', now: new Date(0), cohorts: new Map<number, readonly string[]>() };

function propertiesMatch(step: ActionStep, event: ReferenceEvent): boolean {
  const group = parsePropertyFilters(step.properties ?? [], 'properties');
  const properties = { ...event.properties, ...(event.currentUrl === undefined ? {} : { $current_url: event.currentUrl }) };
  const plain = { uuid: '', event: event.event, distinctId: '', timestamp: 0, person: '', properties, personProperties: {}, groups: [], groupProperties: [] };
  return matchesGroup(plain, group, NO_COHORTS);
}

/** SQL LIKE: `%` any run, `_` one character, `\` escapes the next. */
function like(text: string, pattern: string, caseInsensitive: boolean): boolean {
  let regex = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern.charAt(i);
    if (char === '\\' && i + 1 < pattern.length) regex += pattern.charAt(++i).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else if (char === '%') regex += '.*';
    else if (char === '_') regex += '.';
    else regex += char.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${regex}$`, caseInsensitive ? 'is' : 's').test(text);
}

function matches(text: string, value: string, matching: StringMatching, caseInsensitiveContains: boolean): boolean {
  if (matching === 'regex') return new RegExp(value, 's').test(text);
  if (matching === 'contains') return like(text, `%${value}%`, caseInsensitiveContains);
  return text === value;
}

/** What `extract(elements_chain, '(?::|")href="(.*?)"')` gives. */
export function chainHref(chain: string): string {
  return /(?::|")href="(.*?)"/s.exec(chain)?.[1] ?? '';
}

/** What `arrayDistinct(extractAll(elements_chain, '(?::|")text="(.*?)"'))` gives. */
export function chainTexts(chain: string): string[] {
  return [...new Set([...chain.matchAll(/(?::|")text="(.*?)"/gs)].map((match) => match[1] ?? ''))];
}

function stepMatches(step: ActionStep, event: ReferenceEvent): boolean {
  if (step.event && event.event !== step.event) return false;
  if (step.event === '$autocapture') {
    const chain = event.elementsChain;
    if (step.selector && !new RegExp(selectorRegex(step.selector), 's').test(chain)) return false;
    if (step.tag_name != null && !new RegExp(`(^|;)${step.tag_name}(\\.|$|;|:)`, 's').test(chain)) return false;
    if (step.href != null && !matches(chainHref(chain), step.href, step.href_matching ?? 'exact', true)) return false;
    if (step.text != null && !chainTexts(chain).some((text) => matches(text, step.text ?? '', step.text_matching ?? 'exact', true))) return false;
  }
  if (step.url && (!event.currentUrl || !matches(event.currentUrl, step.url, step.url_matching ?? 'contains', false))) return false;
  return propertiesMatch(step, event);
}

export function referenceMatches(action: ActionDefinition, event: ReferenceEvent): boolean {
  return action.steps.length === 0 || action.steps.some((step) => stepMatches(step, event));
}
