import { AuthFailureThrottle, hashPersonalApiKey, maskPersonalApiKey, newPersonalApiKey, PersonalKeyAuth, type Credentials } from '@plover/accounts';
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
    return authorizeDefinitionsRead(
      db.sql,
      new PersonalKeyAuth(db.sql),
      { authorization: `Bearer ${value}`, address: '192.0.2.1' },
      credentials.project.id,
    ).then(
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

  it('records the key as used, and throttles failures with the throttle it is given (shared with the management API when embedded)', async () => {
    const value = newPersonalApiKey();
    const inserted = await db.sql.query<{ id: string }>(
      't.key',
      `INSERT INTO personal_api_keys (user_id, label, secure_value, mask_value, scopes) VALUES ($1, 'used', $2, $3, '{feature_flag:read}') RETURNING id`,
      [credentials.user.id, hashPersonalApiKey(value), maskPersonalApiKey(value)],
    );
    const keys = new PersonalKeyAuth(db.sql, new AuthFailureThrottle(2));
    const check = (authorization: string) =>
      authorizeDefinitionsRead(db.sql, keys, { authorization, address: '192.0.2.7' }, credentials.project.id).then(
        () => 200,
        (error: { status: number }) => error.status,
      );
    expect(await check(`Bearer ${value}`)).toBe(200);
    const used = await db.sql.query<{ last_used_at: Date | null }>('t.used', 'SELECT last_used_at FROM personal_api_keys WHERE id = $1', [
      inserted.rows[0]!.id,
    ]);
    expect(used.rows[0]!.last_used_at).toBeInstanceOf(Date);
    expect([await check('Bearer phx_wrong'), await check('Bearer phx_wrong'), await check('Bearer phx_wrong')]).toEqual([401, 401, 429]);
    // A valid key still passes from the throttled address.
    expect(await check(`Bearer ${value}`)).toBe(200);
  });
});
