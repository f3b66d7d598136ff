/**
 * The EventBus contract, run against every adapter in support/adapters.ts (LocalLogBus always, KafkaBus when
 * TEST_KAFKA_BROKERS is set). Topic and group names are unique per run: Kafka is shared across runs.
 * The kill -9 cases run a real child process (support/bus-child.ts) and SIGKILL it in the middle of its work.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { StorageError } from '@plover/core';
import type { Batch, BusMessage, ConsumeOptions, EventBus } from '@plover/bus';
import { busFactories, childEnvironment, uniqueName } from './support/adapters';
import type { BusFactory, BusHarness } from './support/adapters';
import { messageId, messageValue } from './support/messages';

const REPO_ROOT = path.resolve(__dirname, '../../..');
const CHILD_SCRIPT = path.join(__dirname, 'support', 'bus-child.ts');

/** Resolves once `condition` holds or `timeoutMs` has passed; the assertions that follow tell which. */
async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await sleep(20);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function messages(ids: readonly number[], keyOf: (id: number) => string = (id) => `key-${id % 7}`) {
  return ids.map((id) => ({ key: keyOf(id), value: messageValue(id) }));
}

function range(from: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => from + i);
}

function idsOf(received: readonly BusMessage[]): number[] {
  return received.map((message) => messageId(message.value));
}

/** Consumes with a handler that records every message and succeeds. */
async function collect(bus: EventBus, groupId: string, topic: string, options: Partial<ConsumeOptions> = {}) {
  const received: BusMessage[] = [];
  const consumer = await bus.consume({
    groupId,
    topics: [topic],
    handleBatch: (batch: Batch) => {
      received.push(...batch.messages);
      return Promise.resolve();
    },
    ...options,
  });
  return { consumer, received };
}

/** Runs bus-child.ts on the harness's storage; `kill` sends SIGKILL and waits until the process is gone. */
function startChild(factory: BusFactory, harness: BusHarness, args: string[]) {
  const child = spawn(process.execPath, ['--conditions=plover-source', '--import', 'tsx', CHILD_SCRIPT, ...args], {
    cwd: REPO_ROOT,
    env: childEnvironment(factory, harness),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  let closed = false;
  readline.createInterface({ input: child.stdout }).on('line', (line) => lines.push(line));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // 'close' comes after stdout has been read to the end, so `lines` holds everything the child printed.
  const done = new Promise<void>((resolve) =>
    child.on('close', () => {
      closed = true;
      resolve();
    }),
  );
  return {
    lines,
    async waitForLines(condition: (lines: string[]) => boolean, timeoutMs: number): Promise<void> {
      await waitFor(() => closed || condition(lines), timeoutMs);
      if (!condition(lines)) throw new Error(`child ${args.join(' ')} did not get there${closed ? ` (it exited: ${stderr})` : ''}`);
    },
    async kill(): Promise<void> {
      child.kill('SIGKILL');
      await done;
    },
  };
}

describe.each(busFactories())('EventBus contract: $name', (factory) => {
  const timeout = factory.deliveryTimeoutMs * 3;
  let harness: BusHarness;

  beforeEach(async () => {
    harness = await factory.open();
  });

  afterEach(async () => {
    await harness.cleanup();
  });

  async function newTopic(label: string): Promise<string> {
    const topic = uniqueName(label);
    await harness.bus.ensureTopics([topic]);
    return topic;
  }

  it(
    'delivers the messages of each key in the order they were produced',
    async () => {
      const topic = await newTopic('order');
      const keys = range(0, 20).map((i) => `user-${i}`);
      const perKey = 30;
      // Interleaved: every produce call mixes many keys, and each key is spread over many calls.
      const all = range(0, perKey).flatMap((seq) => keys.map((key) => ({ key, value: Buffer.from(`${key}:${seq}`) })));
      for (let start = 0; start < all.length; start += 45) await harness.bus.produce(topic, all.slice(start, start + 45));

      const { received } = await collect(harness.bus, uniqueName('group'), topic);
      await waitFor(() => received.length >= all.length, factory.deliveryTimeoutMs);

      expect(received).toHaveLength(all.length);
      for (const key of keys) {
        const mine = received.filter((message) => message.key === key);
        expect(mine.map((message) => Number(message.value.toString().split(':')[1]))).toEqual(range(0, perKey));
        expect(new Set(mine.map((message) => message.partition)).size).toBe(1);
      }
      for (const partition of new Set(received.map((message) => message.partition))) {
        const offsets = received.filter((message) => message.partition === partition).map((message) => BigInt(message.offset));
        expect(offsets).toEqual([...offsets].sort((a, b) => (a < b ? -1 : 1)));
      }
    },
    timeout,
  );

  it(
    'delivers key, value, headers and append time as produced',
    async () => {
      const topic = await newTopic('shape');
      const before = Date.now();
      const value = Buffer.from([0, 1, 2, 255, 254]);
      await harness.bus.produce(topic, [{ key: 'ключ:1', value, headers: { 'content-type': 'application/json', 'x-ü': 'ß' } }]);
      const { received } = await collect(harness.bus, uniqueName('group'), topic);
      await waitFor(() => received.length > 0, factory.deliveryTimeoutMs);

      expect(received).toEqual([expect.objectContaining({ topic, key: 'ключ:1', value, headers: { 'content-type': 'application/json', 'x-ü': 'ß' } })]);
      const [message] = received as [BusMessage];
      expect(message.offset).toMatch(/^\d+$/);
      expect(message.timestamp).toBeGreaterThanOrEqual(before - 1000);
      expect(message.timestamp).toBeLessThanOrEqual(Date.now() + 1000);
    },
    timeout,
  );

  it(
    'delivers batches of one partition and at most maxBatchSize messages',
    async () => {
      const topic = await newTopic('batches');
      await harness.bus.produce(topic, messages(range(0, 40)));
      const batches: Batch[] = [];
      await harness.bus.consume({
        groupId: uniqueName('group'),
        topics: [topic],
        maxBatchSize: 4,
        handleBatch: (batch) => {
          batches.push(batch);
          return Promise.resolve();
        },
      });
      await waitFor(() => batches.reduce((sum, batch) => sum + batch.messages.length, 0) >= 40, factory.deliveryTimeoutMs);

      expect(batches.flatMap((batch) => idsOf(batch.messages)).sort((a, b) => a - b)).toEqual(range(0, 40));
      for (const batch of batches) {
        expect(batch.messages.length).toBeGreaterThan(0);
        expect(batch.messages.length).toBeLessThanOrEqual(4);
        expect(batch.messages.every((message) => message.topic === batch.topic && message.partition === batch.partition)).toBe(true);
      }
    },
    timeout,
  );

  it(
    'gives every consumer group every message',
    async () => {
      const topic = await newTopic('groups');
      await harness.bus.produce(topic, messages(range(0, 50)));
      const first = await collect(harness.bus, uniqueName('group'), topic);
      const second = await collect(harness.bus, uniqueName('group'), topic);
      await waitFor(() => first.received.length >= 50 && second.received.length >= 50, factory.deliveryTimeoutMs);

      expect(idsOf(first.received).sort((a, b) => a - b)).toEqual(range(0, 50));
      expect(idsOf(second.received).sort((a, b) => a - b)).toEqual(range(0, 50));
    },
    timeout,
  );

  it(
    'redelivers a failed batch after retryBackoffMs, and commits it once it succeeds',
    async () => {
      const topic = await newTopic('retry');
      const groupId = uniqueName('group');
      await harness.bus.produce(
        topic,
        messages(range(0, 5), () => 'one-key'),
      );
      const attempts: Array<{ at: number; offsets: string[] }> = [];
      const handled = new Set<string>();
      const retryBackoffMs = 300;
      const consumer = await harness.bus.consume({
        groupId,
        topics: [topic],
        retryBackoffMs,
        handleBatch: (batch) => {
          attempts.push({ at: Date.now(), offsets: batch.messages.map((message) => message.offset) });
          if (attempts.length < 3) return Promise.reject(new Error('not yet'));
          for (const message of batch.messages) handled.add(message.offset);
          return Promise.resolve();
        },
      });
      await waitFor(() => handled.size >= 5, factory.deliveryTimeoutMs);
      await consumer.stop();

      expect(handled.size).toBe(5);
      const [first, second, third] = attempts as [(typeof attempts)[0], (typeof attempts)[0], (typeof attempts)[0]];
      // The same messages again, from the same offset (a redelivery may bring more behind them).
      expect(second.offsets.slice(0, first.offsets.length)).toEqual(first.offsets);
      expect(third.offsets.slice(0, first.offsets.length)).toEqual(first.offsets);
      expect(second.at - first.at).toBeGreaterThanOrEqual(retryBackoffMs - 20);
      expect(third.at - second.at).toBeGreaterThanOrEqual(retryBackoffMs - 20);

      // Committed: the next consumer of the group starts after them.
      const next = await collect(harness.bus, groupId, topic);
      await harness.bus.produce(
        topic,
        messages([5], () => 'one-key'),
      );
      await waitFor(() => next.received.length > 0, factory.deliveryTimeoutMs);
      await sleep(factory.quietMs);
      expect(idsOf(next.received)).toEqual([5]);
    },
    timeout,
  );

  it(
    'delivers a batch whose handler failed to the next consumer of the group: nothing was committed',
    async () => {
      const topic = await newTopic('uncommitted');
      const groupId = uniqueName('group');
      await harness.bus.produce(topic, messages(range(0, 10)));
      const failed: BusMessage[] = [];
      const failing = await harness.bus.consume({
        groupId,
        topics: [topic],
        retryBackoffMs: 50,
        handleBatch: (batch) => {
          failed.push(...batch.messages);
          return Promise.reject(new Error('handler failed'));
        },
      });
      await waitFor(() => failed.length > 0, factory.deliveryTimeoutMs);
      await failing.stop();
      expect(failed.length).toBeGreaterThan(0);

      const next = await collect(harness.bus, groupId, topic);
      await waitFor(() => next.received.length >= 10, factory.deliveryTimeoutMs);
      expect(idsOf(next.received).sort((a, b) => a - b)).toEqual(range(0, 10));
    },
    timeout,
  );

  it(
    'stops delivering while paused and catches up on resume',
    async () => {
      const topic = await newTopic('pause');
      const { consumer, received } = await collect(harness.bus, uniqueName('group'), topic);
      await harness.bus.produce(topic, messages(range(0, 3)));
      await waitFor(() => received.length >= 3, factory.deliveryTimeoutMs);
      expect(received).toHaveLength(3);

      consumer.pause();
      await harness.bus.produce(topic, messages(range(3, 3)));
      await sleep(factory.quietMs);
      expect(received).toHaveLength(3);

      consumer.resume();
      await waitFor(() => received.length >= 6, factory.deliveryTimeoutMs);
      expect(idsOf(received).sort((a, b) => a - b)).toEqual(range(0, 6));
    },
    timeout,
  );

  it(
    'resumes a group after its last commit when the bus is reopened',
    async () => {
      const topic = await newTopic('reopen');
      const groupId = uniqueName('group');
      await harness.bus.produce(topic, messages(range(0, 10)));
      const first = await collect(harness.bus, groupId, topic);
      await waitFor(() => first.received.length >= 10, factory.deliveryTimeoutMs);
      expect(first.received).toHaveLength(10);

      const bus = await harness.reopen();
      await bus.produce(topic, messages(range(10, 5)));
      const second = await collect(bus, groupId, topic);
      await waitFor(() => second.received.length >= 5, factory.deliveryTimeoutMs);
      await sleep(factory.quietMs);
      expect(idsOf(second.received).sort((a, b) => a - b)).toEqual(range(10, 5));
    },
    timeout,
  );

  it(
    'loses no acknowledged message when the producing process is killed with SIGKILL',
    async () => {
      const topic = await newTopic('kill-producer');
      await harness.bus.close();
      const child = startChild(factory, harness, ['produce', topic]);
      const ackedIds = () =>
        child.lines.flatMap((line) => {
          const [word, first, count] = line.split(' ');
          return word === 'acked' ? range(Number(first), Number(count)) : [];
        });
      await child.waitForLines(() => ackedIds().length >= 3000, factory.deliveryTimeoutMs);
      await child.kill();
      const acked = ackedIds();

      const bus = await harness.reopen();
      const { received } = await collect(bus, uniqueName('group'), topic);
      const missing = () => {
        const arrived = new Set(idsOf(received));
        return acked.filter((id) => !arrived.has(id));
      };
      await waitFor(() => received.length >= acked.length && missing().length === 0, factory.deliveryTimeoutMs);

      expect(missing()).toEqual([]);
      expect(received.length).toBeGreaterThanOrEqual(acked.length);
    },
    timeout,
  );

  it(
    'redelivers what a consumer killed with SIGKILL had handled but not committed',
    async () => {
      const topic = await newTopic('kill-consumer');
      const groupId = uniqueName('group');
      await harness.bus.produce(topic, messages(range(0, 40)));
      await harness.bus.close();
      const child = startChild(factory, harness, ['consume', topic, groupId]);
      await child.waitForLines((lines) => lines.some((line) => line.startsWith('handled ')), factory.deliveryTimeoutMs);
      await child.kill();
      const handled = (child.lines.find((line) => line.startsWith('handled ')) as string).split(' ').slice(1).map(Number);
      expect(handled.length).toBeGreaterThan(0);

      const bus = await harness.reopen();
      const { received } = await collect(bus, groupId, topic);
      await waitFor(() => received.length >= 40, factory.deliveryTimeoutMs);
      const ids = idsOf(received);
      expect([...new Set(ids)].sort((a, b) => a - b)).toEqual(range(0, 40));
      expect(handled.filter((id) => !ids.includes(id))).toEqual([]);
    },
    timeout,
  );

  it('answers ping while open, and rejects produce with a StorageError once closed', async () => {
    const topic = await newTopic('closed');
    await expect(harness.bus.ping()).resolves.toBeUndefined();
    await harness.bus.close();
    await expect(harness.bus.produce(topic, messages([0]))).rejects.toBeInstanceOf(StorageError);
  });
});
