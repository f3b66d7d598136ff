import { listEvents } from '@plover/clickhouse';
import { loadGeoIp } from '@plover/geoip';
import type { IngestionConsumer } from '@plover/ingestion/consumer';
import { PersonReads } from '@plover/persons';
import { createProject } from '../../../packages/persons/test/support/stores';
import { withGeoIp } from '../src/geoip';
import { captured } from './support/captured';
import { stackFactories, startConsumer, waitFor, type Stack } from './support/stacks';

const lookup = loadGeoIp();
/** GeoLite2 places it in London. */
const LONDON = '81.2.69.142';
/** GeoLite2 places it in Sweden. */
const SWEDEN = '89.160.20.129';

describe('withGeoIp (PostHog GeoIP transformation)', () => {
  it('adds the located $geoip_* properties, $set of every $geoip_* name (null when unknown) and $set_once of $initial_geoip_*', () => {
    const located = lookup(LONDON) ?? {};
    const enriched = withGeoIp({ $ip: LONDON, $set: { email: 'a@b.c', $geoip_city_name: 'stale' }, $set_once: { first: 1 } }, lookup);
    expect(enriched).toMatchObject({ ...located, $ip: LONDON, $geoip_country_code: 'GB' });
    expect(enriched).not.toHaveProperty('$geoip_city_confidence');
    const set = enriched.$set as Record<string, unknown>;
    const setOnce = enriched.$set_once as Record<string, unknown>;
    expect(set).toMatchObject({ email: 'a@b.c', $geoip_country_code: 'GB', $geoip_city_confidence: null, $geoip_subdivision_1_code: 'ENG' });
    expect(set.$geoip_city_name).toBe(located.$geoip_city_name ?? null);
    expect(setOnce).toMatchObject({ first: 1, $initial_geoip_country_code: 'GB', $initial_geoip_city_confidence: null });
    expect(Object.keys(set).filter((key) => key.startsWith('$geoip_')).length).toBeGreaterThanOrEqual(15);
  });

  it('leaves the event alone when $geoip_disable is set, there is no $ip, or the address is private or malformed', () => {
    for (const properties of [
      { $ip: LONDON, $geoip_disable: true },
      {},
      { $ip: '' },
      { $ip: 42 },
      { $ip: '10.0.0.7' },
      { $ip: '192.168.1.1' },
      { $ip: '127.0.0.1' },
      { $ip: 'not an address' },
      { $ip: '300.1.1.1' },
    ]) {
      expect(withGeoIp(properties, lookup)).toBe(properties);
    }
  });
});

describe.each(stackFactories)('GeoIP and anonymize_ips at ingestion: $name', (factory) => {
  let stack: Stack;
  let consumer: IngestionConsumer;

  beforeAll(async () => {
    stack = await factory.open();
    consumer = await startConsumer(stack, { geoip: lookup });
    // Opening the stores takes a while on a shared, busy machine.
  }, 120_000);

  afterAll(async () => {
    await consumer?.stop();
    await stack?.destroy();
  });

  async function ingest(projectId: number, messages: ReturnType<typeof captured>[]) {
    await stack.stores.bus.produce(stack.description.settings.topics.events, messages);
    await waitFor(
      `${messages.length} events`,
      async () => (await listEvents(stack.stores.clickhouse, projectId)).length >= messages.length,
      stack.deliveryTimeoutMs,
    );
    return (await listEvents(stack.stores.clickhouse, projectId)).map((row) => ({
      distinctId: row.distinct_id,
      properties: JSON.parse(row.properties) as Record<string, unknown>,
    }));
  }

  it('stores the location on events and persons, unless disabled, private, or for a personless event', async () => {
    const projectId = await createProject(stack.stores.sql);
    const events = await ingest(projectId, [
      captured(projectId, 'uk', '$pageview', { $ip: LONDON }, { minutes: 0 }),
      captured(projectId, 'uk', '$pageview', { $ip: SWEDEN }, { minutes: 1 }),
      captured(projectId, 'off', '$pageview', { $ip: LONDON, $geoip_disable: true }),
      captured(projectId, 'lan', '$pageview', { $ip: '192.168.0.12' }),
      captured(projectId, 'anon', '$pageview', { $ip: SWEDEN, $process_person_profile: false }),
    ]);
    const by = (id: string) => events.filter((event) => event.distinctId === id).map((event) => event.properties);
    expect(by('uk').map((properties) => properties.$geoip_country_code)).toEqual(['GB', 'SE']);
    expect(by('uk')[0]).toMatchObject({ $geoip_country_name: 'United Kingdom', $geoip_continent_code: 'EU', $ip: LONDON });
    expect(by('off')[0]).not.toHaveProperty('$geoip_country_code');
    expect(by('lan')[0]).not.toHaveProperty('$geoip_country_code');
    expect(by('anon')[0]).toMatchObject({ $geoip_country_code: 'SE' });

    const persons = new PersonReads(stack.stores.sql);
    // $set follows the latest location, $set_once keeps the first.
    expect((await persons.getByDistinctId(projectId, 'uk'))?.properties).toMatchObject({
      $geoip_country_code: 'SE',
      $geoip_subdivision_1_code: lookup(SWEDEN)?.$geoip_subdivision_1_code ?? null,
      $initial_geoip_country_code: 'GB',
      $initial_geoip_subdivision_1_code: 'ENG',
    });
    expect((await persons.getByDistinctId(projectId, 'off'))?.properties).not.toHaveProperty('$geoip_country_code');
    expect(await persons.getByDistinctId(projectId, 'anon')).toBeUndefined();
  });

  it('drops $ip before storage in a project with anonymize_ips, after locating it', async () => {
    const projectId = await createProject(stack.stores.sql);
    await stack.stores.sql.query('test.anonymize', 'UPDATE projects SET anonymize_ips = true WHERE id = $1', [projectId]);
    const [event] = await ingest(projectId, [captured(projectId, 'hidden', '$pageview', { $ip: LONDON })]);
    expect(event?.properties).not.toHaveProperty('$ip');
    expect(event?.properties).toMatchObject({ $geoip_country_code: 'GB' });
  });
});
