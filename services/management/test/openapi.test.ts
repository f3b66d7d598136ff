import request from 'supertest';
import { openApiDocument } from '../src/openapi';
import { declaredTable } from './support/table';
import { PersonalApiKeyCreate } from '../src/accounts/schemas';
import { PersonPatch } from '../src/persons/schemas';
import { componentName, validateBody, type JsonSchema } from '../src/shared/schema';
import { backends, useWorld } from './support/app';

describe('OpenAPI', () => {
  it('publishes the same body schemas the handlers validate with', () => {
    const doc = openApiDocument(declaredTable()) as {
      openapi: string;
      components: { schemas: Record<string, unknown> };
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { $ref: string } }> } }>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    const table = declaredTable();
    const bodies = [...table.api, ...table.project].flatMap((route) => (route.body ? [route.body as JsonSchema] : []));
    expect(bodies.length).toBeGreaterThan(10);
    for (const schema of bodies) expect(doc.components.schemas[componentName(schema)!]).toEqual(JSON.parse(JSON.stringify(schema)));
    const refs = Object.values(doc.paths)
      .flatMap((methods) => Object.values(methods))
      .flatMap((op) => (op.requestBody ? [op.requestBody.content['application/json']!.schema.$ref] : []));
    for (const r of refs) expect(Object.keys(doc.components.schemas)).toContain(r.split('/').pop());
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/api/environments/{project_id}/persons/', '/api/projects/{project_id}/session_recording_playlists/{short_id}/']),
    );
  });

  it('validation errors: first error, nested attr joined by __', () => {
    expect(() => validateBody(PersonalApiKeyCreate, { label: 'x', scopes: ['*'], scoped_teams: [1, 'a'] })).toThrow(
      expect.objectContaining({ attr: 'scoped_teams__1', code: 'invalid' }) as Error,
    );
    expect(() => validateBody(PersonPatch, {})).toThrow(
      expect.objectContaining({ attr: 'properties', code: 'required', detail: 'This field is required.' }) as Error,
    );
  });
});

describe.each(backends)('GET /api/schema on $name', (backend) => {
  const world = useWorld(backend);
  it('is served without authentication', async () => {
    const res = await request(world.app).get('/api/schema/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/openapi\+json/);
    expect((JSON.parse(res.text) as { openapi: string }).openapi).toBe('3.1.0');
  });
});
