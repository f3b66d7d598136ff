import { hashPersonalApiKey, maskPersonalApiKey, newPersonalApiKey, type Credentials } from '@plover/accounts';
import { authorizeDefinitionsRead } from '../src/personal-key';
import { backends, setup, type Database } from './support/harness';

describe.each(backends)('local-evaluation personal keys on $name', (backend) => {
  let db: Database;
  let credentials: Credentials;
  let otherOrganization: string;

  beforeAll(async () => {
    db = await backend.open();
    credentials = await setup(db.sql);
    otherOrganization = (await db.sql.query<{ id: string }>('t.org', `INSERT INTO organizations (name) VALUES ('Other') RETURNING id`)).rows[0]!.id;
  });
  afterAll(() => db.close());

  /** The status authorizeDefinitionsRead answers for a `feature_flag:read` key with these limits (200: allowed). */
  async function statusFor(projects: number[] | null, organizations: string[] | null): Promise<number> {
    const value = newPersonalApiKey();
    await db.sql.query(
      't.key',
      `INSERT INTO personal_api_keys (user_id, label, secure_value, mask_value, scopes, scoped_projects, scoped_organizations)
       VALUES ($1, 'limited', $2, $3, '{feature_flag:read}', $4, $5)`,
      [credentials.user.id, hashPersonalApiKey(value), maskPersonalApiKey(value), projects, organizations],
    );
    return authorizeDefinitionsRead(db.sql, `Bearer ${value}`, credentials.project.id).then(
      () => 200,
      (error: { status: number }) => error.status,
    );
  }

  it('refuses a key limited to other projects or organizations; an empty limit list is no limit', async () => {
    expect(await statusFor(null, null)).toBe(200);
    expect(await statusFor([credentials.project.id], [credentials.organization.id])).toBe(200);
    expect(await statusFor([], [])).toBe(200);
    expect(await statusFor([credentials.project.id + 1000], null)).toBe(403);
    expect(await statusFor(null, [otherOrganization])).toBe(403);
    expect(await statusFor([credentials.project.id], [otherOrganization])).toBe(403);
  });
});
