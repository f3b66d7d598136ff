/**
 * Distributed mode's ClickHouse server runs the release that embedded mode's chDB embeds, so the SQL that the
 * tests prove on chDB is the SQL a server runs: every `clickhouse/clickhouse-server:<tag>` image named in
 * docker-compose.yml or under deploy/ has chDB's major.minor.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ChdbClickHouse } from '@plover/chdb';
import { tempDir } from '../packages/clickhouse/test/support/variants';

const ROOT = path.resolve(__dirname, '..');
const IMAGE = /clickhouse\/clickhouse-server:([\w.-]+)/g;

/** docker-compose.yml and every YAML file under deploy/ (the Kubernetes manifests among them). */
function manifests(): string[] {
  const deploy = readdirSync(path.join(ROOT, 'deploy'), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.ya?ml$/.test(file))
    .map((file) => path.join('deploy', file));
  return ['docker-compose.yml', ...deploy];
}

describe('the ClickHouse server image', () => {
  let chdbRelease: string;

  beforeAll(async () => {
    const { dir, remove } = await tempDir();
    const ch = await ChdbClickHouse.open({ dataDir: dir });
    try {
      const [row] = await ch.query<{ version: string }>('test.version', 'SELECT version() AS version');
      chdbRelease = /^\d+\.\d+/.exec(row!.version)![0];
    } finally {
      await ch.close();
      await remove();
    }
  });

  it('is pinned in docker-compose.yml and under deploy/ to the release chDB embeds', () => {
    const images = manifests().flatMap((file) =>
      // `26.7`, `26.7.2.1` and `26.7-alpine` are that release; `latest` or another one is not.
      [...readFileSync(path.join(ROOT, file), 'utf8').matchAll(IMAGE)].map(([, tag]) => ({ file, release: /^\d+\.\d+/.exec(tag!)?.[0] })),
    );
    expect(images.filter(({ file }) => file === 'docker-compose.yml')).toHaveLength(1);
    expect(images).toEqual(images.map(({ file }) => ({ file, release: chdbRelease })));
  });
});
