import { randomBytes } from 'node:crypto';
import { PgSql } from '@plover/postgres';

const PREFIX = 'plover_test_';

export interface TestDatabase {
  /** Connection string of the new, empty database. */
  url: string;
  drop(): Promise<void>;
}

/**
 * Creates an empty database `plover_test_<random>` next to the one `adminUrl` names, so each test file owns
 * its schema and files can run in parallel against one server.
 */
export async function createTestDatabase(adminUrl: string): Promise<TestDatabase> {
  const name = `${PREFIX}${randomBytes(6).toString('hex')}`;
  const admin = new PgSql({ connectionString: adminUrl, max: 1 });
  try {
    // Identifiers cannot be bound parameters; the name is generated above from hex digits only.
    await admin.exec('test.createDatabase', `CREATE DATABASE ${name}`);
  } catch (error) {
    await admin.close();
    throw error;
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      // DROP … WITH (FORCE) is unforgiving: tie it to the prefix even if the name's construction changes.
      if (!name.startsWith(PREFIX)) throw new Error(`refusing to drop ${name}: not a test database`);
      try {
        await admin.exec('test.dropDatabase', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await admin.close();
      }
    },
  };
}
