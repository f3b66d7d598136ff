/**
 * The adapters every ClickHouse contract suite runs over (`describe.each(variants)`): chDB in-process;
 * HttpClickHouse through real HTTP against chDB (a test-only server speaking ClickHouse's HTTP interface); and
 * HttpClickHouse against a real server when TEST_CLICKHOUSE_URL is set. There is no ClickHouse server on the CI
 * machines, so that last variant is skipped when the variable is unset, even under CI (hence no realService()).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { HttpClickHouse, type ClickHouse } from '@plover/clickhouse';
import { ChdbClickHouse } from '@plover/chdb';
import { startChdbHttpServer } from './chdb-http-server';

export interface Target {
  ch: ClickHouse;
  /** For HTTP variants: a handle with other options against the same server. */
  connect?: (options?: { requestTimeoutMs?: number }) => ClickHouse;
  close(): Promise<void>;
}

export interface Variant {
  name: string;
  kind: 'chdb' | 'http';
  open(): Promise<Target>;
}

export async function tempDir(): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'plover-ch-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export const variants: Variant[] = [
  {
    name: 'ChdbClickHouse (in-process)',
    kind: 'chdb',
    async open() {
      const { dir, remove } = await tempDir();
      const ch = await ChdbClickHouse.open({ dataDir: dir });
      return {
        ch,
        async close() {
          await ch.close();
          await remove();
        },
      };
    },
  },
  {
    name: 'HttpClickHouse (HTTP to a chDB-backed test server)',
    kind: 'http',
    async open() {
      const { dir, remove } = await tempDir();
      const server = await startChdbHttpServer(dir);
      const ch = new HttpClickHouse({ url: server.url });
      return {
        ch,
        connect: (options) => new HttpClickHouse({ url: server.url, ...options }),
        async close() {
          await ch.close();
          await server.close();
          await remove();
        },
      };
    },
  },
];

const realUrl = process.env.TEST_CLICKHOUSE_URL;
if (realUrl) {
  variants.push({
    name: `HttpClickHouse (real server at TEST_CLICKHOUSE_URL)`,
    kind: 'http',
    async open() {
      // A database of its own per run, so runs neither see each other's rows nor the migrations of the last one.
      const database = `plover_test_${randomUUID().replace(/-/g, '')}`;
      const admin = new HttpClickHouse({ url: realUrl });
      await admin.command('test.createDatabase', `CREATE DATABASE ${database}`);
      const ch = new HttpClickHouse({ url: realUrl, database });
      return {
        ch,
        connect: (options) => new HttpClickHouse({ url: realUrl, database, ...options }),
        async close() {
          await ch.close();
          await admin.command('test.dropDatabase', `DROP DATABASE IF EXISTS ${database}`);
          await admin.close();
        },
      };
    },
  });
}
