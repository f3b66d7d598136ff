/**
 * A feature flag as the editor holds it (every number as typed) and as the API stores it (`filters`: condition
 * sets in `groups`, `multivariate.variants`, `payloads`, `aggregation_group_type_index`). Whatever the editor does
 * not show — other `filters` fields, other fields of a condition set, filters of kinds it cannot edit — is kept
 * and written back unchanged.
 */
import type { FeatureFlag, FeatureFlagWrite, FlagFilters } from '../api/types';
import { filterProblem, fromApiFilter, toApiFilters, type FilterForm } from '../filters/property-filter';

export interface ConditionForm {
  filters: FilterForm[];
  /** Percent of the matching users (or groups), as typed. */
  rollout: string;
  /** The variant everyone in this set gets; empty for the flag's split. */
  variant: string;
  /** Filters the editor cannot show (flag dependencies, nested groups), written back as they were. */
  kept: unknown[];
  /** The set's other fields (a description, …). */
  rest: Record<string, unknown>;
}

export interface VariantForm {
  key: string;
  name: string;
  rollout: string;
  /** JSON text; empty for none. */
  payload: string;
}

export interface FlagForm {
  key: string;
  name: string;
  active: boolean;
  ensureContinuity: boolean;
  /** Empty: matched per user; else the group type index the flag is matched per. */
  aggregation: string;
  conditions: ConditionForm[];
  /** None: a boolean flag. */
  variants: VariantForm[];
  /** The payload of a boolean flag when on, JSON text; empty for none. */
  payload: string;
  /** The other `filters` fields. */
  rest: Record<string, unknown>;
}

export const KEY_PATTERN = /^[a-zA-Z0-9_-]+$/;

export function newCondition(): ConditionForm {
  return { filters: [], rollout: '100', variant: '', kept: [], rest: {} };
}

export function newFlagForm(): FlagForm {
  return { key: '', name: '', active: true, ensureContinuity: false, aggregation: '', conditions: [newCondition()], variants: [], payload: '', rest: {} };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const percent = (value: unknown): string => (typeof value === 'number' ? String(value) : '100');
const payloadText = (value: unknown): string => (value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value));

function conditionForm(group: unknown): ConditionForm {
  const { properties, rollout_percentage, variant, ...rest } = isRecord(group) ? group : {};
  const filters: FilterForm[] = [];
  const kept: unknown[] = [];
  for (const filter of Array.isArray(properties) ? properties : []) {
    const form = fromApiFilter(filter);
    if (form) filters.push(form);
    else kept.push(filter);
  }
  return { filters, rollout: percent(rollout_percentage), variant: typeof variant === 'string' ? variant : '', kept, rest };
}

/** The form of a stored flag. */
export function flagForm(flag: FeatureFlag): FlagForm {
  const { groups, multivariate, payloads, aggregation_group_type_index, ...rest } = flag.filters;
  const stored = isRecord(payloads) ? payloads : {};
  const variants = (isRecord(multivariate) && Array.isArray(multivariate.variants) ? multivariate.variants : []).map((variant): VariantForm => ({
    key: variant.key,
    name: variant.name ?? '',
    rollout: percent(variant.rollout_percentage),
    payload: payloadText(stored[variant.key]),
  }));
  return {
    key: flag.key,
    name: flag.name,
    active: flag.active,
    ensureContinuity: flag.ensure_experience_continuity,
    aggregation: typeof aggregation_group_type_index === 'number' ? String(aggregation_group_type_index) : '',
    conditions: (Array.isArray(groups) ? groups : []).map(conditionForm),
    variants,
    payload: variants.length === 0 ? payloadText(stored.true) : '',
    rest,
  };
}

function isPercent(text: string): boolean {
  const value = Number(text);
  return text.trim() !== '' && Number.isFinite(value) && value >= 0 && value <= 100;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The variants' percentages added up (what is not a number counts as 0). */
export function variantTotal(variants: readonly VariantForm[]): number {
  return Math.round(variants.reduce((total, variant) => total + (Number(variant.rollout) || 0), 0) * 100) / 100;
}

/** What stops the form from being saved, in the order a person reads the form; null when it can be saved. */
export function flagProblem(form: FlagForm): string | null {
  if (form.key.trim() === '') return 'Give the flag a key.';
  if (!KEY_PATTERN.test(form.key.trim())) return 'A key has only letters, digits, hyphens (-) and underscores (_).';
  const keys = new Set<string>();
  for (const [index, variant] of form.variants.entries()) {
    const name = variant.key.trim() || `Variant ${index + 1}`;
    if (variant.key.trim() === '') return `Variant ${index + 1}: give it a key.`;
    if (!KEY_PATTERN.test(variant.key.trim())) return `Variant ${name}: a key has only letters, digits, hyphens and underscores.`;
    if (keys.has(variant.key.trim())) return `Variant keys must differ: ${name} is there twice.`;
    keys.add(variant.key.trim());
    if (!isPercent(variant.rollout)) return `Variant ${name}: the rollout is a percentage from 0 to 100.`;
    if (variant.payload.trim() !== '' && !isJson(variant.payload)) return `Variant ${name}: the payload is not valid JSON.`;
  }
  if (form.variants.length > 0 && variantTotal(form.variants) !== 100) return `The variants' rollouts add up to ${variantTotal(form.variants)}%, not 100%.`;
  if (form.variants.length === 0 && form.payload.trim() !== '' && !isJson(form.payload)) return 'The payload is not valid JSON.';
  for (const [index, condition] of form.conditions.entries()) {
    const problem = condition.filters.map(filterProblem).find((text) => text !== null);
    if (problem) return `Condition set ${index + 1}: ${problem}`;
    if (!isPercent(condition.rollout)) return `Condition set ${index + 1}: the rollout is a percentage from 0 to 100.`;
    if (condition.variant !== '' && !keys.has(condition.variant)) return `Condition set ${index + 1}: there is no variant ${condition.variant}.`;
  }
  return null;
}

/** The API body of a form without problems ({@link flagProblem}). */
export function flagWrite(form: FlagForm): FeatureFlagWrite {
  const variants = form.variants.map((variant) => ({ key: variant.key.trim(), name: variant.name.trim(), rollout_percentage: Number(variant.rollout) }));
  const payloads: Record<string, string> = {};
  if (form.variants.length === 0 && form.payload.trim() !== '') payloads.true = form.payload.trim();
  for (const variant of form.variants) if (variant.payload.trim() !== '') payloads[variant.key.trim()] = variant.payload.trim();
  const filters: FlagFilters = {
    ...form.rest,
    groups: form.conditions.map((condition) => ({
      ...condition.rest,
      properties: [...toApiFilters(condition.filters), ...condition.kept],
      rollout_percentage: Number(condition.rollout),
      variant: condition.variant === '' ? null : condition.variant,
    })),
    multivariate: variants.length > 0 ? { variants } : null,
    payloads,
    aggregation_group_type_index: form.aggregation === '' ? null : Number(form.aggregation),
  };
  return { key: form.key.trim(), name: form.name.trim(), active: form.active, ensure_experience_continuity: form.ensureContinuity, filters };
}

/** The variants with the 100% split as evenly as two decimals allow, the remainder on the first ones. */
export function distributeEqually(variants: readonly VariantForm[]): VariantForm[] {
  const hundredths = 10_000;
  const share = Math.floor(hundredths / variants.length);
  const left = hundredths - share * variants.length;
  return variants.map((variant, index) => ({ ...variant, rollout: String((share + (index < left ? 1 : 0)) / 100) }));
}

/**
 * The filters a condition of a flag matched per `aggregation` may hold: persons' properties and cohorts, or the
 * properties of that group type. Switching what a flag is matched by drops the filters that no longer apply.
 */
export function withAggregation(form: FlagForm, aggregation: string): FlagForm {
  const fits = (filter: FilterForm) => (aggregation === '' ? filter.type === 'person' || filter.type === 'cohort' : filter.type === 'group');
  return {
    ...form,
    aggregation,
    conditions: form.conditions.map((condition) => ({
      ...condition,
      filters: condition.filters.filter(fits).map((filter) => (aggregation === '' ? filter : { ...filter, groupTypeIndex: Number(aggregation) })),
    })),
  };
}

/** One line on who gets a flag: `100% of all users`, `25% of users matching 2 filters`, `3 condition sets` (and its variants). */
export function rolloutSummary(flag: FeatureFlag, groupName?: string): string {
  const groups = flag.filters.groups ?? [];
  const subject = groupName ?? 'users';
  let text: string;
  if (groups.length === 0) text = 'No condition set: nobody';
  else if (groups.length > 1) text = `${groups.length} condition sets`;
  else {
    const [group] = groups;
    const rollout = typeof group!.rollout_percentage === 'number' ? group!.rollout_percentage : 100;
    const filters = Array.isArray(group!.properties) ? group!.properties.length : 0;
    text = filters === 0 ? `${rollout}% of all ${subject}` : `${rollout}% of ${subject} matching ${filters} ${filters === 1 ? 'filter' : 'filters'}`;
  }
  const variants = flag.filters.multivariate?.variants.length ?? 0;
  return variants > 0 ? `${text} · ${variants} variants` : text;
}
