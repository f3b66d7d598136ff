/**
 * Embedded mode's "acknowledged means durable", watched at the system-call level: the consumer runs in a child
 * under `strace -f -y` (file descriptors printed with their paths), and the trace must show that before each
 * offset commit of the consumer group (the rename of its offset file into place) the batch it covers was durable:
 * every ClickHouse part file and Postgres WAL segment written up to the batch's end was fsynced after its last
 * write, and every part renamed into a table's directory had that directory fsynced. A kill -9 cannot show
 * this (the page cache survives it); a power loss would.
 */
import { spawn } from 'node:child_process';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalLogBus } from '@plover/bus';
import { countEvents } from '@plover/clickhouse';
import { availableTool } from '../../../test/support/services';
import { createProject } from '../../../packages/persons/test/support/stores';
import { personUpdates } from './support/persons';
import { closeStores, openStores, waitFor, type StackDescription } from './support/stacks';

const REPO_ROOT = path.resolve(__dirname, '../../..');
const CHILD_SCRIPT = path.join(__dirname, 'support', 'consumer-child.ts');
const SETTINGS: StackDescription['settings'] = {
  topics: { events: 'events', historical: 'events_historical', deadLetter: 'events_dlq' },
  groupIds: { events: 'ingestion', historical: 'ingestion-historical' },
};
const EVENTS = 200;
const BATCH_SIZE = 40;

/** One system call of the trace, at the line where it started (writes, renames) or completed (syncs). */
interface Call {
  line: number;
  name: string;
  /** The path of the first file-descriptor argument (`-y`), if any. */
  file: string | undefined;
  /** The string arguments, unescaped only as far as the paths and offsets here need. */
  strings: string[];
}

const WRITES = new Set(['write', 'pwrite64', 'writev', 'pwritev', 'pwritev2']);
const SYNCS = new Set(['fsync', 'fdatasync']);
const RENAMES = new Set(['rename', 'renameat', 'renameat2']);

/** Parses `strace -f -y` output, pairing `<unfinished ...>` lines with their `<... resumed>` completion. */
function parseTrace(text: string): Call[] {
  const calls: Call[] = [];
  const unfinished = new Map<string, Call>();
  text.split('\n').forEach((raw, line) => {
    const resumed = /^(\d+)\s+<\.\.\. (\w+) resumed>/.exec(raw);
    if (resumed) {
      const started = unfinished.get(resumed[1] as string);
      unfinished.delete(resumed[1] as string);
      if (started && SYNCS.has(started.name)) calls.push({ ...started, line });
      return;
    }
    const match = /^(\d+)\s+(\w+)\((.*)$/.exec(raw);
    if (!match) return;
    const [, pid, name, rest] = match as unknown as [string, string, string, string];
    const call: Call = {
      line,
      name,
      file: /^\d+<([^>]*)>/.exec(rest)?.[1],
      strings: [...rest.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((found) => found[1] as string),
    };
    if (rest.endsWith('<unfinished ...>')) {
      unfinished.set(pid, call);
      if (!SYNCS.has(name)) calls.push(call);
    } else {
      calls.push(call);
    }
  });
  return calls;
}

async function runTracedConsumer(description: StackDescription, traceFile: string, committed: () => Promise<boolean>): Promise<void> {
  const strace = spawn(
    'strace',
    [
      '-f',
      '-y',
      '-qq',
      '-s',
      '32',
      '-e',
      'trace=fsync,fdatasync,rename,renameat,renameat2,write,pwrite64,writev,pwritev,pwritev2',
      '-o',
      traceFile,
      '--',
      process.execPath,
      '--conditions=plover-source',
      '--import',
      'tsx',
      CHILD_SCRIPT,
    ],
    {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        TEST_INGESTION_STACK: JSON.stringify(description),
        TEST_BATCH_SIZE: String(BATCH_SIZE),
        TEST_COMMITTED_BATCHES: String(Number.MAX_SAFE_INTEGER),
      },
      // stdout a pipe: the child's `handled` lines must be write(2)s in the trace (their content is not read here).
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  strace.stdout.resume();
  let stderr = '';
  strace.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => strace.on('close', () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  try {
    await waitFor(
      'the traced consumer to commit every event',
      async () => {
        if (gone) throw new Error(`strace or the consumer exited: ${stderr}`);
        return committed();
      },
      120_000,
    );
  } finally {
    // Killing the traced node process (strace's child) lets strace write out its trace and exit.
    const children = await readFile(`/proc/${strace.pid}/task/${strace.pid}/children`, 'utf8').catch(() => '');
    for (const pid of children.trim().split(/\s+/).filter(Boolean)) process.kill(Number(pid), 'SIGKILL');
    await exited;
  }
}

const describeTraced = availableTool('strace') && process.platform === 'linux' ? describe : describe.skip;

describeTraced('durability under strace: embedded stores synced before the offset commit', () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-durability-'));
  });

  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('before every rename of the group offset file, the batch it commits has its part files, table directories and WAL fsynced', async () => {
    const description: StackDescription = { kind: 'embedded', dataDir, settings: SETTINGS };
    const busDir = path.join(dataDir, 'bus');
    // One partition: its batches are handled one after another, so a batch's writes are all those before its end.
    const bus = await LocalLogBus.open({ dataDir: busDir, partitions: 1 });
    await bus.ensureTopics(Object.values(SETTINGS.topics));
    await bus.close();

    let stores = await openStores(description);
    const projectId = await createProject(stores.sql);
    const { messages } = personUpdates(projectId, EVENTS, 20);
    await stores.bus.produce(SETTINGS.topics.events, messages);
    await closeStores(stores);

    const offsetFile = path.join(busDir, '_groups', SETTINGS.groupIds.events, `${SETTINGS.topics.events}-0`);
    const traceFile = path.join(dataDir, 'strace.txt');
    await runTracedConsumer(description, traceFile, async () => (await readFile(offsetFile, 'utf8').catch(() => '')).trim() === String(EVENTS));

    const calls = parseTrace(await readFile(traceFile, 'utf8'));
    const clickhouseStore = path.join(dataDir, 'clickhouse', 'store');
    const walDir = path.join(dataDir, 'postgres', 'pg_wal');
    // Inserted parts only: merges run in the background, and a part they replace stays until long after.
    const isPartFile = (file: string) => file.startsWith(`${clickhouseStore}/`) && /\/tmp_insert_[^/]+\/[^/]+$/.test(file);
    const isWalSegment = (file: string) => path.dirname(file) === walDir && /^[0-9A-F]{24}$/.test(path.basename(file));

    const handledAt = new Map<string, number>();
    for (const call of calls) {
      const marker = call.name === 'write' ? /^handled events 0 (\d+)\\n$/.exec(call.strings[0] ?? '') : null;
      if (marker) handledAt.set(marker[1] as string, call.line);
    }
    const commits = calls.filter((call) => RENAMES.has(call.name) && call.strings.at(-1) === offsetFile);
    const lastWritten = (file: string, before: number) =>
      calls.findLast((call) => WRITES.has(call.name) && call.file === file && call.line < before)?.strings[0];

    const checked: Array<{ offset: string; partFiles: number; walSegments: number; partDirectories: number }> = [];
    for (const commit of commits) {
      const offset = lastWritten(`${offsetFile}.tmp`, commit.line)?.replace(/\\n$/, '');
      if (offset === undefined || offset === '0') continue;
      const handled = handledAt.get(offset);
      expect({ offset, handledBeforeCommit: handled !== undefined && handled < commit.line }).toEqual({ offset, handledBeforeCommit: true });
      const end = handled as number;

      const lastWrite = new Map<string, number>();
      for (const call of calls)
        if (call.line < end && WRITES.has(call.name) && call.file && (isPartFile(call.file) || isWalSegment(call.file))) lastWrite.set(call.file, call.line);
      const unsynced = [...lastWrite].filter(
        ([file, line]) => !calls.some((call) => SYNCS.has(call.name) && call.file === file && call.line > line && call.line < end),
      );
      expect({ offset, unsynced: unsynced.map(([file]) => file) }).toEqual({ offset, unsynced: [] });

      const partRenames = calls.filter(
        (call) =>
          call.line < end &&
          RENAMES.has(call.name) &&
          (call.strings[0] ?? '').includes('/tmp_insert_') &&
          (call.strings.at(-1) ?? '').startsWith(`${clickhouseStore}/`),
      );
      const unsyncedDirectories = partRenames
        .map((rename) => ({ rename, table: path.dirname((rename.strings.at(-1) as string).replace(/\/$/, '')) }))
        .filter(({ rename, table }) => !calls.some((call) => SYNCS.has(call.name) && call.file === table && call.line > rename.line && call.line < end))
        .map(({ table }) => table);
      expect({ offset, unsyncedDirectories }).toEqual({ offset, unsyncedDirectories: [] });

      const files = [...lastWrite.keys()];
      checked.push({ offset, partFiles: files.filter(isPartFile).length, walSegments: files.filter(isWalSegment).length, partDirectories: partRenames.length });
    }
    // Not vacuous: commits were seen, the last one covering every event, after part files and WAL were written.
    expect(checked.at(-1)?.offset).toBe(String(EVENTS));
    expect(checked.some((check) => check.partFiles > 0 && check.walSegments > 0 && check.partDirectories > 0)).toBe(true);

    stores = await openStores(description);
    try {
      expect(await countEvents(stores.clickhouse, projectId)).toBe(EVENTS);
    } finally {
      await closeStores(stores);
    }
  }, 240_000);
});
