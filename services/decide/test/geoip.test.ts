import request from 'supertest';
import { PGliteSql } from '@plover/postgres/pglite';
import { migrate } from '@plover/postgres';
import { clientIp, loadFlagGeoIp } from '../src/geoip';
import { buildApp, setup } from './support/harness';

describe('GeoIP', () => {
  const geoip = loadFlagGeoIp();

  it('locates public addresses from the bundled GeoLite2 City database, as flag person properties', () => {
    expect(geoip('81.2.69.142')).toEqual({
      $geoip_city_name: expect.any(String),
      $geoip_country_name: 'United Kingdom',
      $geoip_country_code: 'GB',
      $geoip_continent_name: 'Europe',
      $geoip_continent_code: 'EU',
      $geoip_postal_code: expect.any(String),
      $geoip_time_zone: 'Europe/London',
    });
    expect(geoip('8.8.8.8')).toMatchObject({ $geoip_country_code: 'US', $geoip_continent_code: 'NA' });
  });

  it('locates only the seven properties flags see; private and malformed client addresses locate nobody', () => {
    expect(Object.keys(geoip('81.2.69.142') ?? {})).not.toContain('$geoip_latitude');
    for (const ip of ['10.1.2.3', '127.0.0.1', '::1']) expect(geoip(ip)).toBeUndefined();
    expect(clientIp({ headers: { 'x-forwarded-for': 'nonsense' }, socket: { remoteAddress: undefined } } as never)).toBeUndefined();
    expect(clientIp({ headers: { 'x-forwarded-for': '81.2.69.142, 10.0.0.1' }, socket: {} } as never)).toBe('81.2.69.142');
  });

  it('feeds $geoip_* properties into flags, under the request overrides, unless geoip_disable', async () => {
    const sql = await PGliteSql.open();
    try {
      await migrate(sql);
      const { project } = await setup(sql);
      const app = buildApp(sql, { geoip });
      await request(app)
        .post(`/api/projects/${project.id}/feature_flags/`)
        .send({ key: 'uk', filters: { groups: [{ properties: [{ key: '$geoip_country_code', type: 'person', value: ['GB'] }], rollout_percentage: 100 }] } })
        .expect(201);
      const ask = async (body: Record<string, unknown>, ip: string) =>
        (
          await request(app)
            .post('/decide/?v=3')
            .set('X-Forwarded-For', ip)
            .send({ token: project.api_token, distinct_id: 'x', ...body })
            .expect(200)
        ).body as {
          featureFlags: Record<string, unknown>;
          errorsWhileComputingFlags: boolean;
        };
      expect((await ask({}, '81.2.69.142')).featureFlags.uk).toBe(true);
      expect((await ask({}, '8.8.8.8')).featureFlags.uk).toBe(false);
      expect((await ask({ geoip_disable: true }, '81.2.69.142')).featureFlags.uk).toBe(false);
      expect((await ask({ person_properties: { $geoip_country_code: 'US' } }, '81.2.69.142')).featureFlags.uk).toBe(false);
      expect((await ask({}, '127.0.0.1')).featureFlags.uk).toBe(false);
    } finally {
      await sql.close();
    }
  });
});
