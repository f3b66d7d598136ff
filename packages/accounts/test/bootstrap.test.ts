import { bootstrap, hashPersonalApiKey, maskPersonalApiKey } from '@plover/accounts';
import { migrate, PgSql, type Sql } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';
import { describeWith, realService } from '../../../test/support/services';
import { createTestDatabase } from '../../postgres/test/support/database';

const options = { adminEmail: 'owner@example.com', projectName: 'Shop', timezone: 'Europe/Berlin' };

async function expectBootstrapContract(open: () => Promise<Sql>): Promise<void> {
  const sql = await open();
  try {
    await migrate(sql);
    const credentials = await bootstrap(sql, options);
    expect(credentials).toBeDefined();
    expect(credentials!.project).toMatchObject({ name: 'Shop', timezone: 'Europe/Berlin' });
    expect(credentials!.project.api_token).toMatch(/^phc_[0-9A-Za-z]{43}$/);
    expect(credentials!.user.email).toBe('owner@example.com');

    // Only the hash and the mask of the personal key are stored.
    const stored = await sql.query<{ secure_value: string; mask_value: string; scopes: string[] }>(
      'test.key',
      'SELECT secure_value, mask_value, scopes FROM personal_api_keys',
    );
    expect(stored.rows).toEqual([
      {
        secure_value: hashPersonalApiKey(credentials!.personal_api_key.value),
        mask_value: maskPersonalApiKey(credentials!.personal_api_key.value),
        scopes: ['*'],
      },
    ]);

    expect(await bootstrap(sql, options)).toBeUndefined();
    const counts = await sql.query<{ organizations: number; projects: number; users: number }>(
      'test.counts',
      'SELECT (SELECT count(*)::int FROM organizations) AS organizations, (SELECT count(*)::int FROM projects) AS projects, (SELECT count(*)::int FROM users) AS users',
    );
    expect(counts.rows[0]).toEqual({ organizations: 1, projects: 1, users: 1 });
  } finally {
    await sql.close();
  }
}

describe('personal API keys', () => {
  it('hash as sha256$<hex> and mask to first and last four characters', () => {
    // sha256("phx_abc") from coreutils' sha256sum.
    expect(hashPersonalApiKey('phx_abc')).toBe('sha256$5e26f9f4aa7f98042e671fbaa15196a12513a2635898590230de0c25e658279e');
    expect(maskPersonalApiKey('phx_0123456789abcdefXYZW')).toBe('phx_...XYZW');
    expect(maskPersonalApiKey('phx_short')).toBe('********');
  });
});

describe('bootstrap on PGlite', () => {
  it('creates the first organization, project, admin and keys once', () => expectBootstrapContract(() => PGliteSql.open({})));
});

const postgres = realService('TEST_DATABASE_URL');
describeWith(postgres)('bootstrap on Postgres', () => {
  it('creates them once even when two processes bootstrap at the same time', async () => {
    const database = await createTestDatabase(postgres.url!);
    try {
      await expectBootstrapContract(() => Promise.resolve(new PgSql({ connectionString: database.url })));
      const a = new PgSql({ connectionString: database.url });
      const b = new PgSql({ connectionString: database.url });
      await a.query('test.reset', 'TRUNCATE organizations, users, projects CASCADE');
      const results = await Promise.all([bootstrap(a, options), bootstrap(b, options)]);
      expect(results.filter((r) => r !== undefined)).toHaveLength(1);
      await Promise.all([a.close(), b.close()]);
    } finally {
      await database.drop();
    }
  });
});
