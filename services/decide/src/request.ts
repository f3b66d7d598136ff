import { distinctIdOf, exceedsJsonDepth, schemaValidator } from '@plover/contracts';
import { ApiError } from '@plover/core';
import type { Properties } from '@plover/flags';

/** The fields of a flag request decide reads, aliases resolved. */
export interface FlagsRequest {
  token: string | undefined;
  distinctId: string | undefined;
  anonDistinctId: string | null;
  groups: Record<string, string>;
  personProperties: Properties;
  groupProperties: Record<string, Properties>;
  geoipDisable: boolean;
  disableFlags: boolean;
  flagKeys: string[] | undefined;
}

type Identifier = string | number | null;

/** A flag request body as the SDKs send it; every field may be missing or null, as in PostHog's typed parser. */
interface FlagsBody {
  token?: string | null;
  api_key?: string | null;
  $token?: string | null;
  distinct_id?: Identifier;
  $distinct_id?: Identifier;
  $anon_distinct_id?: Identifier;
  groups?: Record<string, string | number> | null;
  $groups?: Record<string, string | number> | null;
  person_properties?: Properties | null;
  $properties?: Properties | null;
  group_properties?: Record<string, Properties> | null;
  $group_properties?: Record<string, Properties> | null;
  flag_keys_to_evaluate?: string[] | null;
  flag_keys?: string[] | null;
  geoip_disable?: boolean | null;
  disable_flags?: boolean | null;
}

const text = { type: ['string', 'null'] };
const identifier = { type: ['string', 'number', 'null'] };
const groups = { type: ['object', 'null'], additionalProperties: { type: ['string', 'number'] } };
const properties = { type: ['object', 'null'] };
const groupProperties = { type: ['object', 'null'], additionalProperties: { type: 'object' } };
const flagKeys = { type: ['array', 'null'], items: { type: 'string' } };
const flag = { type: ['boolean', 'null'] };

/**
 * The known fields must have their type, so that `groups: "acme"` or `person_properties: [1]` is a 400 naming
 * the field rather than a request quietly evaluated without them; unknown fields are ignored.
 */
export const flagsBodySchema = {
  type: 'object',
  properties: {
    token: text,
    api_key: text,
    $token: text,
    distinct_id: identifier,
    $distinct_id: identifier,
    $anon_distinct_id: identifier,
    groups,
    $groups: groups,
    person_properties: properties,
    $properties: properties,
    group_properties: groupProperties,
    $group_properties: groupProperties,
    flag_keys_to_evaluate: flagKeys,
    flag_keys: flagKeys,
    geoip_disable: flag,
    disable_flags: flag,
  },
};
const validateFlagsBody = schemaValidator<FlagsBody>(flagsBodySchema);

/**
 * Entries one flag request may carry in each of `person_properties`, `group_properties` (over all its groups),
 * `groups` and `flag_keys_to_evaluate`. A flag reads the few properties its conditions name, yet every entry sent
 * costs the request thread (copied under the GeoIP properties, checked, compared): 1.2 million properties in a 20 MiB
 * body took 5 s. posthog-js sends the handful of properties it was given; a stored person holds at most 640 KiB of
 * properties in PostHog.
 */
export const MAX_FLAG_REQUEST_ENTRIES = 10_000;

/** 413 naming the first field with more entries than a request may carry. */
function checkEntryCounts(fields: Record<string, number>): void {
  for (const [attr, count] of Object.entries(fields)) {
    if (count > MAX_FLAG_REQUEST_ENTRIES) {
      throw new ApiError(413, 'validation_error', 'payload_too_large', `${attr} holds ${count} entries, above the limit of ${MAX_FLAG_REQUEST_ENTRIES}.`, attr);
    }
  }
}

function countKeys(value: object): number {
  let count = 0;
  for (const key in value) if (Object.hasOwn(value, key)) count++;
  return count;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

export function parseFlagsRequest(raw: Record<string, unknown>, query: URLSearchParams): FlagsRequest {
  const validation = validateFlagsBody(raw);
  if (!validation.ok) throw ApiError.validation(validation.violation.detail, validation.violation.attr, 'invalid_input');
  const body = validation.value;
  // Flags compare property values through their JSON text, which JSON.stringify writes recursively.
  const personProperties = body.person_properties ?? body.$properties ?? {};
  const groupProperties = body.group_properties ?? body.$group_properties ?? {};
  const groupsValue = body.groups ?? body.$groups ?? {};
  const flagKeys = body.flag_keys_to_evaluate ?? body.flag_keys ?? undefined;
  checkEntryCounts({
    person_properties: countKeys(personProperties),
    group_properties: Object.values(groupProperties).reduce((sum, properties) => sum + countKeys(properties), 0),
    groups: countKeys(groupsValue),
    flag_keys_to_evaluate: flagKeys?.length ?? 0,
  });
  if (exceedsJsonDepth(personProperties) || exceedsJsonDepth(groupProperties)) {
    throw ApiError.validation('Properties nest too deeply.', null, 'invalid_input');
  }

  const tokenValue = body.token ?? body.api_key ?? body.$token ?? query.get('token') ?? query.get('api_key') ?? undefined;
  const requestGroups: Record<string, string> = {};
  for (const [type, key] of Object.entries(groupsValue)) {
    const keyText = distinctIdOf(key);
    if (keyText !== undefined) requestGroups[type] = keyText;
  }

  return {
    token: nonEmpty(tokenValue?.trim()),
    // As capture stores them (NUL and unpaired surrogates as U+FFFD, 200 characters), so the person is found.
    distinctId: distinctIdOf(body.distinct_id ?? body.$distinct_id),
    anonDistinctId: distinctIdOf(body.$anon_distinct_id) ?? null,
    groups: requestGroups,
    personProperties,
    groupProperties,
    geoipDisable: body.geoip_disable === true,
    disableFlags: body.disable_flags === true,
    flagKeys,
  };
}

export const decideErrors = {
  noToken: () => ApiError.unauthenticated('No project API key provided. You can find your project API key in PostHog project settings.', 'no_api_key'),
  invalidToken: () => ApiError.unauthenticated('Project API key invalid. You can find your project API key in PostHog project settings.', 'invalid_api_key'),
  noDistinctId: () => ApiError.validation('Decide requires a distinct_id.', null, 'missing_distinct_id'),
  rateLimited: () => new ApiError(429, 'validation_error', 'rate_limit_exceeded', 'Rate limit exceeded ', null),
};
