/**
 * Semantic versions as PostHog's Rust service reads them (`to_semver_representation` and friends in
 * `rust/feature-flags/src/properties/property_matching.rs`, which then defer to the `semver` crate):
 * one leading `v` is stripped, then surrounding whitespace; leading zeros are dropped from numeric core parts
 * and missing minor/patch parts are padded (`3.08` → `3.8.0`); the result must be strict SemVer 2.0.
 *
 * Numeric identifiers are kept as canonical digit strings and compared by length, then lexically, so
 * versions beyond 2^53 still compare exactly (the crate uses u64).
 */
export interface Version {
  readonly core: readonly [string, string, string];
  readonly pre: readonly string[];
  readonly build: readonly string[];
}

const IDENTIFIERS = '[0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*';
const STRICT = new RegExp(`^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-(${IDENTIFIERS}))?(?:\\+(${IDENTIFIERS}))?$`);
const DIGITS = /^\d+$/;

function normalize(text: string): string {
  return (text.startsWith('v') ? text.slice(1) : text).trim();
}

function stripLeadingZeros(part: string): string {
  return DIGITS.test(part) ? part.replace(/^0+(?=\d)/, '') : part;
}

function canonicalize(text: string): string {
  const suffixAt = text.search(/[-+]/);
  const core = suffixAt === -1 ? text : text.slice(0, suffixAt);
  const suffix = suffixAt === -1 ? '' : text.slice(suffixAt);
  const parts = core.split('.').map(stripLeadingZeros);
  while (parts.length < 3) parts.push('0');
  return parts.join('.') + suffix;
}

function parseStrict(text: string): Version | null {
  const match = STRICT.exec(text);
  if (match === null) return null;
  const pre = match[4] === undefined ? [] : match[4].split('.');
  // SemVer forbids leading zeros in numeric pre-release identifiers; the crate rejects them.
  if (pre.some((id) => DIGITS.test(id) && id.length > 1 && id.startsWith('0'))) return null;
  return {
    core: [match[1] ?? '0', match[2] ?? '0', match[3] ?? '0'],
    pre,
    build: match[5] === undefined ? [] : match[5].split('.'),
  };
}

/** The text form of a property or filter value as a version; null when it is not one. */
export function parseVersion(text: string): Version | null {
  return parseStrict(canonicalize(normalize(text)));
}

function compareNumeric(a: string, b: string): number {
  const x = stripLeadingZeros(a);
  const y = stripLeadingZeros(b);
  return x.length - y.length || (x < y ? -1 : x > y ? 1 : 0);
}

function compareIdentifier(a: string, b: string): number {
  const aNumeric = DIGITS.test(a);
  const bNumeric = DIGITS.test(b);
  if (aNumeric && bNumeric) return compareNumeric(a, b) || (a < b ? -1 : a > b ? 1 : 0);
  if (aNumeric !== bNumeric) return aNumeric ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareIdentifiers(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
    const order = compareIdentifier(a[i] ?? '', b[i] ?? '');
    if (order !== 0) return order;
  }
  return a.length - b.length;
}

function compareCore(a: Version, b: Version): number {
  return compareNumeric(a.core[0], b.core[0]) || compareNumeric(a.core[1], b.core[1]) || compareNumeric(a.core[2], b.core[2]);
}

/** A release sorts after its pre-releases. */
function comparePre(a: readonly string[], b: readonly string[]): number {
  if (a.length === 0 || b.length === 0) return b.length - a.length;
  return compareIdentifiers(a, b);
}

/**
 * Total order of the `semver` crate: core, then pre-release, then build metadata. Unlike the SemVer spec the
 * crate does not ignore build metadata, so `1.0.0+a` and `1.0.0` are different versions for `semver_eq`.
 */
export function compareVersions(a: Version, b: Version): number {
  return compareCore(a, b) || comparePre(a.pre, b.pre) || compareIdentifiers(a.build, b.build);
}

/** `version >= lower`, ignoring build metadata like a requirement's comparator does. */
function atLeast(version: Version, lower: Version): boolean {
  return (compareCore(version, lower) || comparePre(version.pre, lower.pre)) >= 0;
}

/**
 * The crate's pre-release rule for requirements: a pre-release version only satisfies a requirement whose
 * bound names the same major.minor.patch *with* a pre-release, so `~1.2.3` never matches `1.2.4-beta`.
 */
function preReleaseAllowed(version: Version, bound: Version | null): boolean {
  return version.pre.length === 0 || (bound !== null && bound.pre.length > 0 && compareCore(version, bound) === 0);
}

/** `~x.y.z`: at least x.y.z, same major and minor. */
export function matchesTilde(version: Version, filter: Version): boolean {
  return (
    preReleaseAllowed(version, filter) &&
    atLeast(version, filter) &&
    compareNumeric(version.core[0], filter.core[0]) === 0 &&
    compareNumeric(version.core[1], filter.core[1]) === 0
  );
}

/** `^x.y.z` as npm and Cargo define it: the left-most non-zero part must not change. */
export function matchesCaret(version: Version, filter: Version): boolean {
  if (!preReleaseAllowed(version, filter) || !atLeast(version, filter)) return false;
  const [major, minor] = filter.core;
  const sameMajor = compareNumeric(version.core[0], major) === 0;
  if (major !== '0') return sameMajor;
  const sameMinor = compareNumeric(version.core[1], minor) === 0;
  if (minor !== '0') return sameMajor && sameMinor;
  return sameMajor && sameMinor && compareNumeric(version.core[2], filter.core[2]) === 0;
}

const WILDCARD = /^[*xX]$/;

/**
 * `semver_wildcard`: Rust rewrites `*` to `x` and parses a Cargo `VersionReq`. Supported here: `*`, `1.*`,
 * `1.2.*`, `1.*.*` (any of `*`, `x`, `X`); a value without a wildcard is a Cargo requirement, i.e. a caret
 * (`1.2` → `^1.2` → [1.2.0, 2.0.0)). A wildcard followed by a number (`1.*.3`) or any other requirement
 * syntax is invalid, and an invalid filter never matches.
 */
export function matchesWildcard(version: Version, filterText: string): boolean | null {
  const text = normalize(filterText);
  const suffixAt = text.search(/[-+]/);
  const suffix = suffixAt === -1 ? '' : text.slice(suffixAt);
  const parts = (suffixAt === -1 ? text : text.slice(0, suffixAt)).split('.').map(stripLeadingZeros);
  if (parts.length > 3) return null;
  if (parts.length === 3 && !parts.some((part) => WILDCARD.test(part))) {
    const full = parseStrict(parts.join('.') + suffix);
    return full === null ? null : matchesCaret(version, full);
  }
  const wildcardAt = parts.findIndex((part) => WILDCARD.test(part));
  const fixed = wildcardAt === -1 ? parts : parts.slice(0, wildcardAt);
  const wildcardsOnlyAfter = parts.slice(fixed.length).every((part) => WILDCARD.test(part));
  if (suffix !== '' || !wildcardsOnlyAfter || !fixed.every((part) => DIGITS.test(part))) return null;
  // A requirement without a patch number has no pre-release, so pre-release versions never satisfy it.
  if (version.pre.length > 0) return false;
  const [major, minor] = fixed;
  if (major === undefined) return true;
  if (compareNumeric(version.core[0], major) !== 0) return false;
  if (minor === undefined) return true;
  const order = compareNumeric(version.core[1], minor);
  // `1.2.*` pins the minor; a bare `1.2` is `^1.2` (minor may grow, except in 0.x where it is pinned).
  return wildcardAt !== -1 || major === '0' ? order === 0 : order >= 0;
}
