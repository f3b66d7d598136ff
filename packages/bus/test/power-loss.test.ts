/**
 * LocalLogBus under power loss, on a simulated disk (support/simulated-disk.ts) that keeps only what was synced:
 * acknowledged records survive, committed offsets never point past the end, and no offset is handed out twice.
 */
import path from 'node:path';
import { LocalLogBus } from '@plover/bus';
import type { BusMessage, LocalLogBusOptions } from '@plover/bus';
import type { StorageError } from '@plover/core';
import { decodeFrame, frameEnd, scanFrames } from '../src/local-log/record';
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

/** The records a process would find in a partition, read straight from the disk: [offset, message id]. */
function records(disk: SimulatedDisk, partition: number): Array<[number, number]> {
  const found: Array<[number, number]> = [];
  for (const name of disk.list(partitionDir(partition))) {
    const buffer = disk.read(path.join(partitionDir(partition), name));
    const scan = scanFrames(buffer, Number(name.slice(0, 20)));
    for (let position = 0; position < scan.bytes; position = frameEnd(buffer, position)) {
      const message = decodeFrame(buffer, position, TOPIC, partition);
      found.push([Number(message.offset), messageId(message.value)]);
    }
  }
  return found;
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
    expect(committed(disk, 0)).toBeLessThanOrEqual(records(disk, 0).length);
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
    expect([...records(disk, 0), ...records(disk, 1)].map(([, id]) => id).sort()).toEqual([0, 1, 2, 3]);
    expect((committed(disk, 0) ?? 0) + (committed(disk, 1) ?? 0)).toBe(4);
    await reopened.close();
  });
});
