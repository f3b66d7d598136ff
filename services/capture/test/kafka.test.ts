/**
 * Capture against a real Kafka broker: what is accepted is readable from the topic with the right key and
 * fields; a rejected request adds nothing; a broker that goes away turns 200s into 503s until it is back.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { KafkaBus } from '@plover/bus/kafka';
import { silentLogger } from '@plover/core';
import { deleteTopics } from '../../../packages/bus/test/support/kafka-factory';
import { describeWith, realService } from '../../../test/support/services';
import { openHarness, readTopic, type CaptureHarness } from './support/harness';

const kafka = realService('TEST_KAFKA_BROKERS');
const ROOT = path.resolve(__dirname, '../../..');

function kafkaBus(brokers: string, options: { requestTimeoutMs?: number; retries?: number } = {}): KafkaBus {
  return new KafkaBus({
    brokers: brokers.split(','),
    clientId: 'plover-capture-test',
    logger: silentLogger(),
    requestTimeoutMs: options.requestTimeoutMs,
    retry: options.retries === undefined ? undefined : { retries: options.retries, initialRetryTimeMs: 100 },
  });
}

describeWith(kafka)('capture on Kafka', () => {
  let h: CaptureHarness;

  beforeAll(async () => {
    const bus = kafkaBus(kafka.url!);
    h = await openHarness({ bus });
    await bus.ensureTopics([h.topics.events, h.topics.historical]);
  });

  afterAll(async () => {
    await h.close();
    await deleteTopics(kafka.url!, [h.topics.events, h.topics.historical]);
  });

  it('puts accepted events on the topic, keyed team_id:distinct_id; rejected requests add nothing', async () => {
    const rejected = await request(h.app)
      .post('/batch/')
      .send({ api_key: h.token, batch: [{ event: 'never', distinct_id: 'x' }, { event: 'never' }] });
    expect(rejected.status).toBe(400);
    const accepted = await request(h.app)
      .post('/batch/')
      .send({
        api_key: h.token,
        batch: [
          { event: 'a', distinct_id: 'user-1', properties: { '$feature/beta': true } },
          { event: 'b', distinct_id: 2, timestamp: '2025-06-01T11:00:00Z' },
        ],
      });
    expect(accepted.status).toBe(200);
    const historical = await request(h.app)
      .post('/batch/')
      .send({ api_key: h.token, historical_migration: true, batch: [{ event: 'old', distinct_id: 'user-1', timestamp: '2021-01-01T00:00:00Z' }] });
    expect(historical.status).toBe(200);

    const live = await h.read(h.topics.events, 2, { quietMs: 2_000, timeoutMs: 60_000 });
    expect(live.map((c) => [c.key, c.event.event, c.event.distinct_id]).sort()).toEqual([
      [`${h.projectId}:2`, 'b', '2'],
      [`${h.projectId}:user-1`, 'a', 'user-1'],
    ]);
    expect(live.find((c) => c.event.event === 'a')!.event.properties['$feature/beta']).toBe(true);
    expect(live.find((c) => c.event.event === 'b')!.event.timestamp).toBe('2025-06-01T11:00:00.000Z');
    const old = await h.read(h.topics.historical, 1, { quietMs: 1_000, timeoutMs: 60_000 });
    expect(old.map((c) => [c.event.event, c.message.historical])).toEqual([['old', true]]);
  });
});

/**
 * A broker of our own (scripts/kafka.sh on other ports and a temporary data dir), because stopping the shared
 * one on 9092 would break every other suite running on the machine.
 */
describeWith(kafka)('capture when the Kafka broker stops and comes back', () => {
  const port = 19092 + Math.floor(Math.random() * 500) * 2;
  const brokers = `127.0.0.1:${port}`;
  let dataDir: string;
  let h: CaptureHarness;

  const kafkaSh = async (command: 'start' | 'stop') => {
    await promisify(execFile)('bash', [path.join(ROOT, 'scripts/kafka.sh'), command], {
      env: { ...process.env, KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(port + 1), KAFKA_DATA_DIR: dataDir, KAFKA_STOP_TIMEOUT: '30' },
    });
  };
  const send = (event: string) =>
    request(h.app)
      .post('/batch/')
      .send({ api_key: h.token, batch: [{ event, distinct_id: 'fault' }] });

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-capture-kafka-'));
    await kafkaSh('start');
    // Fail fast while the broker is away: the request answers 503 after the produce timeout either way.
    const bus = kafkaBus(brokers, { requestTimeoutMs: 3_000, retries: 2 });
    h = await openHarness({ bus, capture: { produceTimeoutMs: 3_000 } });
    await bus.ensureTopics([h.topics.events]);
  }, 180_000);

  afterAll(async () => {
    await h?.close();
    await kafkaSh('stop').catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  }, 120_000);

  it('answers 503 (never 200) while the broker is down, and 200 again once it is back', async () => {
    expect((await send('before')).status).toBe(200);
    await kafkaSh('stop');
    const down = await send('while-down');
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ code: 'service_unavailable' });

    await kafkaSh('start');
    // The producer reconnects on its own; the client's retry (here: ours) gets through.
    let status = 0;
    const deadline = Date.now() + 60_000;
    while (status !== 200 && Date.now() < deadline) {
      status = (await send('after')).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(status).toBe(200);

    const reader = kafkaBus(brokers);
    try {
      const events = (await readTopic(reader, h.topics.events, 2, { quietMs: 2_000, timeoutMs: 60_000 })).map((c) => c.event.event);
      // Every 200 is there. A produce that timed out may still have landed (the SDK's retry then dedupes by uuid).
      expect(events).toEqual(expect.arrayContaining(['before', 'after']));
    } finally {
      await reader.close();
    }
  }, 240_000);
});
