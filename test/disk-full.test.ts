/**
 * Embedded Plover on a disk that fills up (a small tmpfs): below the watermark capture answers 503 and management
 * writes 507 at once, /_ready names the store and the cause, reads go on; once space returns everything is
 * accepted again without a restart, and every acknowledged event is stored once. A start below the watermark starts,
 * read-only, even with too little room for Postgres to write.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { startEmbedded, type EmbeddedPlover } from './support/embedded';
import { canMountTmpfs, mountTmpfs, type Tmpfs } from './support/tmpfs';

const MB = 1024 * 1024;
const WATERMARK_MB = 100;
/** Longer than the disk checks' interval (1 s). */
const NEXT_CHECK_MS = 1500;
jest.setTimeout(150_000);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

(canMountTmpfs() ? describe : describe.skip)('embedded Plover on a full disk', () => {
  let disk: Tmpfs;
  let plover: EmbeddedPlover | undefined;
  const env = { PLOVER_DISK_MIN_FREE_MB: String(WATERMARK_MB) };

  beforeAll(() => {
    disk = mountTmpfs(320);
  });
  afterAll(async () => {
    await plover?.kill('SIGKILL');
    disk.unmount();
  });

  const url = (pathname: string) => `http://127.0.0.1:${plover!.port}${pathname}`;
  const acknowledged: string[] = [];
  const capture = async (count: number) => {
    const batch = Array.from({ length: count }, () => ({ event: 'disk test', distinct_id: `user-${acknowledged.length % 7}`, uuid: randomUUID() }));
    const response = await fetch(url('/batch/'), { method: 'POST', body: JSON.stringify({ api_key: plover!.credentials.token, batch }) });
    if (response.status === 200) acknowledged.push(...batch.map((event) => event.uuid));
    return response.status;
  };
  const api = (pathname: string, init: RequestInit = {}) =>
    fetch(url(`/api/projects/${plover!.credentials.projectId}${pathname}`), {
      ...init,
      headers: { authorization: `Bearer ${plover!.credentials.personalKey}`, 'content-type': 'application/json' },
    });
  const createFlag = (key: string) =>
    api('/feature_flags/', { method: 'POST', body: JSON.stringify({ key, filters: { groups: [{ rollout_percentage: 100 }] } }) });
  const ready = async () => {
    const response = await fetch(url('/_ready'));
    return { status: response.status, body: (await response.json()) as { checks: Record<string, string> } };
  };

  it('refuses new writes below the watermark, fast and named, and takes them again once space returns', async () => {
    plover = await startEmbedded(env, path.join(disk.dir, 'data'));
    expect(await capture(50)).toBe(200);
    expect((await createFlag('before')).status).toBe(201);

    disk.fill((WATERMARK_MB - 40) * MB);
    await pause(NEXT_CHECK_MS);
    const started = Date.now();
    expect(await capture(50)).toBe(503);
    const refused = await createFlag('while-low');
    expect(refused.status).toBe(507);
    expect(await refused.json()).toMatchObject({ type: 'server_error', code: 'insufficient_storage', detail: expect.stringContaining('watermark') });
    expect(Date.now() - started).toBeLessThan(1000);
    const low = await ready();
    expect(low.status).toBe(503);
    expect(low.body.checks.disk).toMatch(/^low disk space: postgres has .* free in .*, below the 105 MB watermark \(PLOVER_DISK_MIN_FREE_MB\)/);
    // Reads go on: the management API and flags.
    expect((await api('/feature_flags/')).status).toBe(200);
    const flags = await fetch(url('/flags/?v=2'), { method: 'POST', body: JSON.stringify({ token: plover.credentials.token, distinct_id: 'reader' }) });
    expect(flags.status).toBe(200);

    disk.release();
    await pause(NEXT_CHECK_MS);
    expect(await capture(50)).toBe(200);
    expect((await createFlag('after')).status).toBe(201);
    expect((await ready()).status).toBe(200);

    // Every acknowledged event stored once; none of the refused batch.
    let stored: string[] = [];
    for (let i = 0; i < 100 && stored.length < acknowledged.length; i++) {
      await pause(200);
      const page = (await (await api('/events/?event=disk%20test&limit=1000')).json()) as { results: { uuid?: string; id?: string }[] };
      stored = page.results.map((event) => event.uuid ?? event.id!);
    }
    expect([...stored].sort()).toEqual([...acknowledged].sort());
  });

  it('starts read-only on a disk too full for Postgres to write, says why, serves reads, and takes writes once space returns', async () => {
    await plover!.kill('SIGTERM');
    // Below the room Postgres keeps for its WAL (48 MiB) and the 32 MiB it needs to start fresh: the store is
    // opened read-only, and the migrations, already applied, are only read.
    disk.fill(4 * MB);
    plover = await startEmbedded(env, path.join(disk.dir, 'data'));
    expect(plover.output()).toMatch(
      /low disk space: postgres has [\d.]+ MB free .*"msg":"disk space below the watermark: new events and management writes are refused"/,
    );
    const low = await ready();
    expect(low.status).toBe(503);
    expect(low.body.checks.disk).toMatch(/^low disk space: postgres has [\d.]+ MB free in .*, below the 105 MB watermark/);
    expect((await api('/feature_flags/')).status).toBe(200);
    const flags = await fetch(url('/flags/?v=2'), { method: 'POST', body: JSON.stringify({ token: plover.credentials.token, distinct_id: 'reader' }) });
    expect(flags.status).toBe(200);
    expect(await capture(10)).toBe(503);
    expect((await createFlag('while-starting-low')).status).toBe(507);

    disk.release();
    await pause(NEXT_CHECK_MS);
    expect(await capture(10)).toBe(200);
    expect((await createFlag('after-a-low-start')).status).toBe(201);
    expect((await ready()).status).toBe(200);
  });

  it('refuses to start on a disk with no room for its lock file, saying the disk is full', async () => {
    await plover!.kill('SIGTERM');
    disk.fill(0);
    const failed = await startEmbedded(env, path.join(disk.dir, 'data')).then(
      () => 'started',
      (error: unknown) => String(error),
    );
    expect(failed).toMatch(/exited with 1:[\s\S]*the disk holding \S+ is full \(0 B free\), too full even for the data dir.s lock file/);
    disk.release();
  });
});
