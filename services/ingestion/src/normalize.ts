/**
 * PostHog's event normalization before the person step (docs/ingestion.md#event-normalization; plugin-server
 * `normalizeEvent`, `normalizeProcessPerson`, `personInitialAndUTMProperties`). Capture did the parts that need
 * only the raw request (distinct_id stringified with NUL → U+FFFD, top-level `$set`/`$set_once` folded into
 * properties, `$ip`, the event name cut to 200 characters); what is left needs the properties as a whole.
 */
import { isGroupIdentify } from '@plover/persons';
import { elementsChainOf } from './elements';

export type Properties = Record<string, unknown>;

export interface NormalizedProperties {
  /** What person processing reads and, with the group columns added, what the event row stores. */
  properties: Properties;
  /** `$process_person_profile: false`: no person is written and `$set`/`$set_once`/`$unset` are dropped. */
  personless: boolean;
  /** The `elements_chain` column; its source properties are removed from `properties`. */
  elementsChain: string;
}

/** Event properties copied to the person (`$set`) and to its `$initial_*` properties (`$set_once`). */
const PERSON_PROPERTY_SOURCES = new Set([
  // mobile
  '$app_build',
  '$app_name',
  '$app_namespace',
  '$app_version',
  // web
  '$browser',
  '$browser_version',
  '$device_type',
  '$current_url',
  '$pathname',
  '$os',
  '$os_name',
  '$os_version',
  '$referring_domain',
  '$referrer',
  '$screen_height',
  '$screen_width',
  '$viewport_height',
  '$viewport_width',
  '$raw_user_agent',
  // campaign
  'utm_source',
  'utm_medium',
  'utm_campaign',
  'utm_content',
  'utm_name',
  'utm_term',
  'gclid',
  'gad_source',
  'gclsrc',
  'dclid',
  'gbraid',
  'wbraid',
  'fbclid',
  'msclkid',
  'twclid',
  'li_fat_id',
  'mc_cid',
  'igshid',
  'ttclid',
  'rdt_cid',
  'irclid',
  '_kx',
  'epik',
  'qclid',
  'sccid',
]);

/** A server-side SDK reports the server's OS, which says nothing about the person (PostHog skips them since 2025). */
const CLIENT_ONLY_SOURCES = new Set(['$os', '$os_version']);

/** High-volume internal events that never feed person properties. */
const NO_AUTO_PERSON_PROPERTIES = new Set(['$snapshot', '$performance_event']);

export function isPlainObject(value: unknown): value is Properties {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Normalizes a captured event's properties (a copy; the input is not changed). `sentAt` is the bus message's
 * `sent_at`, stored as `$sent_at` like PostHog does.
 */
export function normalizeProperties(event: string, captured: Properties, sentAt: string | null): NormalizedProperties {
  let properties: Properties = { ...captured };
  if (!NO_AUTO_PERSON_PROPERTIES.has(event)) properties = withAutoPersonProperties(properties);
  if (sentAt !== null) properties.$sent_at = sentAt;

  const personless = properties.$process_person_profile === false;
  // A group identify describes a group, never the sender (PostHog strips it for every $groupidentify).
  if (personless || isGroupIdentify(event)) {
    delete properties.$set;
    delete properties.$set_once;
    delete properties.$unset;
  }
  // Kept on personless events only, where it records why the event has no person.
  if (!personless) delete properties.$process_person_profile;

  const elementsChain = elementsChainOf(properties);
  delete properties.$elements_chain;
  delete properties.$elements;
  return { properties, personless, elementsChain };
}

/**
 * `personInitialAndUTMProperties` as PostHog's newest pipeline has it: every PERSON_PROPERTY_SOURCES key present
 * goes into `$set` and, as `$initial_<key without its first $>`, into `$set_once` (null values not), the
 * event's own `$set`/`$set_once` winning a clash. `$os_name` stands in for a missing `$os` and is not itself
 * copied (some SDKs send only `$os_name`, posthog-js-lite#244).
 */
function withAutoPersonProperties(properties: Properties): Properties {
  const skipClientOnly = properties.$is_server === true;
  const set: Properties = {};
  const setOnce: Properties = {};
  let found = false;
  for (const [key, value] of Object.entries(properties)) {
    if (!PERSON_PROPERTY_SOURCES.has(key) || (skipClientOnly && CLIENT_ONLY_SOURCES.has(key))) continue;
    found = true;
    set[key] = value;
    if (value !== null) setOnce[`$initial_${key.replace('$', '')}`] = value;
  }
  if (!found) return properties;

  const result: Properties = {
    ...properties,
    // Spread, not assignment: a user key named `__proto__` stays a key instead of replacing the prototype.
    $set: { ...set, ...(isPlainObject(properties.$set) ? properties.$set : {}) },
    $set_once: { ...setOnce, ...(isPlainObject(properties.$set_once) ? properties.$set_once : {}) },
  };
  const osName = properties.$os_name;
  if (osName) {
    result.$os ??= osName;
    const resultSet = result.$set as Properties;
    const resultSetOnce = result.$set_once as Properties;
    resultSet.$os ??= osName;
    resultSetOnce.$initial_os ??= osName;
    delete resultSet.$os_name;
    delete resultSetOnce.$initial_os_name;
  }
  return result;
}
