import { GEOIP_NAMES, isPrivateAddress, loadGeoIp } from '../src';

describe('GeoIP lookup', () => {
  const lookup = loadGeoIp();

  it('locates public addresses as the bundled GeoLite2 City database has them, in PostHog names', () => {
    const london = lookup('81.2.69.142');
    expect(london).toMatchObject({
      $geoip_country_name: 'United Kingdom',
      $geoip_country_code: 'GB',
      $geoip_continent_name: 'Europe',
      $geoip_continent_code: 'EU',
      $geoip_time_zone: 'Europe/London',
      $geoip_subdivision_1_code: 'ENG',
      $geoip_subdivision_1_name: 'England',
      $geoip_latitude: expect.any(Number),
      $geoip_longitude: expect.any(Number),
      $geoip_accuracy_radius: expect.any(Number),
    });
    // Every key is one of PostHog's names.
    for (const key of Object.keys(london ?? {})) expect(GEOIP_NAMES.map((name) => `$geoip_${name}`)).toContain(key);
    expect(lookup('8.8.8.8')).toMatchObject({ $geoip_country_code: 'US', $geoip_continent_code: 'NA' });
    expect(lookup('89.160.20.129')).toMatchObject({ $geoip_country_code: 'SE', $geoip_country_name: 'Sweden' });
    expect(lookup('2001:4860:4860::8888')).toMatchObject({ $geoip_country_code: 'US' });
  });

  it('locates nobody at private, loopback and malformed addresses', () => {
    for (const ip of ['10.1.2.3', '192.168.0.1', '172.16.5.5', '127.0.0.1', '::1', 'fd00::1', '100.64.0.1', '169.254.1.1', '0.0.0.0', 'fe80::1']) {
      expect(isPrivateAddress(ip)).toBe(true);
      expect(lookup(ip)).toBeUndefined();
    }
    for (const ip of ['', 'nonsense', '999.1.1.1', '81.2.69', '81.2.69.142.1', '::ffff:zz']) expect(lookup(ip)).toBeUndefined();
    expect(isPrivateAddress('81.2.69.142')).toBe(false);
  });
});
