import { countEvents, countPersons, listEvents, listIngestionWarnings, type EventRow } from '@plover/clickhouse';
import type { IngestionConsumer } from '@plover/ingestion/consumer';
import { GroupStore, PersonReads, personUuid } from '@plover/persons';
import { createProject } from '../../../packages/persons/test/support/stores';
import type { DeadLetter } from '../src/dead-letter';
import { CAPTURED_AT, captured, T0, uuidOf } from './support/captured';
import { collectTopic, stackFactories, startConsumer, waitFor, type Stack } from './support/stacks';

/** ClickHouse's text for a DateTime64(6) / DateTime64(3) column holding `minutes` after T0. */
const at6 = (minutes: number) => new Date(T0.getTime() + minutes * 60_000).toISOString().replace('T', ' ').replace('Z', '000');
const at3 = (minutes: number) => new Date(T0.getTime() + minutes * 60_000).toISOString().replace('T', ' ').replace('Z', '');
const INGESTED = '2024-06-01 00:00:00.000000';

/** The group columns of an event in no group. */
const NO_GROUPS = {
  group0_properties: {},
  group1_properties: {},
  group2_properties: {},
  group3_properties: {},
  group4_properties: {},
  group0_created_at: '1970-01-01 00:00:00.000',
  group1_created_at: '1970-01-01 00:00:00.000',
  group2_created_at: '1970-01-01 00:00:00.000',
  group3_created_at: '1970-01-01 00:00:00.000',
  group4_created_at: '1970-01-01 00:00:00.000',
  $group_0: '',
  $group_1: '',
  $group_2: '',
  $group_3: '',
  $group_4: '',
};

/** Rows with their JSON columns parsed, so that key order does not matter ('' parses as {}). */
function readable(row: EventRow) {
  const json = (text: string): unknown => (text === '' ? {} : JSON.parse(text));
  return {
    ...row,
    properties: json(row.properties),
    person_properties: json(row.person_properties),
    group0_properties: json(row.group0_properties),
    group1_properties: json(row.group1_properties),
    group2_properties: json(row.group2_properties),
    group3_properties: json(row.group3_properties),
    group4_properties: json(row.group4_properties),
  };
}

describe.each(stackFactories)('ingestion consumer: $name', (factory) => {
  let stack: Stack;
  let consumer: IngestionConsumer;
  let persons: PersonReads;

  beforeAll(async () => {
    stack = await factory.open();
    consumer = await startConsumer(stack);
    persons = new PersonReads(stack.stores.sql);
  });

  afterAll(async () => {
    await consumer?.stop();
    await stack?.destroy();
  });

  async function produce(messages: Parameters<Stack['stores']['bus']['produce']>[1]): Promise<void> {
    await stack.stores.bus.produce(stack.description.settings.topics.events, messages);
  }

  async function waitForEvents(projectId: number, count: number): Promise<void> {
    await waitFor(
      `${count} events of team ${projectId}`,
      async () => (await countEvents(stack.stores.clickhouse, projectId)) >= count,
      stack.deliveryTimeoutMs,
    );
  }

  describe('a visitor who signs up, joins a company and clicks around', () => {
    let projectId: number;
    const uuids: Record<string, string> = {};

    beforeAll(async () => {
      projectId = await createProject(stack.stores.sql);
      const send = async (name: string, message: ReturnType<typeof captured>) => {
        uuids[name] = uuidOf(message);
        await produce([message]);
      };
      // Anonymous first, and stored before the rest: distinct ids land in different partitions, whose
      // relative order the bus does not keep.
      await send(
        'anonymous',
        captured(projectId, 'anon-1', '$pageview', {
          $current_url: 'https://example.com/',
          $browser: 'Chrome',
          $session_id: 's1',
          $window_id: 'w1',
          $process_person_profile: false,
        }),
      );
      await waitForEvents(projectId, 1);

      await send(
        'identify',
        captured(
          projectId,
          'user-1',
          '$identify',
          { $anon_distinct_id: 'anon-1', $set: { email: 'a@example.com' }, $set_once: { first_seen: '2024-05-01' } },
          { minutes: 1, sentAt: '2024-05-01T12:01:02.000Z' },
        ),
      );
      await send(
        'click',
        captured(
          projectId,
          'user-1',
          '$autocapture',
          {
            $browser: 'Firefox',
            $current_url: 'https://example.com/pricing',
            $session_id: 's2',
            $elements: [{ tag_name: 'a', $el_text: 'Pricing', attr__href: '/pricing', attr__class: 'primary btn', nth_child: 1, nth_of_type: 2 }],
          },
          { minutes: 2 },
        ),
      );
      await send(
        'groupidentify',
        captured(
          projectId,
          'user-1',
          '$groupidentify',
          { $group_type: 'company', $group_key: 'acme', $group_set: { name: 'Acme' }, $set: { ignored: true } },
          { minutes: 3 },
        ),
      );
      await send('grouped', captured(projectId, 'user-1', 'report viewed', { $groups: { company: 'acme' } }, { minutes: 4 }));
      await send('illegal', captured(projectId, 'user-2', '$identify', { $anon_distinct_id: 'null' }, { minutes: 1.5 }));
      await send('untimed', captured(projectId, 'user-2', 'signed up', {}, { timestamp: 'not a time' }));
      await waitForEvents(projectId, 7);
    });

    it('stores every event once with its person, groups and normalized properties', async () => {
      const user1 = personUuid(projectId, 'user-1');
      const user2 = personUuid(projectId, 'user-2');
      const user1Properties = { email: 'a@example.com', first_seen: '2024-05-01', $creator_event_uuid: uuids.identify };
      const afterClick = {
        ...user1Properties,
        $browser: 'Firefox',
        $current_url: 'https://example.com/pricing',
        $initial_browser: 'Firefox',
        $initial_current_url: 'https://example.com/pricing',
      };
      const common = { team_id: projectId, elements_chain: '', created_at: INGESTED, historical_migration: false, session_id: '', window_id: '', ...NO_GROUPS };
      const rows = (await listEvents(stack.stores.clickhouse, projectId)).map(readable);

      expect(rows).toEqual([
        {
          ...common,
          uuid: uuids.anonymous,
          event: '$pageview',
          distinct_id: 'anon-1',
          timestamp: at6(0),
          // Personless: the auto person properties and any $set are dropped; the flag stays.
          properties: { $current_url: 'https://example.com/', $browser: 'Chrome', $session_id: 's1', $window_id: 'w1', $process_person_profile: false },
          person_id: personUuid(projectId, 'anon-1'),
          person_properties: {},
          person_created_at: '1970-01-01 00:00:05.000',
          person_mode: 'propertyless',
          session_id: 's1',
          window_id: 'w1',
        },
        {
          ...common,
          uuid: uuids.identify,
          event: '$identify',
          distinct_id: 'user-1',
          timestamp: at6(1),
          properties: {
            $anon_distinct_id: 'anon-1',
            $set: { email: 'a@example.com' },
            $set_once: { first_seen: '2024-05-01' },
            $sent_at: '2024-05-01T12:01:02.000Z',
          },
          person_id: user1,
          person_properties: user1Properties,
          person_created_at: at3(1),
          person_mode: 'full',
        },
        {
          ...common,
          uuid: uuids.illegal,
          event: '$identify',
          distinct_id: 'user-2',
          timestamp: at6(1.5),
          properties: { $anon_distinct_id: 'null' },
          person_id: user2,
          person_properties: { $creator_event_uuid: uuids.illegal },
          person_created_at: at3(1.5),
          person_mode: 'full',
        },
        {
          ...common,
          uuid: uuids.click,
          event: '$autocapture',
          distinct_id: 'user-1',
          timestamp: at6(2),
          properties: {
            $browser: 'Firefox',
            $current_url: 'https://example.com/pricing',
            $session_id: 's2',
            $set: { $browser: 'Firefox', $current_url: 'https://example.com/pricing' },
            $set_once: { $initial_browser: 'Firefox', $initial_current_url: 'https://example.com/pricing' },
          },
          elements_chain: 'a.btn.primary:attr__class="primary btn"attr__href="/pricing"href="/pricing"nth-child="1"nth-of-type="2"text="Pricing"',
          person_id: user1,
          person_properties: afterClick,
          person_created_at: at3(1),
          person_mode: 'full',
          session_id: 's2',
        },
        {
          ...common,
          uuid: uuids.groupidentify,
          event: '$groupidentify',
          distinct_id: 'user-1',
          timestamp: at6(3),
          // $groupidentify never updates the sender, so its $set is not stored either.
          properties: { $group_type: 'company', $group_key: 'acme', $group_set: { name: 'Acme' } },
          person_id: user1,
          person_properties: afterClick,
          person_created_at: at3(1),
          person_mode: 'full',
        },
        {
          ...common,
          uuid: uuids.grouped,
          event: 'report viewed',
          distinct_id: 'user-1',
          timestamp: at6(4),
          properties: { $groups: { company: 'acme' }, $group_0: 'acme' },
          person_id: user1,
          person_properties: afterClick,
          person_created_at: at3(1),
          person_mode: 'full',
          $group_0: 'acme',
          group0_properties: { name: 'Acme' },
          group0_created_at: at3(3),
        },
        {
          ...common,
          uuid: uuids.untimed,
          event: 'signed up',
          distinct_id: 'user-2',
          // Unusable timestamp: stored at capture's receive time.
          timestamp: CAPTURED_AT.toISOString().replace('T', ' ').replace('Z', '000'),
          properties: {},
          person_id: user2,
          person_properties: { $creator_event_uuid: uuids.illegal },
          person_created_at: at3(1.5),
          person_mode: 'full',
        },
      ]);
    });

    it('leaves the persons and groups in Postgres as PostHog would', async () => {
      expect(await persons.getByDistinctId(projectId, 'anon-1')).toEqual({
        id: expect.any(Number),
        uuid: personUuid(projectId, 'user-1'),
        properties: {
          email: 'a@example.com',
          first_seen: '2024-05-01',
          $creator_event_uuid: uuids.identify,
          $browser: 'Firefox',
          $current_url: 'https://example.com/pricing',
          $initial_browser: 'Firefox',
          $initial_current_url: 'https://example.com/pricing',
        },
        isIdentified: true,
        createdAt: new Date(T0.getTime() + 60_000),
        version: 1,
        distinctIds: ['user-1', 'anon-1'],
      });
      expect(await persons.getByDistinctId(projectId, 'user-2')).toMatchObject({
        version: 0,
        isIdentified: false,
        properties: { $creator_event_uuid: uuids.illegal },
      });
      const groups = new GroupStore(stack.stores.sql);
      expect(await groups.listGroupTypes(projectId)).toEqual([{ groupType: 'company', groupTypeIndex: 0, nameSingular: null, namePlural: null }]);
      expect(await groups.getGroups(projectId, [{ groupTypeIndex: 0, groupKey: 'acme' }])).toEqual([
        { groupTypeIndex: 0, groupKey: 'acme', properties: { name: 'Acme' }, createdAt: new Date(T0.getTime() + 3 * 60_000), version: 0 },
      ]);
    });

    it('keeps the event and property definitions of what it stored', async () => {
      const { sql } = stack.stores;
      const events = await sql.query<{ name: string }>('test.eventDefinitions', 'SELECT name FROM event_definitions WHERE project_id = $1 ORDER BY name', [
        projectId,
      ]);
      expect(events.rows.map((row) => row.name)).toEqual(['$autocapture', '$groupidentify', '$identify', '$pageview', 'report viewed', 'signed up']);
      const properties = await sql.query<{ name: string; type: number; group_type_index: number | null; property_type: string | null }>(
        'test.propertyDefinitions',
        `SELECT name, type, group_type_index, property_type FROM property_definitions
          WHERE project_id = $1 AND name IN ('$current_url', 'email', 'first_seen', 'name', 'ignored') ORDER BY type, name`,
        [projectId],
      );
      expect(properties.rows).toEqual([
        { name: '$current_url', type: 1, group_type_index: null, property_type: 'String' },
        { name: '$current_url', type: 2, group_type_index: null, property_type: 'String' },
        { name: 'email', type: 2, group_type_index: null, property_type: 'String' },
        { name: 'first_seen', type: 2, group_type_index: null, property_type: 'DateTime' },
        { name: 'name', type: 3, group_type_index: 0, property_type: 'String' },
      ]);
      const pairs = await sql.query<{ event: string }>(
        'test.eventProperties',
        `SELECT event FROM event_properties WHERE project_id = $1 AND property = '$current_url' ORDER BY event`,
        [projectId],
      );
      expect(pairs.rows.map((row) => row.event)).toEqual(['$autocapture', '$pageview']);
    });

    it('counts the anonymous visitor and the user who identified as one person', async () => {
      // anon-1's personless event carries anon-1's own uuid; the override copied to ClickHouse maps it to user-1.
      expect(await countPersons(stack.stores.clickhouse, projectId)).toBe(2);
    });

    it('records the warnings of the refused merge and the unusable timestamp', async () => {
      const warnings = await listIngestionWarnings(stack.stores.clickhouse, projectId);
      expect(warnings.map((warning) => ({ ...warning, details: JSON.parse(warning.details) })).sort((a, b) => a.type.localeCompare(b.type))).toEqual([
        {
          team_id: projectId,
          type: 'cannot_merge_with_illegal_distinct_id',
          details: { illegalDistinctId: 'null', otherDistinctId: 'user-2', eventUuid: uuids.illegal },
          timestamp: expect.any(String),
          event_uuid: uuids.illegal,
        },
        {
          team_id: projectId,
          type: 'ignored_invalid_timestamp',
          details: { eventUuid: uuids.untimed, field: 'timestamp', value: 'not a time' },
          timestamp: expect.any(String),
          event_uuid: uuids.untimed,
        },
      ]);
    });
  });

  describe("the project's ingested_event", () => {
    it('turns true with the first event a project ingests, and only for that project', async () => {
      const projectId = await createProject(stack.stores.sql);
      const quiet = await createProject(stack.stores.sql);
      const ingestedEvent = async (id: number) =>
        (await stack.stores.sql.query<{ ingested_event: boolean }>('test.ingestedEvent', 'SELECT ingested_event FROM projects WHERE id = $1', [id])).rows[0]
          ?.ingested_event;
      expect([await ingestedEvent(projectId), await ingestedEvent(quiet)]).toEqual([false, false]);
      await produce([captured(projectId, 'first-visitor', '$pageview')]);
      await waitForEvents(projectId, 1);
      expect([await ingestedEvent(projectId), await ingestedEvent(quiet)]).toEqual([true, false]);
    });
  });

  describe('redelivered and repeated events', () => {
    it('shows an event produced twice once, and does not update its person twice', async () => {
      const projectId = await createProject(stack.stores.sql);
      const identify = captured(projectId, 'dup', '$identify', { $set: { plan: 'pro' } });
      const later = captured(projectId, 'dup', '$pageview', {}, { minutes: 1 });
      await produce([identify, later]);
      await waitForEvents(projectId, 2);
      await produce([identify]);
      // A marker behind the copy on the same key: once it is stored, the copy has been handled.
      await produce([captured(projectId, 'dup', 'marker', {}, { minutes: 2 })]);
      await waitForEvents(projectId, 3);

      expect(await countEvents(stack.stores.clickhouse, projectId)).toBe(3);
      expect((await listEvents(stack.stores.clickhouse, projectId)).map((row) => row.uuid)).toEqual([uuidOf(identify), uuidOf(later), expect.any(String)]);
      expect(await persons.getByDistinctId(projectId, 'dup')).toMatchObject({ version: 0, properties: { plan: 'pro' } });
    });
  });

  describe('messages written by the previous capture', () => {
    it('ingests events whose data is a JSON string alongside nested ones, into the same person', async () => {
      const projectId = await createProject(stack.stores.sql);
      const before = captured(projectId, 'upgraded', '$pageview', { $set: { plan: 'free' }, $browser: 'Chrome' }, { stringData: true });
      const after = captured(projectId, 'upgraded', '$pageview', { $set: { plan: 'pro' } }, { minutes: 1 });
      expect(before.value.toString()).toContain('"data":"{');
      expect(after.value.toString()).toContain('"data":{');
      await produce([before, after]);
      await waitForEvents(projectId, 2);

      const rows = (await listEvents(stack.stores.clickhouse, projectId)).map(readable);
      expect(rows.map((row) => [row.uuid, row.distinct_id, row.properties])).toEqual([
        [uuidOf(before), 'upgraded', expect.objectContaining({ $browser: 'Chrome', $set: expect.objectContaining({ plan: 'free' }) })],
        [uuidOf(after), 'upgraded', expect.objectContaining({ $set: expect.objectContaining({ plan: 'pro' }) })],
      ]);
      expect(await persons.getByDistinctId(projectId, 'upgraded')).toMatchObject({ properties: { plan: 'pro' } });
    });
  });

  describe('what clients send that the stores refuse or mistake', () => {
    it('stores NUL in distinct ids, person and group properties, group types and keys as U+FFFD, and goes on', async () => {
      const projectId = await createProject(stack.stores.sql);
      const pageview = captured(projectId, 'anon\u0000', '$pageview', {
        $set: { 'k\u0000': 'v\u0000', list: ['a\u0000', { 'n\u0000': 'b\u0000' }] },
        $set_once: { 'once\u0000': 'x\u0000' },
      });
      // Stored before the rest: distinct ids land in different partitions, whose relative order the bus does not keep.
      await produce([pageview]);
      await waitForEvents(projectId, 1);
      await produce([
        captured(projectId, 'user\u0000', '$identify', { $anon_distinct_id: 'anon\u0000', $set: { email: 'e\u0000' }, $unset: ['k\u0000'] }, { minutes: 1 }),
        captured(
          projectId,
          'user\u0000',
          '$groupidentify',
          { $group_type: 'org\u0000', $group_key: 'acme\u0000', $group_set: { 'name\u0000': 'Acme\u0000' } },
          { minutes: 2 },
        ),
        captured(projectId, 'user\u0000', 'report viewed', { $groups: { 'org\u0000': 'acme\u0000' } }, { minutes: 3 }),
      ]);
      await waitForEvents(projectId, 4);

      expect(await persons.getByDistinctId(projectId, 'user\ufffd')).toMatchObject({
        properties: { list: ['a\ufffd', { 'n\ufffd': 'b\ufffd' }], 'once\ufffd': 'x\ufffd', email: 'e\ufffd', $creator_event_uuid: uuidOf(pageview) },
        isIdentified: true,
        distinctIds: ['anon\ufffd', 'user\ufffd'],
      });
      const groups = new GroupStore(stack.stores.sql);
      expect(await groups.listGroupTypes(projectId)).toMatchObject([{ groupType: 'org\ufffd', groupTypeIndex: 0 }]);
      expect(await groups.getGroups(projectId, [{ groupTypeIndex: 0, groupKey: 'acme\ufffd' }])).toMatchObject([
        { groupKey: 'acme\ufffd', properties: { 'name\ufffd': 'Acme\ufffd' } },
      ]);
      const rows = await listEvents(stack.stores.clickhouse, projectId);
      expect(rows.map((row) => [row.event, row.distinct_id, row.$group_0])).toEqual([
        ['$pageview', 'anon\ufffd', ''],
        ['$identify', 'user\ufffd', ''],
        ['$groupidentify', 'user\ufffd', ''],
        ['report viewed', 'user\ufffd', 'acme\ufffd'],
      ]);
      expect(await listIngestionWarnings(stack.stores.clickhouse, projectId)).toEqual([]);
    });

    it('processes $group_identify, the older name, as $groupidentify: the group is written, the sender is not', async () => {
      const projectId = await createProject(stack.stores.sql);
      const identify = captured(projectId, 'u', '$group_identify', {
        $group_type: 'company',
        $group_key: 'initech',
        $group_set: { name: 'Initech' },
        $set: { ignored: true },
      });
      await produce([identify, captured(projectId, 'u', 'report viewed', { $groups: { company: 'initech' } }, { minutes: 1 })]);
      await waitForEvents(projectId, 2);

      const groups = new GroupStore(stack.stores.sql);
      expect(await groups.getGroups(projectId, [{ groupTypeIndex: 0, groupKey: 'initech' }])).toEqual([
        { groupTypeIndex: 0, groupKey: 'initech', properties: { name: 'Initech' }, createdAt: T0, version: 0 },
      ]);
      const rows = (await listEvents(stack.stores.clickhouse, projectId)).map(readable);
      expect(rows.map((row): unknown[] => [row.event, (row.properties as Record<string, unknown>).$set, row.$group_0])).toEqual([
        ['$group_identify', undefined, ''],
        ['report viewed', undefined, 'initech'],
      ]);
      expect((await persons.getByDistinctId(projectId, 'u'))?.properties).not.toHaveProperty('ignored');
    });

    it("records the warnings capture raised for a client time it did not use, under the client's uuid", async () => {
      const projectId = await createProject(stack.stores.sql);
      const uuid = '0190b0f2-0e5f-7a2c-9d4e-6f1a2b3c4d5e';
      const details = { eventUuid: uuid, field: 'timestamp', value: 'yesterday', reason: 'invalid format' };
      await produce([
        captured(projectId, 'u', 'clicked', {}, { uuid, timestamp: CAPTURED_AT.toISOString(), warnings: [{ type: 'ignored_invalid_timestamp', details }] }),
      ]);
      await waitForEvents(projectId, 1);

      const warnings = await listIngestionWarnings(stack.stores.clickhouse, projectId);
      expect(warnings.map((warning) => ({ ...warning, details: JSON.parse(warning.details) }))).toEqual([
        { team_id: projectId, type: 'ignored_invalid_timestamp', details, timestamp: expect.any(String), event_uuid: uuid },
      ]);
    });
  });

  describe('dead letters', () => {
    it('sends messages that cannot be ingested to the dead-letter topic with their reason and payload, and goes on', async () => {
      const projectId = await createProject(stack.stores.sql);
      const { topics } = stack.description.settings;
      const reader = await collectTopic(stack.stores.bus, topics.deadLetter);
      try {
        const notJson = { key: `${projectId}:x`, value: Buffer.from('{"not json') };
        const notCaptured = { key: `${projectId}:x`, value: Buffer.from(JSON.stringify({ team_id: projectId, hello: 'world' })) };
        const badUuid = captured(projectId, 'x', 'clicked', {}, { uuid: 'not-a-uuid' });
        const noProject = captured(2_000_000_000, 'x', 'clicked');
        const fine = captured(projectId, 'x', 'clicked', {}, { minutes: 1 });
        await produce([notJson, notCaptured, badUuid, noProject, fine]);

        await waitForEvents(projectId, 1);
        await waitFor('4 dead letters', () => reader.received.length >= 4, stack.deliveryTimeoutMs);
        // Dead letters keep their original keys, so only those of one key arrive in order.
        const letters = reader.received.map((message) => ({ key: message.key, ...(JSON.parse(message.value.toString()) as DeadLetter) }));
        const byKey = (key: string) => letters.filter((letter) => letter.key === key);
        expect(byKey(`${projectId}:x`).map((letter) => [letter.reason, letter.team_id, letter.payload, letter.payload_encoding])).toEqual([
          ['invalid_message', null, '{"not json', 'utf8'],
          ['invalid_message', projectId, notCaptured.value.toString(), 'utf8'],
          ['invalid_uuid', projectId, badUuid.value.toString(), 'utf8'],
        ]);
        expect(byKey(`${projectId}:x`)[1]).toMatchObject({
          detail: 'uuid is required.',
          source: { topic: topics.events, key: `${projectId}:x`, offset: expect.any(String) },
        });
        expect(byKey('2000000000:x')).toEqual([
          expect.objectContaining({
            reason: 'processing_failed',
            team_id: 2_000_000_000,
            event_uuid: uuidOf(noProject),
            payload: noProject.value.toString(),
            detail: expect.stringContaining('foreign key'),
          }),
        ]);

        const warnings = await listIngestionWarnings(stack.stores.clickhouse, projectId);
        expect(warnings.map((warning) => [warning.type, (JSON.parse(warning.details) as { reason: string }).reason]).sort()).toEqual([
          ['event_dead_lettered', 'invalid_message'],
          ['event_dead_lettered', 'invalid_uuid'],
        ]);
        expect((await listEvents(stack.stores.clickhouse, projectId)).map((row) => row.uuid)).toEqual([uuidOf(fine)]);
      } finally {
        await reader.stop();
      }
    });
  });
});
