/**
 * What LocalLogBus promises beyond the shared contract (bus.contract.test.ts): recovery from torn writes,
 * segment retention, group commit, and its own limits.
 */
import { appendFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalLogBus, repairLocalLog } from '@plover/bus';
import type { BusMessage, LocalLogBusOptions } from '@plover/bus';
import { COMMIT_INTERVAL_MS } from '../src/local-log/offsets';
import { encodeFrames } from '../src/local-log/record';
import { messageId, messageValue } from './support/messages';

const TOPIC = 'events';
const FIRST_SEGMENT = '00000000000000000000.log';

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('LocalLogBus', () => {
  let dataDir: string;
  let buses: LocalLogBus[];

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-local-log-'));
    buses = [];
  });

  afterEach(async () => {
    await Promise.all(buses.map((bus) => bus.close()));
    await rm(dataDir, { recursive: true, force: true });
  });

  async function open(options: Partial<LocalLogBusOptions> = {}): Promise<LocalLogBus> {
    const bus = await LocalLogBus.open({ dataDir, ...options });
    buses.push(bus);
    return bus;
  }

  async function consumeAll(bus: LocalLogBus, groupId: string, count: number): Promise<BusMessage[]> {
    const received: BusMessage[] = [];
    const consumer = await bus.consume({
      groupId,
      topics: [TOPIC],
      handleBatch: (batch) => {
        received.push(...batch.messages);
        return Promise.resolve();
      },
    });
    await waitFor(() => received.length >= count);
    await consumer.stop();
    return received;
  }

  function produceIds(bus: LocalLogBus, ids: number[]): Promise<void> {
    return bus.produce(
      TOPIC,
      ids.map((id) => ({ key: 'k', value: messageValue(id) })),
    );
  }

  const partitionDir = (partition = 0) => path.join(dataDir, TOPIC, String(partition));
  const segmentFiles = async () => (await readdir(partitionDir())).filter((name) => name.endsWith('.log')).sort();

  /** What a crash in the middle of a write can leave behind the last whole record. */
  const tails: Array<[string, () => Buffer]> = [
    ['the first half of a record', () => encodeFrames([{ key: 'k', value: messageValue(99) }], 10, Date.now()).subarray(0, 500)],
    [
      'a whole record with a flipped byte',
      () => {
        const frame = encodeFrames([{ key: 'k', value: messageValue(99) }], 10, Date.now());
        frame.writeUInt8(frame.readUInt8(frame.length - 1) ^ 0xff, frame.length - 1);
        return frame;
      },
    ],
    ['a length that runs past the end of the file', () => Buffer.from([0x00, 0x00, 0x10, 0x00, 1, 2, 3, 4, 5, 6, 7, 8])],
    ['zeros (a file extended without its data)', () => Buffer.alloc(4096)],
    ['three stray bytes', () => Buffer.from([1, 2, 3])],
  ];

  it.each(tails)('cuts off %s at the end of the last segment, and appends after the intact records', async (_, tail) => {
    const first = await open({ partitions: 1 });
    await produceIds(first, [0, 1, 2, 3, 4]);
    await produceIds(first, [5, 6, 7, 8, 9]);
    await first.close();
    const segment = path.join(partitionDir(), FIRST_SEGMENT);
    const intactBytes = (await stat(segment)).size;
    await appendFile(segment, tail());

    const bus = await open({ partitions: 1 });
    expect((await stat(segment)).size).toBe(intactBytes);
    await produceIds(bus, [10, 11]);
    const received = await consumeAll(bus, 'g', 12);
    expect(received.map((message) => messageId(message.value))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(received.map((message) => message.offset)).toEqual(Array.from({ length: 12 }, (_, i) => String(i)));
  });

  it('refuses to open when intact records follow a damaged one, and cuts there only through the repair', async () => {
    const first = await open({ partitions: 1 });
    for (let id = 0; id < 6; id++) await produceIds(first, [id]);
    await consumeAll(first, 'g', 6);
    await first.close();
    // A bad sector in the middle of record 2, behind which records 3…5 are intact.
    const segment = path.join(partitionDir(), FIRST_SEGMENT);
    const content = await readFile(segment);
    const frameBytes = content.length / 6;
    content.writeUInt8(content.readUInt8(2 * frameBytes + 100) ^ 0xff, 2 * frameBytes + 100);
    await writeFile(segment, content);

    const refused = LocalLogBus.open({ dataDir, partitions: 1 });
    await expect(refused).rejects.toMatchObject({ name: 'StorageError', code: 'LOG_DAMAGED' });
    await expect(refused).rejects.toThrow(
      `${segment} has a damaged record at byte ${2 * frameBytes} (offset 2) with intact records behind it (from byte ${3 * frameBytes})`,
    );
    await expect(refused).rejects.toThrow('`npm run repair-log -- --cut` cuts the log at the damaged record');
    expect((await stat(segment)).size).toBe(content.length);

    const damage = {
      topic: TOPIC,
      partition: 0,
      file: segment,
      byte: 2 * frameBytes,
      offset: 2,
      droppedBytes: 4 * frameBytes,
      droppedSegments: [],
      groupsMovedBack: ['g'],
    };
    expect(await repairLocalLog(dataDir, { cut: false })).toEqual([damage]);
    expect((await stat(segment)).size).toBe(content.length);
    expect(await repairLocalLog(dataDir, { cut: true })).toEqual([damage]);
    expect((await stat(segment)).size).toBe(2 * frameBytes);

    // Offsets 2… are handed out again, and the group, moved back from 6 to 2, gets the new records.
    const bus = await open({ partitions: 1 });
    await produceIds(bus, [10, 11]);
    const received = await consumeAll(bus, 'g', 2);
    expect(received.map((message) => [message.offset, messageId(message.value)])).toEqual([
      ['2', 10],
      ['3', 11],
    ]);
  });

  it('takes over a lock left by an earlier process that had the same pid (a container restarted as PID 1)', async () => {
    const first = await open();
    await first.close();
    // What an older release left: the bare pid, here our own.
    await writeFile(path.join(dataDir, 'LOCK'), String(process.pid));
    await expect(open()).resolves.toBeInstanceOf(LocalLogBus);
  });

  it('deletes a segment only once every group known for the topic has committed past it', async () => {
    const bus = await open({ partitions: 1, segmentBytes: 4096 });
    await bus.ensureTopics([TOPIC]);
    // Known from its first consume on, though it has handled nothing yet.
    const laggingReceived: BusMessage[] = [];
    const lagging = await bus.consume({
      groupId: 'lagging',
      topics: [TOPIC],
      handleBatch: (batch) => {
        laggingReceived.push(...batch.messages);
        return Promise.resolve();
      },
    });
    lagging.pause();
    // One ~1 KB record per call: three fit a 4 KB segment, so 30 records make 10 segments.
    for (let id = 0; id < 30; id++) await produceIds(bus, [id]);
    expect(await segmentFiles()).toHaveLength(10);

    await consumeAll(bus, 'fast', 30);
    expect(await segmentFiles()).toHaveLength(10);

    lagging.resume();
    await waitFor(() => laggingReceived.length >= 30);
    await lagging.stop();
    await waitFor(async () => (await segmentFiles()).length === 1);
    // The active segment stays: it is where appends go.
    expect(await segmentFiles()).toEqual(['00000000000000000027.log']);

    // A group that comes later starts at the oldest record still kept.
    await bus.close();
    const reopened = await open({ partitions: 1, segmentBytes: 4096 });
    const late = await consumeAll(reopened, 'late', 3);
    expect(late.map((message) => message.offset)).toEqual(['27', '28', '29']);
  });

  it('writes concurrent produce calls with one fsync, keeping their call order', async () => {
    const bus = await open();
    await bus.ensureTopics([TOPIC]);
    const before = bus.stats().syncs;
    await Promise.all(Array.from({ length: 64 }, (_, id) => produceIds(bus, [id])));
    expect(bus.stats().syncs - before).toBe(1);
    const received = await consumeAll(bus, 'g', 64);
    expect(received.map((message) => messageId(message.value))).toEqual(Array.from({ length: 64 }, (_, i) => i));
  });

  it("writes a busy group's offset file at most once per commit interval, and the last commit on stop", async () => {
    const bus = await open({ partitions: 1 });
    await bus.ensureTopics([TOPIC]);
    const received: BusMessage[] = [];
    let batches = 0;
    const consumer = await bus.consume({
      groupId: 'g',
      topics: [TOPIC],
      handleBatch: (batch) => {
        batches++;
        received.push(...batch.messages);
        return Promise.resolve();
      },
    });
    await waitFor(() => bus.stats().offsetWrites === 1); // the group's starting offset
    const started = performance.now();
    // One fsynced append at a time: the consumer handles (nearly) each as a batch of its own.
    for (let id = 0; id < 60; id++) {
      await produceIds(bus, [id]);
      await waitFor(() => received.length > id);
    }
    const elapsed = performance.now() - started;
    await consumer.stop();
    const writes = bus.stats().offsetWrites - 1;
    expect(batches).toBeGreaterThan(30);
    // One write may start right away, then one per interval, plus the final write on stop.
    expect(writes).toBeLessThanOrEqual(Math.ceil(elapsed / COMMIT_INTERVAL_MS) + 2);
    expect(writes).toBeLessThan(batches);

    // The last commit is what stop left on disk: nothing is delivered again.
    await bus.close();
    const reopened = await open({ partitions: 1 });
    await produceIds(reopened, [60]);
    const after = await consumeAll(reopened, 'g', 1);
    expect(after.map((message) => messageId(message.value))).toEqual([60]);
  });

  it('lets a short batch wait lingerMs from its first append for more records, unless it fills up first', async () => {
    const bus = await open({ partitions: 1 });
    await bus.ensureTopics([TOPIC]);
    const batches: Array<{ ids: number[]; firstAppend: number; deliveredAt: number }> = [];
    const subscribe = (groupId: string, lingerMs: number, maxBatchSize?: number) =>
      bus.consume({
        groupId,
        topics: [TOPIC],
        lingerMs,
        maxBatchSize,
        handleBatch: (batch) => {
          const ids = batch.messages.map((message) => messageId(message.value));
          batches.push({ ids, firstAppend: batch.messages[0]!.timestamp, deliveredAt: Date.now() });
          return Promise.resolve();
        },
      });

    // A trickle of five appends, 30 ms apart (and an fdatasync each), well within the linger: one batch, not
    // before the linger ran out.
    const trickle = await subscribe('trickle', 3000);
    for (let id = 0; id < 5; id++) {
      await produceIds(bus, [id]);
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    await waitFor(() => batches.length > 0);
    await trickle.stop();
    expect(batches.map((batch) => batch.ids)).toEqual([[0, 1, 2, 3, 4]]);
    expect(batches[0]!.deliveredAt - batches[0]!.firstAppend).toBeGreaterThanOrEqual(3000);

    // A batch that fills up goes out at once, however long the linger.
    batches.length = 0;
    const full = await subscribe('full', 10 * 60_000, 5);
    await waitFor(() => batches.length > 0);
    await full.stop();
    expect(batches.map((batch) => batch.ids)).toEqual([[0, 1, 2, 3, 4]]);

    // Stopped while lingering: nothing was delivered or committed, so the records come again.
    batches.length = 0;
    const stopped = await subscribe('stopped', 10 * 60_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await stopped.stop();
    expect(batches).toEqual([]);
    expect((await consumeAll(bus, 'stopped', 5)).map((message) => messageId(message.value))).toEqual([0, 1, 2, 3, 4]);
  });

  it('serves a consumer at the tail from the appends kept in memory and a late one from the files, alike', async () => {
    // 6 MB in appends of ten 1 KB records: more than the 4 MB kept, over segments of 64 KB.
    const bus = await open({ partitions: 1, segmentBytes: 64 * 1024 });
    await bus.ensureTopics([TOPIC]);
    const ids = Array.from({ length: 6000 }, (_, id) => id);
    // The late group is known from the start, so retention keeps every segment for it.
    await consumeAll(bus, 'late', 0);
    const following = consumeAll(bus, 'following', ids.length);
    for (let first = 0; first < ids.length; first += 10) await produceIds(bus, ids.slice(first, first + 10));
    expect((await following).map((message) => messageId(message.value))).toEqual(ids);
    const afterFollowing = bus.stats();
    expect(afterFollowing.readsFromMemory).toBeGreaterThan(0);

    const late = await consumeAll(bus, 'late', ids.length);
    expect(late.map((message) => messageId(message.value))).toEqual(ids);
    expect(late.map((message) => message.offset)).toEqual((await following).map((message) => message.offset));
    expect(bus.stats().readsFromFile).toBeGreaterThan(afterFollowing.readsFromFile);
  });

  it('delivers a record larger than one read of the file', async () => {
    const bus = await open({ partitions: 1 });
    const large = Buffer.alloc(3 * 1024 * 1024, 7);
    await bus.produce(TOPIC, [
      { key: 'k', value: messageValue(0) },
      { key: 'k', value: large },
      { key: 'k', value: messageValue(2) },
    ]);
    const received = await consumeAll(bus, 'g', 3);
    expect(received.map((message) => message.value.length)).toEqual([1024, large.length, 1024]);
    expect(received[1]?.value.equals(large)).toBe(true);
  });

  it('keeps the partition count a topic was created with', async () => {
    const first = await open({ partitions: 3 });
    await first.ensureTopics([TOPIC]);
    await first.close();
    const bus = await open({ partitions: 8 });
    await bus.produce(
      TOPIC,
      Array.from({ length: 60 }, (_, id) => ({ key: `key-${id}`, value: messageValue(id) })),
    );
    const received = await consumeAll(bus, 'g', 60);
    expect(new Set(received.map((message) => message.partition))).toEqual(new Set([0, 1, 2]));
    expect(await readdir(path.join(dataDir, TOPIC))).toHaveLength(3);
  });

  it('rejects a message it cannot frame without disturbing the offsets of others', async () => {
    const bus = await open({ partitions: 1 });
    await produceIds(bus, [0]);
    await expect(bus.produce(TOPIC, [{ key: 'k'.repeat(70_000), value: Buffer.alloc(1) }])).rejects.toMatchObject({
      name: 'StorageError',
      code: 'INVALID_MESSAGE',
      retriable: false,
    });
    await produceIds(bus, [1]);
    const received = await consumeAll(bus, 'g', 2);
    expect(received.map((message) => message.offset)).toEqual(['0', '1']);
  });

  it('refuses appends and fails ping once a write has failed', async () => {
    const bus = await open({ partitions: 1 });
    await bus.ensureTopics([TOPIC]);
    // Its first segment file cannot be created any more: the flush that should create it fails.
    await rm(partitionDir(), { recursive: true });
    await expect(produceIds(bus, [0])).rejects.toMatchObject({ name: 'StorageError', code: 'ENOENT', retriable: false });
    await expect(produceIds(bus, [1])).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(bus.ping()).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('lets one bus at a time own a data directory', async () => {
    const bus = await open();
    await expect(LocalLogBus.open({ dataDir })).rejects.toMatchObject({ code: 'DATA_DIR_LOCKED' });
    await bus.close();
    await expect(open()).resolves.toBeInstanceOf(LocalLogBus);
  });

  it('refuses a second consumer of one group, and names that are not plain file names', async () => {
    const bus = await open();
    const handleBatch = () => Promise.resolve();
    await bus.consume({ groupId: 'g', topics: [TOPIC], handleBatch });
    await expect(bus.consume({ groupId: 'g', topics: [TOPIC], handleBatch })).rejects.toMatchObject({ code: 'GROUP_BUSY' });
    await expect(bus.consume({ groupId: '../g', topics: [TOPIC], handleBatch })).rejects.toMatchObject({ code: 'INVALID_NAME' });
    await expect(bus.produce('_groups', [{ key: 'k', value: Buffer.alloc(1) }])).rejects.toMatchObject({ code: 'INVALID_NAME' });
  });
});
