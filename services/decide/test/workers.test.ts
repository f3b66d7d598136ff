/**
 * Distributed decide with DECIDE_WORKERS=2 (services/decide/src/main.ts on real Postgres): the rate limit and the
 * quota hold for the whole service, `/metrics` sums every worker, a killed worker is replaced while the port keeps
 * answering, and SIGTERM lets a request in flight finish.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import type { Credentials } from '@plover/accounts';
import { childPids, requestOnNewConnection, sampleValue, waitUntil, type Answer } from '../../../test/support/cluster';
import { run, startService, type RunningService } from '../../../test/support/processes';
import { describeWith } from '../../../test/support/services';
import { openMigratedPostgres, type MigratedDatabase } from '../../../packages/postgres/test/support/backends';
import { postgres, setup } from './support/harness';

const RATE_BURST = 20;
const QUOTA = 5;

describeWith(postgres)('decide with DECIDE_WORKERS=2', () => {
  let database: MigratedDatabase & { url: string };
  let credentials: Credentials;
  let service: RunningService;
  let url: string;

  beforeAll(async () => {
    database = await openMigratedPostgres(postgres.url!, 2);
    credentials = await setup(database.sql);
    service = await startService('decide', {
      DATABASE_URL: database.url,
      PORT: '0',
      HOST: '127.0.0.1',
      DECIDE_WORKERS: '2',
      DECIDE_GEOIP: 'false',
      // The lowest rate there is, so that the burst is what a test run can spend.
      DECIDE_RATE_LIMIT_PER_SECOND: '1',
      DECIDE_RATE_LIMIT_BURST: String(RATE_BURST),
      DECIDE_FLAG_QUOTA_MONTHLY: String(QUOTA),
    });
    url = `http://127.0.0.1:${service.port}`;
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await database?.close();
  });

  const flags = (token: string, distinctId: string): Promise<Answer> =>
    requestOnNewConnection(`${url}/flags/?v=2`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, distinct_id: distinctId }),
    });
  const health = async () => JSON.parse((await requestOnNewConnection(`${url}/_health`)).body) as { workers: { listening: number; restarts: number } };

  it('reports the workers on /_health and the primary among the /_ready checks', async () => {
    expect(JSON.parse((await requestOnNewConnection(`${url}/_health`)).body)).toEqual({
      status: 'ok',
      workers: { configured: 2, listening: 2, restarts: 0, stopping: false },
    });
    const ready = await requestOnNewConnection(`${url}/_ready`);
    expect({ status: ready.status, body: JSON.parse(ready.body) as unknown }).toEqual({
      status: 200,
      body: { status: 'ok', checks: { postgres: 'ok', workers: 'ok' } },
    });
  });

  it(`enforces a burst of ${RATE_BURST} requests per token across both workers, not ${RATE_BURST} per worker`, async () => {
    // An unknown token: the rate limit comes first (429), what it lets through is refused as unknown (401).
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < RATE_BURST * 3; i++) statuses.push((await flags('phc_rate_limited', `u${i}`)).status);
    const refilled = Math.ceil((Date.now() - started) / 1000);
    const admitted = statuses.filter((status) => status === 401).length;
    expect(statuses.filter((status) => status !== 401 && status !== 429)).toEqual([]);
    expect(admitted).toBeGreaterThanOrEqual(RATE_BURST);
    // One per second of the run refills the bucket; per-worker buckets would have admitted twice the burst.
    expect(admitted).toBeLessThanOrEqual(RATE_BURST + refilled);
  });

  it(`counts the monthly quota of ${QUOTA} flag requests once for the whole service`, async () => {
    const limited: boolean[] = [];
    for (let i = 0; i < QUOTA * 3; i++) {
      const answer = await flags(credentials.project.api_token, `quota-${i}`);
      expect(answer.status).toBe(200);
      limited.push((JSON.parse(answer.body) as { quotaLimited?: string[] }).quotaLimited !== undefined);
    }
    expect(limited).toEqual([...Array<boolean>(QUOTA).fill(false), ...Array<boolean>(QUOTA * 2).fill(true)]);
  });

  it('answers /metrics with the sum over every worker, gauges aggregated by their own rule', async () => {
    const sample = 'plover_decide_requests_total{endpoint="flags",service="decide"}';
    const before = sampleValue((await requestOnNewConnection(`${url}/metrics`)).body, sample) ?? 0;
    const sent = 16;
    for (let i = 0; i < sent; i++) await flags('phc_metrics', `m${i}`);
    const metrics = (await requestOnNewConnection(`${url}/metrics`)).body;
    expect(sampleValue(metrics, sample)).toBe(before + sent);
    expect(sampleValue(metrics, 'plover_workers_listening{service="decide"}')).toBe(2);
    // The file-descriptor limit is each process's (the same for all), not their sum.
    const maxFds = Number(/^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${service.pid}/limits`, 'utf8'))![1]);
    expect(sampleValue(metrics, 'process_max_fds{service="decide"}')).toBe(maxFds);
  });

  it('replaces a worker killed with SIGKILL while the port keeps answering', async () => {
    const [victim] = childPids(service.pid!);
    process.kill(victim!, 'SIGKILL');
    // A connection the primary handed to the worker as it died is lost with it (node's round robin): the
    // promise starts once the primary has seen the exit.
    await waitUntil(() => service.output().includes('"msg":"worker exited; starting another"'), 30_000, 'the primary noticing the exit');
    let answered = 0;
    await waitUntil(
      async () => {
        const status = await health();
        answered++;
        return status.workers.listening === 2;
      },
      60_000,
      'the replacement worker listening',
    );
    expect(answered).toBeGreaterThan(0);
    expect((await flags(credentials.project.api_token, 'after-crash')).status).toBe(200);
    expect((await health()).workers).toEqual({ configured: 2, listening: 2, restarts: 1, stopping: false });
    expect(childPids(service.pid!)).not.toContain(victim);
  }, 90_000);

  it('exits 1 when its workers cannot listen (the port is taken), as one process would', async () => {
    const second = await run('services/decide/src/main.ts', [], {
      DATABASE_URL: database.url,
      PORT: String(service.port),
      HOST: '127.0.0.1',
      DECIDE_WORKERS: '2',
      DECIDE_GEOIP: 'false',
    });
    expect(second.code).toBe(1);
    expect(second.output).toContain('EADDRINUSE');
    expect(second.output).toContain('"msg":"a worker failed to start"');
  }, 90_000);

  it('drains on SIGTERM: a request in flight is answered, new connections are refused, and the process exits 0', async () => {
    const body = JSON.stringify({ token: credentials.project.api_token, distinct_id: 'in-flight' });
    const socket = net.connect(service.port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`POST /flags/?v=2 HTTP/1.1\r\nHost: decide\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
    // The request has reached a worker (its headers are parsed) before the signal.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const stopped = service.stop();
    await waitUntil(() => (service.output().match(/"msg":"worker draining"/g) ?? []).length === 2, 30_000, 'both workers draining');
    await expect(requestOnNewConnection(`${url}/_health`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    socket.write(body.slice(10));
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(answer).toContain('"flags"');
    expect(await stopped).toBe(0);
  });
});
