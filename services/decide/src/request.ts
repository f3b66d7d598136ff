import { ApiError } from '@plover/core';
import type { Properties } from '@plover/flags';

/** The fields of a flag request decide reads (reference/posthog-flags.md §4.1), aliases resolved. */
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

const MAX_DISTINCT_ID = 200;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function first(body: Record<string, unknown>, keys: readonly string[]): unknown {
  for (const key of keys) {
    const value = body[key];
    if (value !== undefined && value !== null) return value;
  }
  return undefined;
}

/**
 * A distinct id or group key as text. NUL becomes U+FFFD, as capture stores it: Postgres text cannot hold a
 * NUL, and the person a client identified with one was stored under the replacement character.
 */
function identifier(value: unknown): string | undefined {
  if (typeof value === 'string') return value.slice(0, MAX_DISTINCT_ID).replaceAll('\0', '\uFFFD');
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return String(value);
  return undefined;
}

function truthy(value: unknown): boolean {
  return value === true || value === 'true' || value === 1 || value === '1';
}

export function parseFlagsRequest(body: Record<string, unknown>, query: URLSearchParams): FlagsRequest {
  const tokenValue = first(body, ['token', 'api_key', '$token']) ?? query.get('token') ?? query.get('api_key') ?? undefined;
  const token = typeof tokenValue === 'string' && tokenValue.trim() !== '' ? tokenValue.trim() : undefined;
  const distinctId = identifier(first(body, ['distinct_id', '$distinct_id']));

  const groupsValue = first(body, ['groups', '$groups']);
  const groups: Record<string, string> = {};
  if (isObject(groupsValue)) {
    for (const [type, key] of Object.entries(groupsValue)) {
      const text = identifier(key);
      if (text !== undefined && text !== '') groups[type] = text;
    }
  }

  const personValue = first(body, ['person_properties', '$properties']);
  const groupValue = first(body, ['group_properties', '$group_properties']);
  const groupProperties: Record<string, Properties> = {};
  if (isObject(groupValue)) {
    for (const [type, properties] of Object.entries(groupValue)) {
      if (isObject(properties)) groupProperties[type] = properties as Properties;
    }
  }

  const keysValue = first(body, ['flag_keys_to_evaluate', 'flag_keys']);
  const flagKeys = Array.isArray(keysValue) ? keysValue.filter((key): key is string => typeof key === 'string') : undefined;
  const anon = identifier(body.$anon_distinct_id);

  return {
    token,
    distinctId,
    anonDistinctId: anon !== undefined && anon !== '' ? anon : null,
    groups,
    personProperties: isObject(personValue) ? (personValue as Properties) : {},
    groupProperties,
    geoipDisable: truthy(body.geoip_disable),
    disableFlags: truthy(body.disable_flags),
    flagKeys,
  };
}

export const decideErrors = {
  noToken: () =>
    ApiError.unauthenticated(
      'No project API key provided. You can find your project API key in PostHog project settings.',
      'no_api_key',
    ),
  invalidToken: () =>
    ApiError.unauthenticated('Project API key invalid. You can find your project API key in PostHog project settings.', 'invalid_api_key'),
  noDistinctId: () => ApiError.validation('Decide requires a distinct_id.', null, 'missing_distinct_id'),
  rateLimited: () => new ApiError(429, 'validation_error', 'rate_limit_exceeded', 'Rate limit exceeded ', null),
};
