import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { insertEvents, migrate as migrateClickHouse, NO_GROUPS, type ClickHouse, type EventRow } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { silentLogger, uuidv7 } from '@plover/core';
import { PersonStore } from '@plover/persons';
import { EXPORT_WINDOW_ROWS } from '../src/data/data-store';
import { openApiDocument } from '../src/openapi';
import { backends, useWorld } from './support/app';
import { declaredTable } from './support/table';

/**
 * `format=jsonl` on the streamed listings (events, persons): every matching row once, as one JSON object a line,
 * in the listing's order, with the listing's filters (events: lines written by ClickHouse, one streamed statement
 * per window of whole days holding at most EXPORT_WINDOW_ROWS events; persons: keyset batches); a 404 elsewhere.
 */

jest.setTimeout(180_000);

/** ClickHouse's DateTime64(6) text of `ms` after the epoch, plus `micros`. */
function chTime(ms: number, micros = 0): string {
  return `${new Date(ms).toISOString().replace('T', ' ').slice(0, 23)}${String(micros).padStart(3, '0')}`;
}

function event(projectId: number, n: number, timestamp: string): EventRow {
  return {
    uuid: randomUUID(),
    event: n % 10 === 0 ? 'signup' : '$pageview',
    properties: JSON.stringify({ n }),
    timestamp,
    team_id: projectId,
    distinct_id: `d${n % 7}`,
    elements_chain: '',
    created_at: timestamp,
    person_id: randomUUID(),
    person_properties: '{}',
    person_created_at: '1970-01-01 00:00:00.000',
    person_mode: 'full',
    ...NO_GROUPS,
    session_id: '',
    window_id: '',
    historical_migration: false,
  };
}

function lines(text: string): Array<Record<string, unknown>> {
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

let clickhouse: ClickHouse;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'plover-mgmt-jsonl-'));
  clickhouse = await ChdbClickHouse.open({ dataDir: dir });
  await migrateClickHouse(clickhouse, { logger: silentLogger() });
});
afterAll(async () => {
  await clickhouse.close();
  await rm(dir, { recursive: true, force: true });
});

describe.each(backends.map((backend, index) => ({ ...backend, index })))('format=jsonl on $name', (backend) => {
  const world = useWorld(backend, { clickhouse: () => clickhouse });
  // chDB is shared by the backends: their projects must not share ids.
  beforeAll(() => world.sql.query('t.ids', `ALTER TABLE projects ALTER COLUMN id RESTART WITH ${(backend.index + 1) * 100_000 + 70_000}`));

  it('streams every event of the listing once, with equal timestamps, with its filters, limit and offset', async () => {
    const t = await world.tenant();
    // Runs of 7 in one millisecond (microseconds apart, but for two equal times): ordered by uuid within one.
    const total = 3000;
    const rows = Array.from({ length: total }, (_, n) =>
      event(t.projectId, n, chTime(Date.UTC(2024, 2, 1, 10) + Math.floor(n / 7) * 1000, [5, 5, 900, 3, 640, 1, 999][n % 7])),
    );
    await insertEvents(clickhouse, rows);
    const base = `/api/projects/${t.projectId}/events/`;

    const all = await request(world.app).get(`${base}?format=jsonl`).set(t.auth);
    expect(all.status).toBe(200);
    expect(all.headers['content-type']).toBe('application/jsonl; charset=utf-8');
    expect(all.headers['content-disposition']).toBe('attachment; filename="events.jsonl"');
    const exported = lines(all.text);
    expect(exported).toHaveLength(total);
    expect(new Set(exported.map((row) => row.uuid))).toEqual(new Set(rows.map((row) => row.uuid)));
    expect(exported[0]).toEqual(expect.objectContaining({ event: expect.any(String), distinct_id: expect.any(String), properties: { n: expect.any(Number) } }));

    const signups = lines((await request(world.app).get(`${base}?format=jsonl&event=signup`).set(t.auth)).text);
    expect(signups).toHaveLength(total / 10);
    expect(signups.every((row) => row.event === 'signup')).toBe(true);
    const limited = await request(world.app).get(`${base}?format=jsonl&limit=5&offset=10`).set(t.auth);
    expect(lines(limited.text).map((row) => row.uuid)).toEqual(exported.slice(10, 15).map((row) => row.uuid));

    const empty = await request(world.app).get(`${base}?format=jsonl&event=nothing`).set(t.auth);
    expect({ status: empty.status, text: empty.text }).toEqual({ status: 200, text: '' });
  });

  it('writes each event as the bytes JSON.stringify writes for the JSON listing’s row: odd text, microseconds', async () => {
    const t = await world.tenant();
    const odd = ['a/b "quoted" \\ back', 'tab\there\nnewline \u0001 control', 'é ü 中文 😀', '</script>', ''];
    const rows = odd.map((text, n) => ({
      ...event(t.projectId, n, chTime(Date.UTC(2024, 4, 1, 12) + n * 1000, 999)),
      event: text || 'empty',
      distinct_id: `${text}-${n}`,
      properties: JSON.stringify({ text, nested: { list: [1, 2.5, null, true], url: 'https://example.com/a/b?c=d' } }),
    }));
    await insertEvents(clickhouse, rows);
    const base = `/api/projects/${t.projectId}/events/`;
    const listed = await request(world.app).get(`${base}?limit=100`).set(t.auth);
    expect(listed.status).toBe(200);
    const exported = await request(world.app).get(`${base}?format=jsonl`).set(t.auth);
    const expected = (listed.body as { results: unknown[] }).results.map((row) => `${JSON.stringify(row)}\n`).join('');
    expect(exported.text).toBe(expected);
    expect(lines(exported.text).map((row) => row.timestamp)).toEqual(odd.map((_, n) => new Date(Date.UTC(2024, 4, 1, 12) + n * 1000).toISOString()).reverse());
  });

  it('streams events spread over years with gaps in the listing’s order, across windows of days', async () => {
    const t = await world.tenant();
    const day = 86_400_000;
    // Busy days (more than a window in three days), a gap of months, a few events years before; distinct times.
    const busy = Math.round(1.2 * EXPORT_WINDOW_ROWS);
    const times = [
      ...Array.from({ length: busy }, (_, n) => Date.UTC(2024, 2, 1) + Math.floor((n * 3 * day) / busy)),
      ...Array.from({ length: 40 }, (_, n) => Date.UTC(2023, 5, 1) + n * 3_600_000),
      ...Array.from({ length: 7 }, (_, n) => Date.UTC(2019, 0, 1) + n * 7 * day),
    ];
    const rows = times.map((ms, n) => event(t.projectId, n, chTime(ms, n % 1000)));
    await insertEvents(clickhouse, rows);
    const exported = lines((await request(world.app).get(`/api/projects/${t.projectId}/events/?format=jsonl`).set(t.auth)).text);
    const newestFirst = [...rows].sort((a, b) => (a.timestamp < b.timestamp ? 1 : -1)).map((row) => row.uuid);
    expect(exported.map((row) => row.uuid)).toEqual(newestFirst);
    // From an offset, and with a filter that leaves the old events only.
    const offset = lines(
      (
        await request(world.app)
          .get(`/api/projects/${t.projectId}/events/?format=jsonl&offset=${busy - 10}`)
          .set(t.auth)
      ).text,
    );
    expect(offset.map((row) => row.uuid)).toEqual(newestFirst.slice(busy - 10));
    const before = lines((await request(world.app).get(`/api/projects/${t.projectId}/events/?format=jsonl&before=2024-01-01T00:00:00Z`).set(t.auth)).text);
    expect(before.map((row) => row.uuid)).toEqual(newestFirst.slice(busy));
  });

  it('streams persons as JSON lines; other listings answer format=jsonl with 404', async () => {
    const t = await world.tenant();
    const store = new PersonStore(world.sql);
    for (const name of ['alice', 'bob', 'carol']) {
      await store.processEvent(t.projectId, { uuid: uuidv7(), event: '$identify', distinctId: name, timestamp: new Date(), properties: { $set: { name } } });
    }
    const persons = lines((await request(world.app).get(`/api/projects/${t.projectId}/persons/?format=jsonl`).set(t.auth)).text);
    expect(persons.map((person) => (person.properties as { name: string }).name).sort()).toEqual(['alice', 'bob', 'carol']);
    expect(persons[0]).toEqual(expect.objectContaining({ uuid: expect.any(String), distinct_ids: [expect.any(String)] }));

    for (const listing of ['groups_types/', 'ingestion_warnings/', 'feature_flags/']) {
      const res = await request(world.app).get(`/api/projects/${t.projectId}/${listing}?format=jsonl`).set(t.auth);
      expect({ listing, status: res.status, code: (res.body as { code: string }).code }).toEqual({ listing, status: 404, code: 'not_found' });
    }
  });
});

it('publishes format=jsonl in the OpenAPI document of the streamed listings only', () => {
  const paths = openApiDocument(declaredTable()).paths as Record<string, { get?: { parameters: Array<{ name: string; schema: { enum?: string[] } }> } }>;
  const formats = (url: string) => paths[url]?.get?.parameters.find((parameter) => parameter.name === 'format')?.schema.enum;
  expect(formats('/api/projects/{project_id}/events/')).toEqual(['json', 'csv', 'jsonl']);
  expect(formats('/api/projects/{project_id}/persons/')).toEqual(['json', 'csv', 'jsonl']);
  expect(formats('/api/projects/{project_id}/ingestion_warnings/')).toEqual(['json', 'csv']);
});
