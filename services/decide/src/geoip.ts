import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { Properties } from '@plover/flags';
import { loadGeoIp } from '@plover/geoip';
import { requestAddress } from '@plover/http';

/** Client address → the seven `$geoip_*` person properties flags see, or undefined (private, loopback, unknown). */
export type GeoIpLookup = (ip: string) => Properties | undefined;

/** What PostHog's flags service adds to a request's person properties (no coordinates, no subdivisions). */
const FLAG_PROPERTIES = [
  '$geoip_city_name',
  '$geoip_country_name',
  '$geoip_country_code',
  '$geoip_continent_name',
  '$geoip_continent_code',
  '$geoip_postal_code',
  '$geoip_time_zone',
];

/** The first `X-Forwarded-For` address (Django decide's `HTTP_X_FORWARDED_FOR`), else the socket's. */
export function clientIp(req: IncomingMessage): string | undefined {
  const candidate = requestAddress(req, true);
  if (!candidate) return undefined;
  const ip = candidate.startsWith('::ffff:') && isIP(candidate.slice(7)) === 4 ? candidate.slice(7) : candidate;
  return isIP(ip) ? ip : undefined;
}

/** Loads the bundled GeoLite2 database (@plover/geoip) and narrows its answers to the flag properties. */
export function loadFlagGeoIp(): GeoIpLookup {
  const lookup = loadGeoIp();
  return (ip) => {
    const location = lookup(ip);
    if (!location) return undefined;
    const properties = FLAG_PROPERTIES.flatMap((key) => (location[key] === undefined ? [] : [[key, location[key]] as const]));
    return properties.length > 0 ? Object.fromEntries(properties) : undefined;
  };
}
