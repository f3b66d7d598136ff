import request from 'supertest';
import { backends, useWorld } from './support/app';
import { ownProjectIds, useChdb } from './support/recordings';
import { label, ROUTES, seedFixture, snapshot, urlOf, type Fixture, type Route } from './support/routes';

/**
 * JSON bodies only: every route that reads a body answers a non-JSON content type with PostHog's 415
 * and changes nothing, even when the payload would have been valid. The same body sent as JSON is the
 * control: it is accepted and does change the database, so the "nothing changed" check can fail.
 */

// Opening and migrating PGlite alone takes 30-60 s on a loaded 2-core machine (the hooks' default limit is 60 s).
jest.setTimeout(180_000);

type Body = Record<string, unknown>;

const form = (body: Body): string =>
  new URLSearchParams(
    Object.entries(body).map(([key, value]): [string, string] => [key, typeof value === 'string' ? value : JSON.stringify(value)]),
  ).toString();

/** Content type sent, the media type the error names, and the payload in that encoding. */
const ENCODINGS: Array<[string, string, (body: Body) => string]> = [
  // What fetch and sendBeacon send for a string body.
  ['text/plain;charset=UTF-8', 'text/plain', (body) => JSON.stringify(body)],
  ['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded', form],
  [
    'multipart/form-data; boundary=x',
    'multipart/form-data',
    (body) => `--x\r\nContent-Disposition: form-data; name="data"\r\n\r\n${JSON.stringify(body)}\r\n--x--\r\n`,
  ],
];

const BODY_ROUTES = ROUTES.filter((route): route is Route & { body: Body } => route.body !== undefined);

describe('route table', () => {
  it('lists a body for every POST, PATCH and PUT that reads one', () => {
    // The body-less writes: POST persons (405 with a hint), token rotation, adding a recording by path.
    const bodyless = ROUTES.filter((r) => r.method !== 'get' && r.method !== 'delete' && !r.body).map(label);
    expect(bodyless.sort()).toEqual(
      [
        'POST /api/projects/{project}/persons/',
        'PATCH /api/projects/{project}/reset_token/',
        'POST /api/projects/{project}/reset_token/',
        'POST /api/projects/{project}/session_recording_playlists/{playlist}/recordings/s2/',
      ].sort(),
    );
  });
});

const recordings = useChdb();

describe.each(backends.map((backend, index) => ({ ...backend, index })))('media types on $name', (backend) => {
  const world = useWorld(backend, { clickhouse: recordings });
  beforeAll(() => ownProjectIds(world.sql, backend.index));

  describe.each(BODY_ROUTES.map((route) => [label(route), route] as const))('%s', (_name, route) => {
    // One fixture per route: the refused requests must leave it as it is, and the control comes last.
    let f: Fixture;
    beforeAll(async () => {
      f = await seedFixture(world);
    });

    it.each(ENCODINGS)('as %s → 415 unsupported_media_type, nothing changed', async (contentType, mediaType, encode) => {
      const before = await snapshot(world.sql);
      const res = await request(world.app)[route.method](urlOf(route, f)).set(f.auth).set('Content-Type', contentType).send(encode(route.body));
      expect({ status: res.status, body: res.body as unknown }).toEqual({
        status: 415,
        body: { type: 'invalid_request', code: 'unsupported_media_type', detail: `Unsupported media type "${mediaType}" in request.`, attr: null },
      });
      expect(await snapshot(world.sql)).toBe(before);
    });

    it(`as application/json → ${route.status} and the database changes (control)`, async () => {
      const before = await snapshot(world.sql);
      const res = await request(world.app)[route.method](urlOf(route, f)).set(f.auth).set('Content-Type', 'application/json').send(JSON.stringify(route.body));
      expect({ status: res.status, body: res.body as unknown }).toEqual({ status: route.status, body: expect.anything() as unknown });
      expect(await snapshot(world.sql)).not.toBe(before);
    });
  });
});
