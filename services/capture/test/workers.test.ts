/**
 * Distributed capture with CAPTURE_WORKERS=2 (services/capture/src/main.ts on real Postgres and Kafka): events
 * sent to both workers are on the topic, `/metrics` counts them all, and a project's event rate limit holds
 * for the whole service.
 */
import { randomBytes } from 'node:crypto';
import { bootstrap, type Credentials } from '@plover/accounts';
import { KafkaBus } from '@plover/bus/kafka';
import { CAPTURE_TOPICS, REPLAY_TOPIC } from '@plover/contracts';
import { silentLogger } from '@plover/core';
import { deleteTopics } from '../../../packages/bus/test/support/kafka-factory';
import { openMigratedPostgres, type MigratedDatabase } from '../../../packages/postgres/test/support/backends';
import { requestOnNewConnection, sampleValue } from '../../../test/support/cluster';
import { startService, type RunningService } from '../../../test/support/processes';
import { describeWith, realService } from '../../../test/support/services';
import { readTopic } from './support/harness';

const postgres = realService('TEST_DATABASE_URL');
const kafka = realService('TEST_KAFKA_BROKERS');
const RATE_BURST = 30;

describeWith({ url: postgres.url && kafka.url })('capture with CAPTURE_WORKERS=2 on Kafka', () => {
  const topicPrefix = `plover-capture-workers-${randomBytes(4).toString('hex')}-`;
  let database: MigratedDatabase & { url: string };
  let credentials: Credentials;
  /** A second project, for the rate limit, so that the other tests' events do not spend its bucket. */
  let limitedToken: string;
  let service: RunningService;
  let url: string;

  beforeAll(async () => {
    database = await openMigratedPostgres(postgres.url!, 2);
    credentials = (await bootstrap(database.sql, { adminEmail: 'admin@example.com', projectName: 'Workers', timezone: 'UTC' }))!;
    limitedToken = `phc_limited_${randomBytes(8).toString('hex')}`;
    await database.sql.query('test.project', `INSERT INTO projects (organization_id, name, api_token) VALUES ($1, 'Limited', $2)`, [
      credentials.organization.id,
      limitedToken,
    ]);
    service = await startService('capture', {
      DATABASE_URL: database.url,
      KAFKA_BROKERS: kafka.url!,
      KAFKA_TOPIC_PREFIX: topicPrefix,
      PORT: '0',
      HOST: '127.0.0.1',
      CAPTURE_WORKERS: '2',
      // The lowest rate there is, so that the burst is what a test run can spend.
      CAPTURE_RATE_LIMIT_EVENTS_PER_SECOND: '1',
      CAPTURE_RATE_LIMIT_BURST: String(RATE_BURST),
    });
    url = `http://127.0.0.1:${service.port}`;
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await database?.close();
    await deleteTopics(
      kafka.url!,
      [...Object.values(CAPTURE_TOPICS), REPLAY_TOPIC].map((topic) => topicPrefix + topic),
    );
  });

  const capture = (token: string, distinctId: string) =>
    requestOnNewConnection(`${url}/i/v0/e/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ api_key: token, event: 'worker test', distinct_id: distinctId }),
    });

  it('puts the events that either worker accepted on the topic, and /metrics counts them all', async () => {
    const sent = 20;
    for (let i = 0; i < sent; i++) expect(await capture(credentials.project.api_token, `user-${i}`)).toEqual({ status: 200, body: '{"status":1}' });

    const reader = new KafkaBus({ brokers: kafka.url!.split(','), clientId: 'plover-capture-workers-test', logger: silentLogger(), topicPrefix });
    try {
      const captured = await readTopic(reader, CAPTURE_TOPICS.events, sent, { quietMs: 2_000, timeoutMs: 60_000 });
      expect(captured.map((message) => message.event.distinct_id).sort()).toEqual(Array.from({ length: sent }, (_, i) => `user-${i}`).sort());
    } finally {
      await reader.close();
    }
    const metrics = (await requestOnNewConnection(`${url}/metrics`)).body;
    expect(sampleValue(metrics, 'plover_capture_events_total{topic="events",service="capture"}')).toBe(sent);
  }, 120_000);

  it(`holds a project to a burst of ${RATE_BURST} events across both workers, not ${RATE_BURST} per worker`, async () => {
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < RATE_BURST * 3; i++) statuses.push((await capture(limitedToken, `limited-${i}`)).status);
    const refilled = Math.ceil((Date.now() - started) / 1000);
    const accepted = statuses.filter((status) => status === 200).length;
    expect(statuses.filter((status) => status !== 200 && status !== 429)).toEqual([]);
    expect(accepted).toBeGreaterThanOrEqual(RATE_BURST);
    // One event per second of the run refills the bucket; per-worker buckets would have accepted twice the burst.
    expect(accepted).toBeLessThanOrEqual(RATE_BURST + refilled);
  }, 120_000);
});
