import { randomUUID } from 'node:crypto';
import { deflateSync, gzipSync } from 'node:zlib';
import request from 'supertest';
import { insertEvents, NO_GROUPS, type EventRow } from '@plover/clickhouse';
import { ApiError, StorageError, uuidv7 } from '@plover/core';
import { PersonReads, PersonStore } from '@plover/persons';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../src/http/body';
import { unstorableInput } from '../src/http/errors';
import { csvCell, CSV_EXPORT_TRUNCATED_HEADER, toCsv } from '../src/http/render';
import { backends, useWorld, type World } from './support/app';
import { ownProjectIds, useChdb } from './support/recordings';
import { label, ROUTES, seedFixture, snapshot, urlOf, type Fixture, type Route } from './support/routes';

/**
 * What a hostile client sends: spreadsheet formulas that CSV exports must neutralize, NUL and deep or broken
 * bodies that must be a 4xx in the JSON error shape (and change nothing), lenient booleans and bodies that must
 * be refused, and CSV exports that must hold every matching row rather than one page.
 */

jest.setTimeout(180_000);

const FORMULAS = ['=1+2', '+SUM(1,2)', '-2+3', '@SUM(1,2)', '\t=1+2', '\r=1+2', '=HYPERLINK("http://evil.example","x")'];
const FORMULA_START = /^[=+\-@\t\r]/;

/** The cells of an RFC 4180 text, unquoted. */
function csvCells(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  return rows;
}

/** A CSV answer in which no cell would run as a formula, holding each payload neutralized. */
function expectNeutralCsv(res: request.Response, payloads: readonly string[] = FORMULAS): void {
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/csv/);
  const cells = csvCells(res.text).flat();
  expect(cells.filter((cell) => FORMULA_START.test(cell))).toEqual([]);
  for (const payload of payloads) expect(cells.some((cell) => cell.includes(`'${payload}`))).toBe(true);
}

/** `body` with `suffix` appended to its first string (depth first), and where that string is. */
function withNul(body: unknown, at: string | null = null, suffix = '\u0000'): { body: unknown; attr: string | null } | undefined {
  if (typeof body === 'string') return { body: `${body}${suffix}`, attr: at };
  const entries: Array<[string, unknown]> = Array.isArray(body)
    ? body.map((v, i) => [String(i), v])
    : typeof body === 'object' && body !== null
      ? Object.entries(body)
      : [];
  for (const [key, value] of entries) {
    const found = withNul(value, at === null ? key : `${at}__${key}`, suffix);
    if (found) {
      const copy: Record<string, unknown> | unknown[] = Array.isArray(body) ? [...(body as unknown[])] : { ...(body as Record<string, unknown>) };
      (copy as Record<string, unknown>)[key] = found.body;
      return { body: copy, attr: found.attr };
    }
  }
  return undefined;
}

/** Sends `body` as the bytes it is, labelled JSON (supertest would serialize a Buffer as JSON itself). */
const bytes = (req: request.Test, body: Buffer): request.Test =>
  req
    .set('Content-Type', 'application/json')
    .serialize(() => body as unknown as string)
    .send(body);

function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

const BODY_ROUTES = ROUTES.filter((route): route is Route & { body: Record<string, unknown> } => route.body !== undefined);
const isPersonWrite = (route: Route) => (route.method === 'patch' || route.method === 'put') && route.path.endsWith('/persons/{person}/');

describe('CSV cells', () => {
  it.each(FORMULAS)('%j is written as text, value and header alike', (payload) => {
    expect(csvCell(payload)).toMatch(/^"?'/);
    const csv = toCsv([{ [payload]: payload, plain: 'ok' }]);
    const [header, row] = csvCells(csv);
    expect(header).toEqual([`'${payload}`, 'plain']);
    expect(row).toEqual([`'${payload}`, 'ok']);
  });

  it('leaves numbers, dates and ordinary text as they were', () => {
    expect(csvCell(-5)).toBe('-5');
    expect(csvCell(2.5)).toBe('2.5');
    expect(csvCell(new Date('2024-01-01T00:00:00Z'))).toBe('2024-01-01T00:00:00.000Z');
    expect(csvCell('a=b')).toBe('a=b');
    expect(csvCell('x, "y"')).toBe('"x, ""y"""');
  });
});

describe('JSON depth and the storage backstop', () => {
  it('counts nesting on the text, brackets inside strings ignored', () => {
    expect(nestsDeeperThan('[[1]]', 2)).toBe(false);
    expect(nestsDeeperThan('[[[1]]]', 2)).toBe(true);
    expect(nestsDeeperThan('["[[[[\\"[[["]', 1)).toBe(false);
    expect(nestsDeeperThan('['.repeat(1_000_000), MAX_JSON_DEPTH)).toBe(true);
  });

  it.each(['22P05', '22021'])('Postgres %s (the client’s characters) is a 400', (code) => {
    let passed: unknown;
    unstorableInput(new StorageError('q: unsupported Unicode escape sequence', false, code), {} as never, {} as never, (error: unknown) => (passed = error));
    expect(passed).toBeInstanceOf(ApiError);
    expect((passed as ApiError).status).toBe(400);
    const other = new StorageError('q: deadlock', true, '40P01');
    unstorableInput(other, {} as never, {} as never, (error: unknown) => (passed = error));
    expect(passed).toBe(other);
  });
});

const recordings = useChdb();

describe.each(backends.map((backend, index) => ({ ...backend, index })))('hostile input on $name', (backend) => {
  const world = useWorld(backend, { clickhouse: recordings });
  beforeAll(() => ownProjectIds(world.sql, backend.index));

  describe('every body route', () => {
    let f: Fixture;
    beforeAll(async () => {
      f = await seedFixture(world);
    });

    const send = (route: Route, build: (req: request.Test) => request.Test) => build(request(world.app)[route.method](urlOf(route, f)).set(f.auth));

    it.each(BODY_ROUTES.filter((route) => !isPersonWrite(route)).map((route) => [label(route), route] as const))(
      '%s: a NUL in a field → 400 naming it, nothing changed',
      async (_name, route) => {
        const before = await snapshot(world.sql);
        const poisoned = withNul(route.body)!;
        const res = await send(route, (req) => req.send(poisoned.body as object));
        expect({ status: res.status, body: res.body as unknown }).toEqual({
          status: 400,
          body: { type: 'validation_error', code: 'null_characters_not_allowed', detail: 'Null characters are not allowed.', attr: poisoned.attr },
        });
        expect(await snapshot(world.sql)).toBe(before);
      },
    );

    it.each(BODY_ROUTES.filter((route) => !isPersonWrite(route)).map((route) => [label(route), route] as const))(
      '%s: half a surrogate pair in a field → 400 naming it, nothing changed',
      async (_name, route) => {
        const before = await snapshot(world.sql);
        const poisoned = withNul(route.body, null, '\ud800')!;
        const res = await send(route, (req) => req.send(poisoned.body as object));
        expect({ status: res.status, body: res.body as unknown }).toEqual({
          status: 400,
          body: { type: 'validation_error', code: 'invalid_unicode', detail: 'Unpaired UTF-16 surrogates are not allowed.', attr: poisoned.attr },
        });
        expect(await snapshot(world.sql)).toBe(before);
      },
    );

    it.each(BODY_ROUTES.map((route) => [label(route), route] as const))('%s: truncated gzip → 400, nothing changed', async (_name, route) => {
      const before = await snapshot(world.sql);
      const gz = gzipSync(JSON.stringify(route.body));
      const res = await send(route, (req) => bytes(req.set('Content-Encoding', 'gzip'), gz.subarray(0, gz.length - 6)));
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ type: 'validation_error', code: 'parse_error', attr: null });
      expect(await snapshot(world.sql)).toBe(before);
    });

    it.each(BODY_ROUTES.map((route) => [label(route), route] as const))('%s: nested past the limit → 400, nothing changed', async (_name, route) => {
      const before = await snapshot(world.sql);
      const res = await send(route, (req) => req.send({ ...route.body, extra: nested(MAX_JSON_DEPTH) }));
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ type: 'validation_error', code: 'max_depth', attr: null });
      expect(await snapshot(world.sql)).toBe(before);
    });
  });

  describe('persons', () => {
    async function person(w: World, projectId: number, distinctId: string, properties: Record<string, unknown>) {
      const store = new PersonStore(w.sql);
      await store.processEvent(projectId, {
        uuid: uuidv7(),
        event: '$identify',
        distinctId,
        timestamp: new Date('2024-03-01T00:00:00Z'),
        properties: { $set: properties },
      });
      return (await new PersonReads(w.sql).getByDistinctId(projectId, distinctId))!;
    }

    it('PATCH properties: a NUL is stored as U+FFFD, as ingestion stores the same $set', async () => {
      const t = await world.tenant();
      const p = await person(world, t.projectId, 'nul', {});
      const res = await request(world.app)
        .patch(`/api/projects/${t.projectId}/persons/${p.id}/`)
        .set(t.auth)
        .send({ properties: { 'k\u0000': 'a\u0000b' } });
      expect(res.status).toBe(200);
      expect(res.body.properties).toMatchObject({ 'k\ufffd': 'a\ufffdb' });
    });

    it('gzip and deflate bodies are read; a gzip bomb is a 413; depth 4,000 and 100,000 are a 400; 128 levels are accepted', async () => {
      const t = await world.tenant();
      const p = await person(world, t.projectId, 'deep', {});
      const url = `/api/projects/${t.projectId}/persons/${p.id}/`;
      const encoded = (encoding: string, body: Buffer) => bytes(request(world.app).patch(url).set(t.auth).set('Content-Encoding', encoding), body);
      expect((await encoded('gzip', gzipSync(JSON.stringify({ properties: { via: 'gzip' } })))).body.properties.via).toBe('gzip');
      expect((await encoded('deflate', deflateSync(JSON.stringify({ properties: { via: 'deflate' } })))).body.properties.via).toBe('deflate');
      expect((await encoded('br', Buffer.from('{}'))).status).toBe(415);

      const bomb = gzipSync(Buffer.concat([Buffer.from('{"properties":{"x":"'), Buffer.alloc(64 * 1024 * 1024, 97), Buffer.from('"}}')]));
      const bombed = await encoded('gzip', bomb);
      expect(bombed.status).toBe(413);
      expect(bombed.body).toMatchObject({ code: 'payload_too_large' });

      for (const depth of [4000, 100_000]) {
        const res = await request(world.app)
          .patch(url)
          .set(t.auth)
          .set('Content-Type', 'application/json')
          .send(`{"properties":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ type: 'validation_error', code: 'max_depth', detail: `JSON nests deeper than ${MAX_JSON_DEPTH} levels.`, attr: null });
      }
      // The body is level 1, `properties` level 2.
      const deepest = await request(world.app)
        .patch(url)
        .set(t.auth)
        .send({ properties: { d: nested(MAX_JSON_DEPTH - 2) } });
      expect(deepest.status).toBe(200);
      const tooDeep = await request(world.app)
        .patch(url)
        .set(t.auth)
        .send({ properties: { d: nested(MAX_JSON_DEPTH - 1) } });
      expect(tooDeep.status).toBe(400);
    });

    it.each([
      ['persons/?search=a%00b', 'search'],
      ['persons/?email=a%00b', 'email'],
      ['persons/?distinct_id=a%00b', 'distinct_id'],
      [`persons/?properties=${encodeURIComponent(JSON.stringify([{ key: 'plan', value: 'a\u0000' }]))}`, 'properties'],
      [`persons/?properties=${encodeURIComponent(JSON.stringify([{ key: 'k\u0000', operator: 'is_set' }]))}`, 'properties'],
      ['groups/?group_type_index=0&search=a%00b', 'search'],
      ['session_recording_playlists/?search=a%00b', 'search'],
      ['session_recording_playlists/?short_id=a%00b', 'short_id'],
      ['insights/?search=a%00b', 'search'],
      ['insights/?short_id=a%00b', 'short_id'],
      ['feature_flags/?search=a%00b', 'search'],
      ['events/?event=a%00b', 'event'],
      ['persons/?a%00b=1', 'a\u0000b'],
    ])('GET %s → 400 naming %s', async (query, attr) => {
      const t = await world.tenant();
      const res = await request(world.app).get(`/api/projects/${t.projectId}/${query}`).set(t.auth);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ type: 'validation_error', code: 'null_characters_not_allowed', detail: 'Null characters are not allowed.', attr });
    });

    it('GET with half a surrogate pair in a JSON-valued parameter → 400 naming it', async () => {
      const t = await world.tenant();
      const properties = encodeURIComponent(JSON.stringify([{ key: 'plan', value: 'a\ud800' }]));
      const res = await request(world.app).get(`/api/projects/${t.projectId}/persons/?properties=${properties}`).set(t.auth);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        type: 'validation_error',
        code: 'invalid_unicode',
        detail: 'Unpaired UTF-16 surrogates are not allowed.',
        attr: 'properties',
      });
    });

    it('a NUL in the path → 400, nothing changed', async () => {
      const f = await seedFixture(world);
      const base = `/api/projects/${f.projectId}`;
      const before = await snapshot(world.sql);
      for (const res of [
        await request(world.app).get(`${base}/session_recordings/a%00b/`).set(f.auth),
        await request(world.app).post(`${base}/session_recording_playlists/${f.shortId}/recordings/a%00b/`).set(f.auth),
        await request(world.app).delete(`${base}/session_recording_playlists/${f.shortId}/recordings/a%00b/`).set(f.auth),
        await request(world.app).get(`${base}/insights/a%00b/`).set(f.auth),
      ]) {
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ type: 'validation_error', code: 'null_characters_not_allowed' });
      }
      expect(await snapshot(world.sql)).toBe(before);
    });

    it('insight and timing bodies with a NUL → 400 naming the field, nothing stored', async () => {
      const t = await world.tenant();
      const base = `/api/projects/${t.projectId}/insights`;
      const before = await snapshot(world.sql);
      const named = (res: request.Response, attr: string) => {
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'null_characters_not_allowed', attr });
      };
      named(await request(world.app).post(`${base}/`).set(t.auth).send({ name: 'a\u0000' }), 'name');
      named(
        await request(world.app)
          .post(`${base}/`)
          .set(t.auth)
          .send({ filters: { events: [{ id: 'x\u0000' }] } }),
        'filters__events__0__id',
      );
      named(await request(world.app).post(`${base}/timing/`).set(t.auth).send({ session_id: 'a\u0000' }), 'session_id');
      named(
        await request(world.app)
          .post(`${base}/trend/`)
          .set(t.auth)
          .send({ events: [{ id: '\u0000' }] }),
        'events__0__id',
      );
      expect(await snapshot(world.sql)).toBe(before);
    });

    it('JSON query parameters nested past the limit → 400 naming them', async () => {
      const t = await world.tenant();
      const deep = encodeURIComponent(`${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`);
      for (const path of [`persons/?properties=${deep}`, `events/?properties=${deep}`, `insights/?created_by=${deep}`]) {
        const res = await request(world.app).get(`/api/projects/${t.projectId}/${path}`).set(t.auth);
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'max_depth', attr: path.slice(path.indexOf('?') + 1, path.indexOf('=')) });
      }
    });

    it('delete_events=banana → 400 and nothing deleted; booleans read strictly everywhere', async () => {
      const t = await world.tenant();
      const p = await person(world, t.projectId, 'victim', {});
      const base = `/api/projects/${t.projectId}`;
      const banana = await request(world.app).delete(`${base}/persons/${p.id}/?delete_events=banana`).set(t.auth);
      expect(banana.status).toBe(400);
      expect(banana.body).toEqual({ type: 'validation_error', code: 'invalid', detail: 'Must be a valid boolean.', attr: 'delete_events' });
      expect((await request(world.app).get(`${base}/persons/${p.id}/`).set(t.auth)).status).toBe(200);
      const queued = await world.sql.query<{ n: number }>('t.q', 'SELECT count(*)::int AS n FROM async_deletions WHERE project_id = $1', [t.projectId]);
      expect(queued.rows[0]!.n).toBe(0);

      for (const [path, attr] of [
        ['persons/?include_total=banana', 'include_total'],
        ['session_recording_playlists/?pinned=yes', 'pinned'],
        ['session_recording_playlists/?user=banana', 'user'],
        ['insights/?saved=on', 'saved'],
        ['insights/?favorited=banana', 'favorited'],
        ['insights/?user=banana', 'user'],
        ['feature_flags/?active=banana', 'active'],
      ] as const) {
        const res = await request(world.app).get(`${base}/${path}`).set(t.auth);
        expect({ path, status: res.status, attr: res.body.attr as unknown }).toEqual({ path, status: 400, attr });
        const ok = await request(world.app)
          .get(`${base}/${path.replace(/=.*/, '=TRUE')}`)
          .set(t.auth);
        expect({ path, status: ok.status }).toEqual({ path, status: 200 });
      }
      expect((await request(world.app).delete(`${base}/persons/${p.id}/?delete_events=1`).set(t.auth)).status).toBe(204);
    });

    it('every CSV export neutralizes formulas in values and in column names', async () => {
      const f = await seedFixture(world);
      const base = `/api/projects/${f.projectId}`;
      const properties = Object.fromEntries(FORMULAS.map((payload, index) => [payload, `${FORMULAS[(index + 1) % FORMULAS.length]}`]));
      const p = await person(world, f.projectId, 'formulas', properties);
      await world.sql.query(
        't.group',
        `INSERT INTO groups (project_id, group_type_index, group_key, group_properties, created_at) VALUES ($1, 0, $2, $3, now())`,
        [f.projectId, FORMULAS[0], properties],
      );
      const name = (index: number) => FORMULAS[index % FORMULAS.length]!;
      const create = async (path: string, body: Record<string, unknown>) => {
        const res = await request(world.app).post(`${base}/${path}`).set(f.auth).send(body);
        expect({ path, status: res.status }).toEqual({ path, status: 201 });
        return res.body as { id: number; short_id?: string };
      };
      const playlist = await create('session_recording_playlists/', { name: name(0), description: name(1) });
      const insight = await create('insights/', { name: name(2), description: name(3), tags: FORMULAS });
      await create('feature_flags/', { key: 'formula-flag', name: name(4) });
      await create('cohorts/', { name: name(5), description: name(6) });
      await create('early_access_features/', { name: name(0), description: name(1), documentation_url: name(2) });
      await create('surveys/', { name: name(3), description: name(4) });

      const all = FORMULAS;
      for (const [path, payloads] of [
        ['persons/', all],
        [`persons/${p.id}/`, all],
        ['groups/?group_type_index=0', all],
        ['session_recording_playlists/', [name(0), name(1)]],
        [`session_recording_playlists/${playlist.short_id!}/`, [name(0), name(1)]],
        ['insights/', all],
        [`insights/${insight.id}/`, all],
        ['feature_flags/', [name(4)]],
        ['cohorts/', [name(5), name(6)]],
        ['early_access_features/', [name(0), name(1), name(2)]],
        ['surveys/', [name(3), name(4)]],
      ] as const) {
        const res = await request(world.app)
          .get(`${base}/${path}${path.includes('?') ? '&' : '?'}format=csv`)
          .set(f.auth);
        expectNeutralCsv(res, payloads);
      }
    });

    it('format=csv streams every matching person, newest first, past one batch; limit and offset cut it, with the truncation header', async () => {
      const t = await world.tenant();
      // Ties on created_at (to the microsecond) across batch boundaries: the keyset must order by id within them.
      await world.sql.query(
        't.persons',
        `INSERT INTO persons (project_id, uuid, properties, created_at)
         SELECT $1, gen_random_uuid(), jsonb_build_object('n', i, CASE WHEN i % 500 = 0 THEN 'rare_' || i ELSE 'common' END, true),
                timestamptz '2024-01-01 00:00:00.123456+00' + (i / 7) * interval '1 microsecond'
           FROM generate_series(1, 5700) i`,
        [t.projectId],
      );
      const base = `/api/projects/${t.projectId}/persons/`;
      const res = await request(world.app).get(`${base}?format=csv`).set(t.auth);
      expect(res.status).toBe(200);
      expect(res.headers[CSV_EXPORT_TRUNCATED_HEADER.toLowerCase()]).toBe('false');
      const [header, ...rows] = csvCells(res.text);
      // Columns seen only in rows of later batches (of 5,000 rows, newest first: rare_500) are in the header.
      expect(header).toEqual(expect.arrayContaining(['properties.n', 'properties.rare_500', 'properties.rare_5500']));
      expect(rows).toHaveLength(5700);
      const ids = rows.map((row) => Number(row[header!.indexOf('id')]));
      expect(new Set(ids).size).toBe(5700);
      const n = rows.map((row) => Number(row[header!.indexOf('properties.n')]));
      // Newest first: created_at falls with n / 7, then id (insertion order) descending.
      expect(n).toEqual([...n].sort((a, b) => Math.floor(b / 7) - Math.floor(a / 7) || b - a));

      const limited = await request(world.app).get(`${base}?format=csv&limit=5&offset=5697`).set(t.auth);
      expect(csvCells(limited.text).slice(1)).toHaveLength(3);
      expect(limited.headers[CSV_EXPORT_TRUNCATED_HEADER.toLowerCase()]).toBe('false');
      const cut = await request(world.app).get(`${base}?format=csv&limit=5`).set(t.auth);
      expect(csvCells(cut.text).slice(1)).toHaveLength(5);
      expect(cut.headers[CSV_EXPORT_TRUNCATED_HEADER.toLowerCase()]).toBe('true');
      // JSON still answers one page.
      expect((await request(world.app).get(base).set(t.auth)).body.results).toHaveLength(100);
    });
  });

  describe('lenient bodies', () => {
    let f: Fixture;
    beforeAll(async () => {
      f = await seedFixture(world);
    });
    const base = () => `/api/projects/${f.projectId}`;

    it.each([
      ['post', 'insights/timing/', { time_to_see_data_ms: 'fast' }, 'time_to_see_data_ms'],
      ['post', 'insights/timing/', { insight: 5 }, 'insight'],
      ['post', 'insights/timing/', { is_primary_interaction: 'yes' }, 'is_primary_interaction'],
      ['post', 'insights/timing/', { api_response_bytes: -1 }, 'api_response_bytes'],
      ['post', 'insights/', { dashboards: [999] }, 'dashboards'],
      ['post', 'feature_flags/', { key: 'lenient', active: 'yes' }, 'active'],
      ['post', 'feature_flags/', { key: 'lenient', filters: 'all' }, 'filters'],
      ['patch', 'feature_flags/{flag}/', { deleted: 'true' }, 'deleted'],
      ['post', 'cohorts/', { name: 'c', is_static: 'yes' }, 'is_static'],
      ['patch', 'cohorts/{cohort}/', { name: 5 }, 'name'],
      ['patch', 'cohorts/{cohort}/', { deleted: 'yes' }, 'deleted'],
      ['post', 'early_access_features/', { name: 'e', feature_flag_id: '1' }, 'feature_flag_id'],
      ['patch', 'early_access_features/{feature}/', { name: 5 }, 'name'],
      ['post', 'surveys/', { name: 's', questions: 'why?' }, 'questions'],
      ['patch', 'surveys/{survey}/', { archived: 'x' }, 'archived'],
      ['patch', 'surveys/{survey}/', { questions: [1] }, 'questions__0'],
    ] as const)('%s %s %j → 400 naming %s, nothing changed', async (method, path, body, attr) => {
      const url = `${base()}/${path.replace('{flag}', String(f.flagId)).replace('{cohort}', String(f.cohortId)).replace('{feature}', f.featureId).replace('{survey}', f.surveyId)}`;
      const before = await snapshot(world.sql);
      const res = await request(world.app)[method](url).set(f.auth).send(body);
      expect({ status: res.status, type: res.body.type as unknown, attr: res.body.attr as unknown }).toEqual({ status: 400, type: 'validation_error', attr });
      expect(await snapshot(world.sql)).toBe(before);
    });

    it('adding a recording with a body that is not an object → 400, nothing added', async () => {
      const before = await snapshot(world.sql);
      const res = await request(world.app).post(`${base()}/session_recording_playlists/${f.shortId}/recordings/s9/`).set(f.auth).send([1, 2]);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ type: 'validation_error', attr: null });
      expect(await snapshot(world.sql)).toBe(before);
    });

    it('a well-typed timing report is still stored as sent', async () => {
      const report = { session_id: 's', time_to_see_data_ms: 120, insight: 'TRENDS', is_primary_interaction: true, custom: { any: 1 } };
      const res = await request(world.app).post(`${base()}/insights/timing/`).set(f.auth).send(report);
      expect(res.status).toBe(200);
      const stored = await world.sql.query<{ payload: unknown }>('t.timing', 'SELECT payload FROM insight_timings WHERE project_id = $1', [f.projectId]);
      expect(stored.rows.map((row) => row.payload)).toEqual([report]);
    });
  });
});

describe('with chDB', () => {
  const clickhouse = recordings;
  const zero = '1970-01-01 00:00:00.000';
  const event = (teamId: number, overrides: Partial<EventRow>): EventRow => ({
    uuid: randomUUID(),
    event: '$pageview',
    properties: '{}',
    timestamp: '2024-03-01 12:00:00.000000',
    team_id: teamId,
    distinct_id: 'd',
    elements_chain: '',
    created_at: '2024-03-01 12:00:01.000000',
    person_id: randomUUID(),
    person_properties: '{}',
    person_created_at: zero,
    person_mode: 'full',
    ...NO_GROUPS,
    session_id: '',
    window_id: '',
    historical_migration: false,
    ...overrides,
  });

  describe.each(backends.map((backend, index) => ({ ...backend, index })))('on $name', (backend) => {
    const world = useWorld(backend, { clickhouse });
    // Both databases share one chDB: keep their project (team) ids apart (other suites use multiples of 100,000).
    beforeAll(() => world.sql.query('t.ids', `ALTER TABLE projects ALTER COLUMN id RESTART WITH ${(backend.index + 1) * 100_000 + 50_000}`));

    it('events format=csv: every matching event past one batch, microsecond ties kept apart; formulas neutralized', async () => {
      const t = await world.tenant();
      // Past one export batch (5,000 rows), the batch ending inside a run of ties.
      const rows = Array.from({ length: 5100 }, (_, i) =>
        event(t.projectId, {
          // Three events per microsecond: the keyset must page through ties by uuid.
          timestamp: `2024-03-01 12:00:00.${String(Math.floor(i / 3)).padStart(6, '0')}`,
          event: i === 0 ? FORMULAS[6]! : 'view',
          properties: JSON.stringify(i === 5099 ? Object.fromEntries(FORMULAS.map((payload) => [payload, payload])) : { n: i }),
        }),
      );
      await insertEvents(clickhouse(), rows);
      const base = `/api/projects/${t.projectId}/events/`;
      const res = await request(world.app).get(`${base}?format=csv`).set(t.auth);
      expectNeutralCsv(res);
      expect(res.headers[CSV_EXPORT_TRUNCATED_HEADER.toLowerCase()]).toBe('false');
      const [header, ...lines] = csvCells(res.text);
      expect(lines).toHaveLength(5100);
      expect(new Set(lines.map((line) => line[header!.indexOf('uuid')])).size).toBe(5100);
      expect((await request(world.app).get(`${base}?format=csv&event=view&limit=10`).set(t.auth)).headers[CSV_EXPORT_TRUNCATED_HEADER.toLowerCase()]).toBe(
        'true',
      );
    });

    it('trend CSV neutralizes series names and labels', async () => {
      const t = await world.tenant();
      await insertEvents(clickhouse(), [event(t.projectId, { timestamp: '2024-03-02 12:00:00.000000' })]);
      const query = new URLSearchParams({
        date_from: '2024-03-01',
        date_to: '2024-03-03',
        interval: 'day',
        events: JSON.stringify(FORMULAS.map((payload) => ({ id: '$pageview', custom_name: payload }))),
        format: 'csv',
      });
      expectNeutralCsv(await request(world.app).get(`/api/projects/${t.projectId}/insights/trend/?${query.toString()}`).set(t.auth));
    });
  });
});
