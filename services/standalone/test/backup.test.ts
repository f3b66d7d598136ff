import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChdbClickHouse } from '@plover/chdb';
import { startEmbedded, type EmbeddedPlover } from '../../../test/support/embedded';

const ROOT = path.resolve(__dirname, '../../..');
const EVENTS = 60;

/** Runs `npm run <command> -- <dir>` as the README says, on PLOVER_DATA_DIR=dataDir. */
async function cli(command: 'backup' | 'restore', dataDir: string, dir: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--conditions=plover-source', '--import', 'tsx', 'services/standalone/src/cli.ts', command, dir], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PLOVER_DATA_DIR: dataDir },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { code, output };
}

async function metric(plover: EmbeddedPlover, outcome: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${plover.port}/metrics`)).text();
  const values = [...text.matchAll(new RegExp(`^plover_ingestion_messages_total\\{[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`, 'gm'))];
  return values.reduce((sum, match) => sum + Number(match[1]), 0);
}

async function waitForIngested(plover: EmbeddedPlover, count: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while ((await metric(plover, 'ingested')) < count) {
    if (Date.now() > deadline) throw new Error(`${count} events were not ingested in time`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function capture(plover: EmbeddedPlover, batch: unknown[]): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${plover.port}/batch/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ api_key: plover.credentials.token, batch }),
  });
  expect(response.status).toBe(200);
}

async function persons(plover: EmbeddedPlover): Promise<unknown[]> {
  const response = await fetch(`http://127.0.0.1:${plover.port}/api/projects/${plover.credentials.projectId}/persons/?limit=100`, {
    headers: { Authorization: `Bearer ${plover.credentials.personalKey}` },
  });
  expect(response.status).toBe(200);
  const { results } = (await response.json()) as { results: Array<{ distinct_ids: string[] }> };
  return results.sort((a, b) => (a.distinct_ids[0] ?? '').localeCompare(b.distinct_ids[0] ?? ''));
}

/** SIGTERM without removing the data dir (EmbeddedPlover.stop removes it). */
async function terminate(plover: EmbeddedPlover): Promise<void> {
  process.kill(plover.pid, 'SIGTERM');
  expect(await plover.exited).toBe(0);
}

async function storedEvents(dataDir: string): Promise<unknown[]> {
  const clickhouse = await ChdbClickHouse.open({ dataDir: path.join(dataDir, 'clickhouse') });
  try {
    return await clickhouse.query(
      'test.events',
      'SELECT toString(uuid) AS uuid, event, distinct_id, properties, toString(person_id) AS person_id FROM events FINAL ORDER BY uuid',
    );
  } finally {
    await clickhouse.close();
  }
}

describe('npm run backup / npm run restore (embedded data dir)', () => {
  const dirs: string[] = [];
  const tempDir = (label: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `plover-${label}-`));
    dirs.push(dir);
    return dir;
  };

  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('restores a populated data dir elsewhere; it starts with the same persons, events, keys and consumer offsets', async () => {
    const original = tempDir('original');
    let plover = await startEmbedded({}, original);
    let personsBefore: unknown[];
    try {
      await capture(
        plover,
        Array.from({ length: EVENTS }, (_, i) => ({ event: 'clicked', distinct_id: `user-${i % 6}`, properties: { $set: { n: i, [`seen_${i}`]: true } } })),
      );
      await waitForIngested(plover, EVENTS);
      personsBefore = await persons(plover);
      expect(personsBefore).toHaveLength(6);
    } finally {
      await terminate(plover);
    }
    const eventsBefore = await storedEvents(original);
    expect(eventsBefore).toHaveLength(EVENTS);

    const backup = path.join(tempDir('backup'), 'nested', 'backup');
    const backedUp = await cli('backup', original, backup);
    expect(backedUp).toEqual({ code: 0, output: expect.stringContaining('"backedUp"') });
    expect(fs.readdirSync(backup).sort()).toEqual(['bus', 'clickhouse', 'credentials.json', 'manifest.json', 'postgres.tar']);

    // A backup is restored into an empty data dir only.
    expect(await cli('restore', original, backup)).toEqual({ code: 1, output: expect.stringContaining('is not empty') });
    const restored = path.join(tempDir('restored'), 'data');
    expect(await cli('restore', restored, backup)).toEqual({ code: 0, output: expect.stringContaining('"restored"') });

    plover = await startEmbedded({}, restored);
    try {
      expect(plover.output()).not.toContain('Plover is set up');
      expect(plover.credentials.token).toBe(JSON.parse(fs.readFileSync(path.join(original, 'credentials.json'), 'utf8')).project.api_token);
      expect(await persons(plover)).toEqual(personsBefore);
      // The consumer resumes at the restored offsets: only the new event is handled, none of the old ones again.
      await capture(plover, [{ event: 'after-restore', distinct_id: 'user-0' }]);
      await waitForIngested(plover, 1);
      expect({ ingested: await metric(plover, 'ingested'), alreadyStored: await metric(plover, 'already_stored') }).toEqual({ ingested: 1, alreadyStored: 0 });
    } finally {
      await terminate(plover);
    }
    const eventsAfter = await storedEvents(restored);
    expect(eventsAfter.filter((row) => (row as { event: string }).event !== 'after-restore')).toEqual(eventsBefore);
    expect(eventsAfter).toHaveLength(EVENTS + 1);
  }, 300_000);
});
