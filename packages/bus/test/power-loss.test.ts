/**
 * LocalLogBus under power loss, on a simulated disk (support/simulated-disk.ts) that keeps only what was synced:
 * acknowledged records survive, committed offsets never point past the end, and no offset is handed out twice.
 */
import path from 'node:path';
import { LocalLogBus } from '@plover/bus';
import type { BusMessage, LocalLogBusOptions } from '@plover/bus';
import type { StorageError } from '@plover/core';
import { decodeFrame, frameEnd, scanFrames } from '../src/local-log/record';
import { seededRandom } from '../../../test/support/random';
import { messageId, messageValue } from './support/messages';
import { SimulatedDisk } from './support/simulated-disk';
import type { SimulatedProcess } from './support/simulated-disk';

const DATA_DIR = '/data/bus';
const TOPIC = 'events';
const GROUP = 'g';

const partitionDir = (partition: number) => path.join(DATA_DIR, TOPIC, String(partition));
const offsetFile = (partition: number) => path.join(DATA_DIR, '_groups', GROUP, `${TOPIC}-${partition}`);

function open(fileSystem: SimulatedProcess, options: Partial<LocalLogBusOptions> = {}): Promise<LocalLogBus> {
  return LocalLogBus.open({ dataDir: DATA_DIR, fileSystem, partitions: 1, onFatalError: () => undefined, ...options });
}

function produceIds(bus: LocalLogBus, ids: readonly number[]): Promise<void> {
  return bus.produce(
    TOPIC,
    ids.map((id) => ({ key: `key-${id % 7}`, value: messageValue(id) })),
  );
}

/** Runs group GROUP until it has handled `count` records (or 5 s went by), stops it (committing), returns them. */
async function consume(bus: LocalLogBus, count: number): Promise<BusMessage[]> {
  const received: BusMessage[] = [];
  const consumer = await bus.consume({
    groupId: GROUP,
    topics: [TOPIC],
    retryBackoffMs: 1,
    handleBatch: (batch) => {
      received.push(...batch.messages);
      return Promise.resolve();
    },
  });
  const deadline = Date.now() + 5000;
  while (received.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
  await consumer.stop();
  return received;
}

/** What a process finds in a partition, read straight from the disk: the records ([offset, message id]) and the end. */
function partitionImage(disk: SimulatedDisk, partition: number): { records: Array<[number, number]>; end: number } {
  const records: Array<[number, number]> = [];
  let end = 0;
  for (const name of disk.list(partitionDir(partition))) {
    const buffer = disk.read(path.join(partitionDir(partition), name));
    const scan = scanFrames(buffer, Number(name.slice(0, 20)));
    for (let position = 0; position < scan.bytes; position = frameEnd(buffer, position)) {
      const message = decodeFrame(buffer, position, TOPIC, partition);
      records.push([Number(message.offset), messageId(message.value)]);
    }
    end = Number(name.slice(0, 20)) + scan.count;
  }
  return { records, end };
}

function committed(disk: SimulatedDisk, partition: number): number | undefined {
  return disk.list(path.dirname(offsetFile(partition))).includes(path.basename(offsetFile(partition)))
    ? Number(disk.read(offsetFile(partition)).toString())
    : undefined;
}

describe('LocalLogBus under power loss', () => {
  it('makes what a killed process wrote but did not sync durable before a consumer can read and commit it', async () => {
    const disk = new SimulatedDisk();
    let armed = false;
    const first = disk.process({ crashBefore: (step) => armed && step.startsWith('datasync') });
    const bus = await open(first);
    await produceIds(bus, [0, 1, 2, 3, 4]);
    // Killed between the writev of 5…9 and its fdatasync: they are in the page cache only.
    armed = true;
    await expect(produceIds(bus, [5, 6, 7, 8, 9])).rejects.toThrow();
    await bus.close().catch(() => undefined);

    const second = await open(disk.process());
    expect((await consume(second, 10)).map((message) => messageId(message.value))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await second.close();
    disk.powerLoss(() => 0);

    const third = await open(disk.process());
    expect(committed(disk, 0)).toBeLessThanOrEqual(partitionImage(disk, 0).end);
    await produceIds(third, [100, 101]);
    // The group's commit covers 0…9; offsets 10 and 11 go to the new records, which it therefore gets.
    expect((await consume(third, 2)).map((message) => [message.offset, messageId(message.value)])).toEqual([
      ['10', 100],
      ['11', 101],
    ]);
    await third.close();
  });

  it('cuts off what a failed fsync did not make durable and reports a fatal error', async () => {
    const disk = new SimulatedDisk();
    let failing = false;
    const fatal: StorageError[] = [];
    const running = disk.process({ failSync: (file) => failing && file.endsWith('.log') });
    const bus = await open(running, { onFatalError: (error) => fatal.push(error) });
    await produceIds(bus, [0, 1, 2, 3, 4]);
    const segment = path.join(partitionDir(0), disk.list(partitionDir(0))[0] as string);
    const durableBytes = disk.read(segment).length;

    failing = true;
    await expect(produceIds(bus, [5, 6, 7, 8, 9])).rejects.toMatchObject({ code: 'EIO' });
    for (let wait = 0; fatal.length === 0 && wait < 1000; wait++) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(fatal).toEqual([expect.objectContaining({ name: 'StorageError', code: 'EIO' })]);
    // The unsynced records still read back from the page cache; they are gone before the process ends.
    expect(disk.read(segment)).toHaveLength(durableBytes);
    await expect(produceIds(bus, [10])).rejects.toMatchObject({ code: 'EIO' });
    running.die();
    await bus.close().catch(() => undefined);

    const restarted = await open(disk.process());
    await produceIds(restarted, [11]);
    expect((await consume(restarted, 6)).map((message) => [message.offset, messageId(message.value)])).toEqual([
      ['0', 0],
      ['1', 1],
      ['2', 2],
      ['3', 3],
      ['4', 4],
      ['5', 11],
    ]);
    await restarted.close();
  });

  it('keeps acknowledged records of a data directory created on the first start', async () => {
    const disk = new SimulatedDisk();
    const bus = await open(disk.process(), { partitions: 2 });
    await produceIds(bus, [0, 1, 2, 3]);
    await consume(bus, 4);
    disk.powerLoss(() => 0);

    const reopened = await open(disk.process(), { partitions: 2 });
    expect([...partitionImage(disk, 0).records, ...partitionImage(disk, 1).records].map(([, id]) => id).sort()).toEqual([0, 1, 2, 3]);
    expect((committed(disk, 0) ?? 0) + (committed(disk, 1) ?? 0)).toBe(4);
    await reopened.close();
  });

  it('keeps every acknowledged record and every commit consistent through thousands of random crashes', async () => {
    const random = seededRandom(SEED);
    const violations: string[] = [];
    let crashes = 0;
    for (let scenario = 0; scenario < SCENARIOS && violations.length === 0; scenario++) {
      const disk = await diskWithParentDir();
      const state: Workload = { nextId: 0, acked: new Set(), handled: new Map() };
      for (let life = 0; life < LIVES && violations.length === 0; life++) {
        await runUntilCrash(disk, disk.steps + 1 + Math.floor(random() * STEPS_PER_LIFE), state, random);
        crashes++;
        const powerLoss = random() < 0.5;
        if (powerLoss) disk.powerLoss(random);
        for (const violation of await checkAfterRestart(disk, state)) {
          violations.push(`seed ${SEED}, scenario ${scenario}, life ${life}${powerLoss ? ' (power loss)' : ''}: ${violation}`);
        }
      }
    }
    expect(violations).toEqual([]);
    expect(crashes).toBe(SCENARIOS * LIVES);
  });
});

const SEED = 20_260_511;
const SCENARIOS = 300;
const LIVES = 8;
/** A life's crash point falls among this many steps (calls to the disk); an uneventful life takes about 60. */
const STEPS_PER_LIFE = 90;
const SIMULATION: Partial<LocalLogBusOptions> = { partitions: 2, segmentBytes: 4096 };

/**
 * A disk on which the data dir's parent exists and is durable: it is the operator's (a mount point, say). The log
 * makes each directory it creates durable, but a parent it created and then died before fsyncing stays at risk.
 */
async function diskWithParentDir(): Promise<SimulatedDisk> {
  const disk = new SimulatedDisk();
  const setup = disk.process();
  await setup.mkdir(path.dirname(DATA_DIR));
  await setup.fsyncDir('/');
  setup.die();
  return disk;
}

interface Workload {
  nextId: number;
  acked: Set<number>;
  /** Message id → [partition, offset] of every record the group's handler was given. */
  handled: Map<number, [number, number]>;
}

/** One process: opens the bus, consumes and produces concurrent batches until it dies at `crashAtStep` (or is killed). */
async function runUntilCrash(disk: SimulatedDisk, crashAtStep: number, state: Workload, random: () => number): Promise<void> {
  const running = disk.process({ crashAtStep });
  let bus: LocalLogBus | undefined;
  try {
    bus = await open(running, SIMULATION);
    const opened = bus;
    // Lives that only produce or only consume leave room for a consumer to read what the last process left.
    const mode = random();
    if (mode >= 0.2) await startConsumer(opened, state, random);
    const rounds = 1 + Math.floor(random() * 4);
    for (let round = 0; round < rounds && running.alive; round++) {
      const batches = Array.from({ length: mode < 0.8 ? 1 + Math.floor(random() * 3) : 0 }, () => {
        const ids = Array.from({ length: 1 + Math.floor(random() * 4) }, () => state.nextId++);
        return produceIds(opened, ids).then(() => ids.forEach((id) => state.acked.add(id)));
      });
      await Promise.allSettled(batches);
      await new Promise((resolve) => setImmediate(resolve));
    }
  } catch {
    // The process died.
  }
  running.die();
  // Its commit timers may still be waiting: nothing it does from now on reaches the disk.
  void bus?.close().catch(() => undefined);
}

function startConsumer(bus: LocalLogBus, state: Workload, random: () => number): Promise<unknown> {
  return bus.consume({
    groupId: GROUP,
    topics: [TOPIC],
    retryBackoffMs: 1,
    maxBatchSize: 1 + Math.floor(random() * 5),
    handleBatch: (batch) => {
      for (const message of batch.messages) state.handled.set(messageId(message.value), [message.partition, Number(message.offset)]);
      return Promise.resolve();
    },
  });
}

/** Restarts on the disk as the crash left it and lists what breaks the log's promises. */
async function checkAfterRestart(disk: SimulatedDisk, state: Workload): Promise<string[]> {
  let bus: LocalLogBus;
  try {
    bus = await open(disk.process(), SIMULATION);
  } catch (error) {
    return [`the restart failed: ${String(error)}`];
  }
  const violations: string[] = [];
  const images = [0, 1].map((partition) => partitionImage(disk, partition));
  const stored = new Set(images.flatMap((image) => image.records.map(([, id]) => id)));
  images.forEach((image, partition) => {
    const commit = committed(disk, partition) ?? 0;
    if (commit > image.end) violations.push(`partition ${partition}: committed offset ${commit} is past the end ${image.end}`);
    for (const [offset, id] of image.records) {
      if (offset < commit && !state.handled.has(id))
        violations.push(`partition ${partition}: record ${id} at ${offset} is below the commit ${commit} but was never handled`);
    }
  });
  for (const id of state.acked) {
    if (stored.has(id)) continue;
    const [partition, offset] = state.handled.get(id) ?? [];
    const image = partition === undefined ? undefined : images[partition];
    const start = image && (image.records[0]?.[0] ?? image.end);
    // Gone is fine only for a record retention deleted: the group had handled it, and it lay before the start.
    if (offset === undefined || start === undefined || offset >= start) violations.push(`acknowledged record ${id} is lost`);
  }
  await bus.close();
  return violations;
}
