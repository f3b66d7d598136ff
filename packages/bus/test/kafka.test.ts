/**
 * What KafkaBus promises beyond the shared bus contract (test/bus.contract.test.ts): Java-compatible key
 * partitioning, idempotent acks=-1 producing, error classification, and group membership surviving long
 * batches.
 * The broker-backed half needs TEST_KAFKA_BROKERS (scripts/kafka.sh start; then 127.0.0.1:9092).
 */
import { createServer } from 'node:net';
import { randomUUID } from 'node:crypto';
import {
  Kafka,
  KafkaJSConnectionError,
  KafkaJSNonRetriableError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
  KafkaJSTimeout,
  logLevel,
} from 'kafkajs';
import { StorageError, silentLogger } from '@plover/core';
import { KafkaBus, toStorageError } from '@plover/bus/kafka';
import type { BusMessage, Consumer } from '../src/port';
import { describeWith, realService } from '../../../test/support/services';
import { deleteTopics } from './support/kafka-factory';

const kafka = realService('TEST_KAFKA_BROKERS');
const runId = `${Date.now()}-${randomUUID().slice(0, 8)}`;
let sequence = 0;
const unique = (kind: string) => `plover-kafka-test-${runId}-${kind}-${++sequence}`;
/** Topics of this run, deleted at the end: the broker is shared and would otherwise collect them. */
const topics: string[] = [];
const uniqueTopic = (kind: string) => {
  const topic = unique(kind);
  topics.push(topic);
  return topic;
};

/** A port nothing listens on: bound by us a moment ago, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('toStorageError', () => {
  it('classifies retries exhausted on a connection failure as retriable, by the inner error class', () => {
    const error = toStorageError(
      'produce failed',
      new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED'), {
        retryCount: 5,
        retryTime: 1000,
      }),
    );
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ retriable: true, code: 'KafkaJSConnectionError' });
    expect(error.cause).toBeInstanceOf(KafkaJSNumberOfRetriesExceeded);
  });

  it('uses the Kafka protocol error type as the code and its retriable flag', () => {
    const notEnoughReplicas = new KafkaJSProtocolError({ type: 'NOT_ENOUGH_REPLICAS', code: 19, retriable: true, message: 'x' } as unknown as Error);
    expect(toStorageError('x', notEnoughReplicas)).toMatchObject({ retriable: true, code: 'NOT_ENOUGH_REPLICAS' });
    const tooLarge = new KafkaJSProtocolError({ type: 'MESSAGE_TOO_LARGE', code: 10, retriable: false, message: 'x' } as unknown as Error);
    const NonRetriable = KafkaJSNonRetriableError as unknown as new (error: Error, options: { cause: Error }) => KafkaJSNonRetriableError;
    expect(toStorageError('x', new NonRetriable(tooLarge, { cause: tooLarge }))).toMatchObject({
      retriable: false,
      code: 'MESSAGE_TOO_LARGE',
    });
  });

  it('treats kafkajs timeouts as retriable and foreign errors as permanent', () => {
    // kafkajs's typings leave out the message its constructors take.
    const Timeout = KafkaJSTimeout as unknown as new (message: string) => KafkaJSTimeout;
    expect(toStorageError('x', new Timeout('Timed out while waiting for topic leaders'))).toMatchObject({ retriable: true, code: 'KafkaJSTimeout' });
    expect(toStorageError('x', new TypeError('bad argument'))).toMatchObject({ retriable: false, code: undefined });
  });
});

describe('KafkaBus with an unreachable broker', () => {
  let bus: KafkaBus;

  beforeAll(async () => {
    bus = new KafkaBus({
      brokers: [`127.0.0.1:${await closedPort()}`],
      clientId: 'plover-kafka-test',
      logger: silentLogger(),
      requestTimeoutMs: 1000,
      retry: { retries: 1, initialRetryTimeMs: 50 },
    });
  });

  afterAll(() => bus.close());

  it('rejects produce, ping, ensureTopics and consume with retriable StorageErrors', async () => {
    const expected = { name: 'StorageError', retriable: true, code: 'KafkaJSConnectionError' };
    await expect(bus.produce('events', [{ key: 'k', value: Buffer.from('v') }])).rejects.toMatchObject(expected);
    // A second produce after the failure gets a new producer session, and fails the same way.
    await expect(bus.produce('events', [{ key: 'k', value: Buffer.from('v') }])).rejects.toMatchObject(expected);
    await expect(bus.ping()).rejects.toMatchObject(expected);
    await expect(bus.ensureTopics(['events'])).rejects.toMatchObject(expected);
    await expect(bus.consume({ groupId: 'g', topics: ['events'], handleBatch: () => Promise.resolve() })).rejects.toMatchObject(expected);
  });

  it('refuses a maxBatchSize that is not a positive integer before touching the network', async () => {
    await expect(bus.consume({ groupId: 'g', topics: ['events'], maxBatchSize: 0, handleBatch: () => Promise.resolve() })).rejects.toMatchObject({
      name: 'StorageError',
      retriable: false,
      code: 'INVALID_ARGUMENT',
    });
  });
});

describeWith(kafka)('KafkaBus against a broker', () => {
  const brokers = (kafka.url ?? '').split(',');
  let bus: KafkaBus;
  const consumers: Consumer[] = [];

  beforeAll(() => {
    bus = new KafkaBus({ brokers, clientId: 'plover-kafka-test', logger: silentLogger(), partitions: 4 });
  });

  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
  });

  afterAll(async () => {
    await bus.close();
    await deleteTopics(kafka.url ?? '', topics);
  });

  it('puts every message of one key into the partition the Java client would choose', async () => {
    const topic = uniqueTopic('keys');
    await bus.ensureTopics([topic]);
    // Utils.toPositive(Utils.murmur2(key.getBytes(UTF_8))) % 4, computed with kafka-clients 3.9.1.
    const javaPartition: Record<string, number> = { '2:alice': 0, '1:alice': 1, '5:ivan': 2, '1:bob': 3 };
    const keys = Object.keys(javaPartition);
    for (let round = 0; round < 10; round += 1) {
      await bus.produce(
        topic,
        keys.flatMap((key) => [0, 1, 2].map((n) => ({ key, value: Buffer.from(`${round * 3 + n}`) }))),
      );
    }

    const received: BusMessage[] = [];
    consumers.push(
      await bus.consume({
        groupId: unique('group'),
        topics: [topic],
        handleBatch: (batch) => {
          received.push(...batch.messages);
          return Promise.resolve();
        },
      }),
    );
    await until(() => received.length === keys.length * 30, 30_000, 'all messages');

    for (const key of keys) {
      const mine = received.filter((message) => message.key === key);
      expect(new Set(mine.map((message) => message.partition))).toEqual(new Set([javaPartition[key]]));
      // One partition keeps the order of production.
      expect(mine.map((message) => Number(message.value.toString()))).toEqual([...Array(30).keys()]);
    }
  });

  it('splits one call bigger than a broker request and keeps its order', async () => {
    const topic = uniqueTopic('large');
    await bus.ensureTopics([topic]);
    // 3 MiB for one key, i.e. one partition: as one record batch the broker would refuse it (1 MiB limit).
    const value = Buffer.alloc(1024, 'x');
    await bus.produce(
      topic,
      [...Array(3072).keys()].map((n) => ({ key: 'one-key', value: Buffer.concat([Buffer.from(`${n}:`), value]) })),
    );
    const received: number[] = [];
    consumers.push(
      await bus.consume({
        groupId: unique('group'),
        topics: [topic],
        handleBatch: (batch) => {
          received.push(...batch.messages.map((message) => Number(message.value.toString().split(':')[0])));
          return Promise.resolve();
        },
      }),
    );
    await until(() => received.length === 3072, 30_000, 'all messages');
    expect(received).toEqual([...Array(3072).keys()]);
  });

  it('takes a record of 8.5 MiB on a topic it created (an LLM analytics event), above the broker default of 1 MiB', async () => {
    const topic = uniqueTopic('ai');
    await bus.ensureTopics([topic]);
    const value = Buffer.alloc(8.5 * 1024 * 1024, 'a');
    await bus.produce(topic, [{ key: 'llm', value }]);
    const received: BusMessage[] = [];
    consumers.push(
      await bus.consume({
        groupId: unique('group'),
        topics: [topic],
        handleBatch: (batch) => {
          received.push(...batch.messages);
          return Promise.resolve();
        },
      }),
    );
    await until(() => received.length === 1, 30_000, 'the large record');
    expect(received[0]!.value.equals(value)).toBe(true);
  });

  it('acknowledges every one of many concurrent calls, each only once its messages are stored', async () => {
    const topic = uniqueTopic('concurrent');
    await bus.ensureTopics([topic]);
    await Promise.all(
      [...Array(64).keys()].map((caller) =>
        bus.produce(
          topic,
          [...Array(10).keys()].map((n) => ({ key: `caller-${caller}`, value: Buffer.from(`${caller}:${n}`) })),
        ),
      ),
    );
    const offsets = new Kafka({ clientId: 'plover-kafka-test-raw', brokers, logLevel: logLevel.NOTHING }).admin();
    await offsets.connect();
    try {
      const high = await offsets.fetchTopicOffsets(topic);
      // Every call resolved, so all 640 messages are on the broker already (no consumer needed to see them).
      expect(high.reduce((sum, partition) => sum + Number(partition.high), 0)).toBe(640);
    } finally {
      await offsets.disconnect();
    }
  });

  it('hands what one fetch returned to handleBatch in slices of at most maxBatchSize', async () => {
    const topic = uniqueTopic('slices');
    await bus.ensureTopics([topic]);
    // Produced before the consumer starts, so that its first fetch returns all of them at once.
    await bus.produce(
      topic,
      [...Array(25).keys()].map((n) => ({ key: 'one-key', value: Buffer.from(`${n}`) })),
    );
    const batches: number[][] = [];
    consumers.push(
      await bus.consume({
        groupId: unique('group'),
        topics: [topic],
        maxBatchSize: 10,
        handleBatch: (batch) => {
          batches.push(batch.messages.map((message) => Number(message.value.toString())));
          return Promise.resolve();
        },
      }),
    );
    await until(() => batches.flat().length === 25, 30_000, 'all messages');
    expect(Math.max(...batches.map((batch) => batch.length))).toBe(10);
    expect(batches.flat()).toEqual([...Array(25).keys()]);
  });

  it('with lingerMs, lets the broker gather a trickle into a few fetches instead of one per message', async () => {
    const topic = uniqueTopic('linger');
    await bus.ensureTopics([topic]);
    const trickle = async (lingerMs: number) => {
      const batches: string[][] = [];
      consumers.push(
        await bus.consume({
          groupId: unique('group'),
          topics: [topic],
          lingerMs,
          handleBatch: (batch) => {
            batches.push(batch.messages.map((message) => message.value.toString()));
            return Promise.resolve();
          },
        }),
      );
      // Once a first message came through, the consumer is fetching: the trickle below meets its fetches.
      await bus.produce(topic, [{ key: 'one-key', value: Buffer.from(`ready-${lingerMs}`) }]);
      await until(() => batches.flat().includes(`ready-${lingerMs}`), 30_000, 'the consumer fetching');
      batches.length = 0;
      for (let n = 0; n < 10; n++) {
        await bus.produce(topic, [{ key: 'one-key', value: Buffer.from(`${lingerMs}-${n}`) }]);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await until(() => batches.flat().filter((value) => value.startsWith(`${lingerMs}-`)).length === 10, 30_000, 'the trickle');
      await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
      return batches.filter((batch) => batch.some((value) => value.startsWith(`${lingerMs}-`))).length;
    };
    // Without a linger each fetch returns with the first message there; with one the broker holds it.
    expect(await trickle(0)).toBeGreaterThanOrEqual(6);
    expect(await trickle(2000)).toBeLessThanOrEqual(3);
  });

  it('produces idempotently, and replaces its producer after a failed send', async () => {
    const topic = uniqueTopic('idempotent');
    const raw = new Kafka({ clientId: 'plover-kafka-test-raw', brokers, logLevel: logLevel.NOTHING });
    const admin = raw.admin();
    await admin.connect();
    try {
      await admin.createTopics({
        topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '2048' }] }],
        waitForLeaders: true,
      });
    } finally {
      await admin.disconnect();
    }

    await bus.produce(topic, [{ key: 'k', value: Buffer.from('before') }]);
    const tooLarge = bus.produce(topic, [{ key: 'k', value: Buffer.alloc(4096) }]);
    await expect(tooLarge).rejects.toBeInstanceOf(StorageError);
    await expect(tooLarge).rejects.toMatchObject({ retriable: false, code: 'MESSAGE_TOO_LARGE' });
    await bus.produce(topic, [{ key: 'k', value: Buffer.from('after') }]);

    // The record batches say which producer wrote them; BusMessage does not, so read them with kafkajs.
    const producerIds = new Map<string, string>();
    const reader = raw.consumer({ groupId: unique('group'), maxWaitTimeInMs: 500 });
    await reader.connect();
    await reader.subscribe({ topics: [topic], fromBeginning: true });
    await reader.run({
      eachMessage: ({ message }) => {
        const { batchContext } = message as unknown as { batchContext: { producerId: string } };
        producerIds.set(message.value?.toString() ?? '', batchContext.producerId);
        return Promise.resolve();
      },
    });
    try {
      await until(() => producerIds.size === 2, 15_000, 'both messages');
    } finally {
      await reader.disconnect();
    }
    // A producer id means an idempotent producer, which kafkajs only lets send with acks=-1.
    expect(Number(producerIds.get('before'))).toBeGreaterThanOrEqual(0);
    // A new producer id: the failed session's sequence numbers can never shadow later messages.
    expect(producerIds.get('after')).not.toEqual(producerIds.get('before'));
  });

  it('keeps its partitions through a batch longer than the session timeout', async () => {
    const topic = uniqueTopic('slow');
    await bus.ensureTopics([topic]);
    await bus.produce(topic, [{ key: 'k', value: Buffer.from('slow') }]);
    const groupId = unique('group');
    const deliveries: string[] = [];
    const first = await bus.consume({
      groupId,
      topics: [topic],
      handleBatch: async (batch) => {
        deliveries.push(...batch.messages.map((message) => message.value.toString()));
        // Past the 10 s session timeout: without heartbeats during the batch the broker would evict the
        // member, the commit would fail and the message would come again.
        await new Promise((resolve) => setTimeout(resolve, 12_000));
      },
    });
    await until(() => deliveries.length === 1, 15_000, 'the slow delivery');
    await first.stop();

    // The offset was committed: a new member of the group starts after the slow message.
    await bus.produce(topic, [{ key: 'k', value: Buffer.from('next') }]);
    consumers.push(
      await bus.consume({
        groupId,
        topics: [topic],
        handleBatch: (batch) => {
          deliveries.push(...batch.messages.map((message) => message.value.toString()));
          return Promise.resolve();
        },
      }),
    );
    await until(() => deliveries.length >= 2, 15_000, 'the next message');
    expect(deliveries).toEqual(['slow', 'next']);
  }, 60_000);

  it('creates the topics that services starting together ask for at once, none of them failing', async () => {
    // As distributed mode starts: captures ask for the capture topics, consumers for theirs, which overlap. The
    // broker answers some of these requests as if a topic created a moment before did not exist.
    const [events, historical, recordings, deadLetters, recordingDeadLetters] = ['events', 'historical', 'recordings', 'dlq', 'recordings-dlq'].map(
      uniqueTopic,
    );
    const capture = [events!, historical!, recordings!];
    const ingestion = [events!, historical!, deadLetters!];
    const replay = [recordings!, recordingDeadLetters!];
    const buses = Array.from({ length: 5 }, () => new KafkaBus({ brokers, clientId: 'plover-kafka-test', logger: silentLogger(), partitions: 12 }));
    try {
      const results = await Promise.allSettled(
        buses.map((service, index) => (index < 2 ? service.ensureTopics(capture) : service.ensureTopics(ingestion).then(() => service.ensureTopics(replay)))),
      );
      expect(results.filter((result) => result.status === 'rejected')).toEqual([]);
      const admin = new Kafka({ clientId: 'plover-kafka-test-raw', brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        const { topics: found } = await admin.fetchTopicMetadata({ topics: [...new Set([...capture, ...ingestion, ...replay])] });
        expect(found.map((topic) => topic.partitions.length)).toEqual([12, 12, 12, 12, 12]);
      } finally {
        await admin.disconnect();
      }
    } finally {
      await Promise.all(buses.map((service) => service.close()));
    }
  });

  it('with a topic prefix, names topics and groups on the broker with it and hands batches without it', async () => {
    const prefix = `${unique('prefix')}.`;
    const prefixed = new KafkaBus({ brokers, clientId: 'plover-kafka-test', logger: silentLogger(), partitions: 3, topicPrefix: prefix });
    topics.push(`${prefix}events`);
    const groupId = 'ingestion';
    const received: { topic: string; value: string }[] = [];
    try {
      await prefixed.ensureTopics(['events']);
      await prefixed.produce('events', [{ key: 'k', value: Buffer.from('one') }]);
      consumers.push(
        await prefixed.consume({
          groupId,
          topics: ['events'],
          handleBatch: (batch) => {
            received.push(...batch.messages.map((message) => ({ topic: message.topic, value: message.value.toString() })));
            expect(batch.topic).toBe('events');
            return Promise.resolve();
          },
        }),
      );
      await until(() => received.length === 1, 30_000, 'the message');
      expect(received).toEqual([{ topic: 'events', value: 'one' }]);

      const admin = new Kafka({ clientId: 'plover-kafka-test-raw', brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        const [metadata] = (await admin.fetchTopicMetadata({ topics: [`${prefix}events`] })).topics;
        expect(metadata?.partitions).toHaveLength(3);
        // The group committed its offset under the prefixed name.
        const committed = await admin.fetchOffsets({ groupId: `${prefix}${groupId}`, topics: [`${prefix}events`] });
        expect(committed[0]?.partitions.reduce((sum, partition) => sum + Math.max(0, Number(partition.offset)), 0)).toBe(1);
      } finally {
        await admin.disconnect();
      }
    } finally {
      await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
      await prefixed.close();
    }
  });

  it('reports itself reachable', async () => {
    await expect(bus.ping()).resolves.toBeUndefined();
  });
});
