/**
 * A full disk or a process out of file descriptors fails an append, not the partition: the log cuts back to its
 * durable end and takes the next append. The faults are injected into real files (a wrapper over node's fs that
 * fails the chosen calls as the kernel would); filling a real disk is the full-disk suite's job.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalLogBus, type BusMessage } from '@plover/bus';
import { faultyFileSystem, type Call } from './support/faulty-file-system';
import { messageId, messageValue } from './support/messages';

const TOPIC = 'events';

describe('LocalLogBus after a transient write failure', () => {
  let dataDir: string;
  let bus: LocalLogBus | undefined;
  /** The next calls of this kind fail with this code, `times` times. */
  let armed: { call: Call; code: string; times: number; file?: RegExp } | undefined;
  const fatal: unknown[] = [];

  const fileSystem = faultyFileSystem((call, file) => {
    if (!armed || armed.call !== call || armed.times === 0 || (armed.file && !armed.file.test(file))) return undefined;
    armed.times--;
    return armed.code;
  });

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-transient-'));
    armed = undefined;
    fatal.length = 0;
  });

  afterEach(async () => {
    await bus?.close();
    bus = undefined;
    await rm(dataDir, { recursive: true, force: true });
  });

  async function open(segmentBytes = 64 * 1024 * 1024): Promise<LocalLogBus> {
    await bus?.close();
    bus = await LocalLogBus.open({ dataDir, partitions: 1, segmentBytes, fileSystem, onFatalError: (error) => fatal.push(error) });
    return bus;
  }

  function produce(ids: number[]): Promise<void> {
    return bus!.produce(
      TOPIC,
      ids.map((id) => ({ key: 'k', value: messageValue(id) })),
    );
  }

  /** Every record from where `group` stands, until no more arrive. */
  async function read(group: string): Promise<Array<{ id: number; offset: string }>> {
    const received: BusMessage[] = [];
    const consumer = await bus!.consume({
      groupId: group,
      topics: [TOPIC],
      handleBatch: (batch) => {
        received.push(...batch.messages);
        return Promise.resolve();
      },
    });
    const deadline = Date.now() + 2_000;
    let seen = -1;
    while (received.length !== seen && Date.now() < deadline) {
      seen = received.length;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await consumer.stop();
    return received.map((message) => ({ id: messageId(message.value), offset: message.offset }));
  }

  /**
   * The log holds exactly `ids` at consecutive offsets; and after a reopen (which cuts a torn tail and would take
   * intact frames of a refused append for records), the next record follows them directly.
   */
  async function expectLog(ids: number[]): Promise<void> {
    expect(await read('g')).toEqual(ids.map((id, offset) => ({ id, offset: String(offset) })));
    await open();
    await produce([999]);
    expect(await read('g')).toEqual([{ id: 999, offset: String(ids.length) }]);
  }

  it.each([
    ['a write meets a full disk', 'writev', 'ENOSPC'],
    ['an fdatasync meets a full disk', 'datasync', 'ENOSPC'],
    ['an fdatasync exceeds the quota', 'datasync', 'EDQUOT'],
  ] as const)('refuses only the appends that were in flight when %s', async (_case, call, code) => {
    await open();
    await produce([0, 1]);
    armed = { call, code, times: 1 };
    await expect(produce([2, 3, 4])).rejects.toMatchObject({ name: 'StorageError', retriable: true, code });
    await produce([5]);
    await expect(bus!.ping()).resolves.toBeUndefined();
    expect(fatal).toEqual([]);
    await expectLog([0, 1, 5]);
  });

  it('goes on when a new segment cannot be opened for want of file descriptors', async () => {
    // Each append fills a segment, so every produce rolls to a new file.
    await open(1_500);
    await produce([0]);
    armed = { call: 'open', code: 'EMFILE', times: 2, file: /\.log$/ };
    await expect(produce([1])).rejects.toMatchObject({ code: 'EMFILE', retriable: true });
    await expect(produce([2])).rejects.toMatchObject({ code: 'EMFILE' });
    await produce([3]);
    await produce([4]);
    expect(fatal).toEqual([]);
    await expectLog([0, 3, 4]);
  });

  it('goes on when the directory entry of a new segment cannot be synced for want of space', async () => {
    await open(1_500);
    await produce([0]);
    armed = { call: 'fsyncDir', code: 'ENOSPC', times: 1, file: /events[/\\]0$/ };
    await expect(produce([1])).rejects.toMatchObject({ code: 'ENOSPC' });
    await produce([2]);
    expect(fatal).toEqual([]);
    await expectLog([0, 2]);
  });

  it('refuses appends made while the failed write was in flight, and none of their bytes are read back', async () => {
    await open();
    await produce([0]);
    armed = { call: 'writev', code: 'ENOSPC', times: 1 };
    const first = produce([1, 2]);
    // Queued behind the failing write: its offsets were handed out past the refused ones.
    await new Promise((resolve) => setImmediate(resolve));
    const queued = produce([3]);
    await expect(first).rejects.toMatchObject({ code: 'ENOSPC' });
    await expect(queued).rejects.toMatchObject({ code: 'ENOSPC' });
    await produce([4]);
    await expectLog([0, 4]);
  });

  it('stops appending, fails ping and ends the process on an fsync error it cannot recover from', async () => {
    await open();
    await produce([0]);
    armed = { call: 'datasync', code: 'EIO', times: 1 };
    await expect(produce([1])).rejects.toMatchObject({ code: 'EIO', retriable: false });
    await expect(produce([2])).rejects.toMatchObject({ code: 'EIO' });
    await expect(bus!.ping()).rejects.toMatchObject({ code: 'EIO' });
    const deadline = Date.now() + 2_000;
    while (fatal.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(fatal).toHaveLength(1);
  });
});
