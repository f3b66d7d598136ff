import { parseDateText, parsePropertyDate, type Clock } from './dates';
import { compareVersions, matchesCaret, matchesTilde, matchesWildcard, parseVersion, type Version } from './semver';
import type { PropertyRegex, RegexBudget } from './regex';
import type { JsonValue, Properties, PropertyFilter } from './types';
import { asciiLowercase, lookup, toNumber, toText } from './values';

export interface MatchEnvironment {
  readonly clock: Clock;
  /** Patterns compiled once per definitions (`compileFlags`); null marks an invalid pattern. */
  readonly regexes: ReadonlyMap<string, PropertyRegex | null>;
  /** The request's regex matching: answers by pattern and text, and the time left for new ones. */
  readonly regexBudget: RegexBudget;
  /** Parsed versions by text, per request: many flags compare the same `$app_version` with few filters. */
  readonly versions: Map<string, Version | null>;
}

/**
 * Whether one person or group property filter matches, with the server's semantics for a missing key
 * (Rust `match_property` with `partial_props = false`, `rust/feature-flags/src/properties/property_matching.rs`):
 * positive operators fail, negative ones (`is_not`, `not_icontains`, `not_regex`, `not_*_with`,
 * `not_icontains_multi`, `not_between`, `is_not_set`) pass. Anything Rust reports as a match *error* —
 * a non-numeric value for `gt`, an unparseable semver filter, an invalid regex — is a non-match, because
 * Rust collapses errors with `unwrap_or(false)`. Unknown operators never match.
 */
export function matchProperty(filter: PropertyFilter, properties: Properties, env: MatchEnvironment): boolean {
  const operator = filter.operator ?? 'exact';
  const actual = lookup(properties, filter.key);

  if (operator === 'is_set') return actual !== undefined;
  if (operator === 'is_not_set') return actual === undefined;

  const expected = filter.value;
  // Rust checks the filter value before the property: without one, even the negative operators fail.
  if (expected === undefined || expected === null) return false;

  switch (operator) {
    case 'exact':
      return actual !== undefined && matchesExact(expected, actual);
    case 'is_not':
      return actual === undefined || !matchesExact(expected, actual);
    case 'icontains':
    case 'not_icontains':
      return negatable(operator === 'not_icontains', actual, (text) => text.includes(asciiLowercase(toText(expected))));
    case 'starts_with':
    case 'not_starts_with':
      return negatable(operator === 'not_starts_with', actual, (text) => text.startsWith(asciiLowercase(toText(expected))));
    case 'ends_with':
    case 'not_ends_with':
      return negatable(operator === 'not_ends_with', actual, (text) => text.endsWith(asciiLowercase(toText(expected))));
    case 'icontains_multi':
    case 'not_icontains_multi': {
      const needles = (Array.isArray(expected) ? (expected as readonly JsonValue[]) : [expected]).map((needle) => asciiLowercase(toText(needle)));
      return negatable(operator === 'not_icontains_multi', actual, (text) => needles.some((needle) => text.includes(needle)));
    }
    case 'regex':
    case 'not_regex':
      return matchesRegex(operator === 'not_regex', expected, actual, env);
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return actual !== undefined && compareNumbers(operator, actual, expected);
    case 'between':
    case 'not_between':
      return matchesBetween(operator === 'not_between', actual, expected);
    case 'is_date_before':
    case 'is_date_after':
    case 'is_date_exact':
      return actual !== undefined && compareDates(operator, actual, expected, env.clock);
    case 'semver_eq':
    case 'semver_neq':
    case 'semver_gt':
    case 'semver_gte':
    case 'semver_lt':
    case 'semver_lte':
    case 'semver_tilde':
    case 'semver_caret':
    case 'semver_wildcard':
      return actual !== undefined && compareSemver(operator, actual, expected, env);
    default:
      // `in`/`not_in` belong to cohort filters and `flag_evaluates_to` to flag filters; on a property they
      // are a validation error in Rust, hence no match — like any operator this version does not know.
      return false;
  }
}

function isBooleanish(value: JsonValue): boolean {
  if (typeof value === 'boolean') return true;
  if (typeof value === 'string') return value.toLowerCase() === 'true' || value.toLowerCase() === 'false';
  return Array.isArray(value) && (value as readonly JsonValue[]).every(isBooleanish);
}

function isTruthy(value: JsonValue): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') return value.toLowerCase() === 'true';
  return Array.isArray(value) && (value as readonly JsonValue[]).every(isTruthy);
}

/**
 * `exact` has three modes (Rust `match_property`): boolean-ish filters (`true`, `"False"`, `["true"]`) compare
 * truthiness; other array filters match when any element equals the property; otherwise the text forms
 * are compared. Comparisons ignore case (full Unicode lowercasing here, unlike the substring operators).
 * The array checks use `every`, so an empty array filter is "boolean-ish true" — a Rust quirk kept as is.
 */
function matchesExact(expected: JsonValue, actual: JsonValue): boolean {
  if (isBooleanish(expected)) return isTruthy(expected) === isTruthy(actual);
  const target = toText(actual).toLowerCase();
  if (Array.isArray(expected)) {
    return (expected as readonly JsonValue[]).some((candidate) => toText(candidate).toLowerCase() === target);
  }
  return toText(expected).toLowerCase() === target;
}

function negatable(negated: boolean, actual: JsonValue | undefined, test: (lowercased: string) => boolean): boolean {
  if (actual === undefined) return negated;
  return test(asciiLowercase(toText(actual))) !== negated;
}

function matchesRegex(negated: boolean, expected: JsonValue, actual: JsonValue | undefined, env: MatchEnvironment): boolean {
  if (actual === undefined) return negated;
  const regex = env.regexes.get(toText(expected));
  // An invalid pattern, or a match not decided within the budget, is a non-match for both operators (not a
  // reason for `not_regex` to pass), as Rust's backtrack-limit error is.
  if (regex === undefined || regex === null) return false;
  const matched = env.regexBudget.test(regex, toText(actual));
  return matched !== null && matched !== negated;
}

/** Numeric only, like the server: both sides must parse as numbers (numeric strings do), else no match. */
function compareNumbers(operator: 'gt' | 'gte' | 'lt' | 'lte', actual: JsonValue, expected: JsonValue): boolean {
  const left = toNumber(actual);
  const right = toNumber(expected);
  if (left === null || right === null) return false;
  switch (operator) {
    case 'gt':
      return left > right;
    case 'gte':
      return left >= right;
    case 'lt':
      return left < right;
    case 'lte':
      return left <= right;
  }
}

/** Inclusive range `[min, max]` from a two-element numeric filter (HogQL semantics, mirrored by Rust). */
function matchesBetween(negated: boolean, actual: JsonValue | undefined, expected: JsonValue): boolean {
  // Rust answers a missing property before it validates the filter value.
  if (actual === undefined) return negated;
  if (!Array.isArray(expected) || expected.length !== 2) return false;
  const [low, high] = (expected as readonly JsonValue[]).map(toNumber);
  if (low === null || high === null || low === undefined || high === undefined) return false;
  if (Number.isNaN(low) || Number.isNaN(high) || low > high) return false;
  const value = toNumber(actual);
  if (value === null || Number.isNaN(value)) return false;
  return (value >= low && value <= high) !== negated;
}

function compareDates(operator: 'is_date_before' | 'is_date_after' | 'is_date_exact', actual: JsonValue, expected: JsonValue, clock: Clock): boolean {
  const property = parsePropertyDate(actual, clock);
  // The filter side must be text (a date, a date-time or a relative date such as `-7d`).
  const filter = typeof expected === 'string' ? parseDateText(expected, clock) : null;
  if (property === null || filter === null) return false;
  if (operator === 'is_date_before') return property < filter;
  if (operator === 'is_date_after') return property > filter;
  return property === filter;
}

type SemverOperator =
  'semver_eq' | 'semver_neq' | 'semver_gt' | 'semver_gte' | 'semver_lt' | 'semver_lte' | 'semver_tilde' | 'semver_caret' | 'semver_wildcard';

function versionOf(value: JsonValue, env: MatchEnvironment): Version | null {
  const text = toText(value);
  let version = env.versions.get(text);
  if (version === undefined) {
    version = parseVersion(text);
    env.versions.set(text, version);
  }
  return version;
}

function compareSemver(operator: SemverOperator, actual: JsonValue, expected: JsonValue, env: MatchEnvironment): boolean {
  const version = versionOf(actual, env);
  if (version === null) return false;
  if (operator === 'semver_wildcard') return matchesWildcard(version, toText(expected)) === true;
  const filter = versionOf(expected, env);
  if (filter === null) return false;
  switch (operator) {
    case 'semver_tilde':
      return matchesTilde(version, filter);
    case 'semver_caret':
      return matchesCaret(version, filter);
    default: {
      const order = compareVersions(version, filter);
      return {
        semver_eq: order === 0,
        semver_neq: order !== 0,
        semver_gt: order > 0,
        semver_gte: order >= 0,
        semver_lt: order < 0,
        semver_lte: order <= 0,
      }[operator];
    }
  }
}
