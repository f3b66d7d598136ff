import type { PropertyFilter, PropertyGroup } from './types';

export function isPropertyGroup(node: PropertyGroup | PropertyFilter): node is PropertyGroup {
  return Array.isArray((node as Partial<PropertyGroup>).values);
}

/** A cohort filter names its cohort in `value` (`{"key": "id", "value": 42}`); numeric strings are accepted. */
export function cohortIdOf(filter: PropertyFilter): number | null {
  const { value } = filter;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  return null;
}

/**
 * `in` (the default) and `not_in` test membership; any other operator never matches, as in Rust
 * `apply_cohort_membership_logic` (`rust/feature-flags/src/cohorts/cohort_operations.rs`).
 */
export function membershipMatches(filter: PropertyFilter, isMember: boolean): boolean {
  const operator = filter.operator ?? 'in';
  if (operator === 'in') return isMember;
  if (operator === 'not_in') return !isMember;
  return false;
}

/**
 * Evaluates a cohort's nested AND/OR groups; `leaf` decides one filter (before negation). An empty AND
 * matches and an empty OR does not, as in Rust. Any group type other than `OR` is an AND (Rust also
 * accepts the legacy inner type `"property"` with AND semantics).
 *
 * `negation` is applied to every leaf. Rust applies it to cohort leaves only inside AND groups — an
 * inconsistency we do not reproduce: a negated nested cohort means "not in that cohort" everywhere.
 */
export function matchesPropertyGroup(group: PropertyGroup, leaf: (filter: PropertyFilter) => boolean): boolean {
  const matchesNode = (node: PropertyGroup | PropertyFilter): boolean =>
    isPropertyGroup(node) ? matchesPropertyGroup(node, leaf) : leaf(node) !== (node.negation === true);
  return group.type === 'OR' ? group.values.some(matchesNode) : group.values.every(matchesNode);
}

/** Every leaf filter of a group, depth first. */
export function leavesOf(group: PropertyGroup): PropertyFilter[] {
  return group.values.flatMap((node) => (isPropertyGroup(node) ? leavesOf(node) : [node]));
}
