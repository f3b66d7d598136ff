/**
 * What ingestion adds to an event before person processing, as PostHog's GeoIP transformation does
 * (docs/web-analytics.md#geoip), and the project's `anonymize_ips`, applied after it.
 */
import { projectsAnonymizingIps } from '@plover/accounts';
import { GEOIP_NAMES, type GeoIpLocation, type GeoIpLookup } from '@plover/geoip';
import type { Sql } from '@plover/postgres';
import { isPlainObject, type Properties } from './normalize';

/**
 * The event's properties with the location of its `$ip` (a copy; unchanged when `$geoip_disable` is set, there is
 * no `$ip` or it locates nobody): each `$geoip_*` the database knows as an event property; in `$set` every
 * `$geoip_*` name, null where unknown (so a person's stale values are cleared), and in `$set_once` every
 * `$initial_geoip_*` name the same way. These win over the event's own `$set`/`$set_once` values of those names.
 */
export function withGeoIp(properties: Properties, lookup: GeoIpLookup): Properties {
  const ip = properties.$ip;
  if (properties.$geoip_disable || typeof ip !== 'string' || ip === '') return properties;
  const location = lookup(ip);
  if (!location) return properties;
  return {
    ...properties,
    ...location,
    $set: { ...(isPlainObject(properties.$set) ? properties.$set : {}), ...UNKNOWN, ...location },
    $set_once: { ...(isPlainObject(properties.$set_once) ? properties.$set_once : {}), ...UNKNOWN_INITIAL, ...initialOf(location) },
  };
}

/** Every `$geoip_*` name, null: what `$set` holds where the location has no value. */
const UNKNOWN: Properties = Object.fromEntries(GEOIP_NAMES.map((name) => [`$geoip_${name}`, null]));
const UNKNOWN_INITIAL: Properties = Object.fromEntries(GEOIP_NAMES.map((name) => [`$initial_geoip_${name}`, null]));

/** A location's `$initial_geoip_*` form, made once per location (the lookup hands out the same object per place). */
const initials = new WeakMap<GeoIpLocation, Properties>();
function initialOf(location: GeoIpLocation): Properties {
  let initial = initials.get(location);
  if (!initial) {
    initial = Object.fromEntries(Object.entries(location).map(([key, value]) => [`$initial_${key.slice(1)}`, value]));
    initials.set(location, initial);
  }
  return initial;
}

/** How long a project's `anonymize_ips` is trusted before it is read again. */
const ANONYMIZE_IPS_TTL_MS = 10_000;

/** Projects' `anonymize_ips`, read from Postgres at most once per project every ten seconds. */
export class AnonymizedProjects {
  private readonly cached = new Map<number, { anonymizes: Promise<boolean>; until: number }>();

  constructor(
    private readonly sql: Sql,
    private readonly now: () => number = Date.now,
  ) {}

  anonymizes(projectId: number): Promise<boolean> {
    const now = this.now();
    const hit = this.cached.get(projectId);
    if (hit && hit.until > now) return hit.anonymizes;
    const anonymizes = projectsAnonymizingIps(this.sql, [projectId]).then((ids) => ids.has(projectId));
    this.cached.set(projectId, { anonymizes, until: now + ANONYMIZE_IPS_TTL_MS });
    // A failed read is not remembered: the batch is redelivered and reads again.
    anonymizes.catch(() => this.cached.delete(projectId));
    return anonymizes;
  }
}
