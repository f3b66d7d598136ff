/**
 * A request answered 503 may still have left events on the bus: the partitions that took their share while another
 * failed, or a produce that landed after its request timed out. Capture makes the client's retry idempotent instead:
 * an event sent without a uuid gets one derived from the request, so the retry's copy has the uuid of what the first
 * try left, and ingestion stores it once (services/ingestion/test/consumer.test.ts, "redelivered and repeated
 * events"). These tests check the bus side: every copy carries its event's uuid, and distinct events distinct ones.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { ProjectTokenCache } from '@plover/accounts';
import { LocalLogBus } from '@plover/bus';
import { createApp } from '@plover/capture/app';
import { silentLogger } from '@plover/core';
import { createMetricsRegistry } from '@plover/http';
import { faultyFileSystem } from '../../../packages/bus/test/support/faulty-file-system';
import { NOW, openHarness, type Captured, type CaptureHarness } from './support/harness';

/** Eight events of eight people, without uuids: the people's keys spread over the bus's partitions. */
function batch(token: string): Record<string, unknown> {
  return { api_key: token, batch: Array.from({ length: 8 }, (_, i) => ({ event: 'clicked', distinct_id: `person-${i}`, properties: { i } })) };
}

/** Each event's uuids over every copy on the bus, by the event's `i`. */
function uuidsByEvent(messages: readonly Captured[]): Map<number, Set<string>> {
  const byEvent = new Map<number, Set<string>>();
  for (const { event } of messages) {
    const i = event.properties.i as number;
    byEvent.set(i, (byEvent.get(i) ?? new Set()).add(event.uuid));
  }
  return byEvent;
}

function expectOneUuidPerEvent(messages: readonly Captured[]): void {
  const byEvent = uuidsByEvent(messages);
  expect([...byEvent.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  for (const uuids of byEvent.values()) expect(uuids.size).toBe(1);
  expect(new Set(messages.map(({ event }) => event.uuid)).size).toBe(8);
}

describe('a retried request whose first try was answered 503', () => {
  let h: CaptureHarness | undefined;
  let dataDir: string | undefined;

  afterEach(async () => {
    await h?.close();
    h = undefined;
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    dataDir = undefined;
  });

  it('gives the events that one partition kept the uuids the retry gives them', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-capture-retry-'));
    let failing = false;
    // Partition 1 cannot create its file once (a full disk); partition 0 takes its events.
    const fileSystem = faultyFileSystem((call, file) =>
      failing && call === 'open' && /[/\\]1[/\\][^/\\]+\.log$/.test(file) ? ((failing = false), 'ENOSPC') : undefined,
    );
    const bus = await LocalLogBus.open({ dataDir, partitions: 2, fileSystem });
    h = await openHarness({ bus });
    await bus.ensureTopics([h.topics.events]);

    failing = true;
    expect((await request(h.app).post('/batch/').send(batch(h.token))).status).toBe(503);
    expect(failing).toBe(false);
    expect((await request(h.app).post('/batch/').send(batch(h.token))).status).toBe(200);

    const messages = await h.read(h.topics.events, 9, { quietMs: 500 });
    // The first try left the events of partition 0: each is on the bus twice, with one uuid.
    expect(messages.length).toBeGreaterThan(8);
    expect(messages.length).toBeLessThan(16);
    expectOneUuidPerEvent(messages);
  });

  it('gives the events of a produce that landed after its timeout the uuids the retry gives them', async () => {
    h = await openHarness({ capture: { produceTimeoutMs: 0 } });
    expect((await request(h.app).post('/batch/').send(batch(h.token))).status).toBe(503);
    // The same project and bus, with time to wait for the bus: the SDK's retry.
    const patient = createApp({
      logger: silentLogger(),
      metrics: createMetricsRegistry('capture-retry'),
      sql: h.sql,
      bus: h.bus,
      trustProxy: false,
      projectTokens: new ProjectTokenCache(h.sql),
      settings: { now: () => NOW + 5_000, topics: h.topics },
    });
    expect((await request(patient).post('/batch/').send(batch(h.token))).status).toBe(200);

    const messages = await h.read(h.topics.events, 16);
    expect(messages).toHaveLength(16);
    expectOneUuidPerEvent(messages);
  });

  it('gives a request with other content, or the same content in another project or topic, other uuids', async () => {
    h = await openHarness();
    const body = batch(h.token);
    const changed = { ...body, batch: (body.batch as object[]).map((event) => ({ ...event, event: 'tapped' })) };
    expect((await request(h.app).post('/batch/').send(body)).status).toBe(200);
    expect((await request(h.app).post('/batch/').send(changed)).status).toBe(200);
    expect(
      (
        await request(h.app)
          .post('/batch/')
          .send({ ...body, historical_migration: true })
      ).status,
    ).toBe(200);

    const live = await h.read(h.topics.events, 16);
    const historical = await h.read(h.topics.historical, 8);
    expect(new Set([...live, ...historical].map(({ event }) => event.uuid)).size).toBe(24);
  });
});
