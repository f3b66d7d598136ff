/**
 * The ClickHouse port on chDB: ClickHouse's own engine inside this process, for embedded mode. A package of its
 * own that only embedded mode depends on, so the images of services that talk to a server neither load nor
 * install the native library (~550 MB).
 *
 * What chDB (chdb 3.4.0, engine 26.7) allows, checked by hand and in this package's contract tests:
 * - The engine is a process-wide singleton bound to ONE data directory. While any connection is open on
 *   directory A, opening one on directory B (or a temporary one) throws CHDB_CONNECTION ("only one active data
 *   directory per process"); A is released only when its last connection is destroyed. So a process holds at
 *   most one ChdbClickHouse data directory at a time: close() one before opening another.
 * - Several connections on the SAME directory coexist, each with its own session state, and run in parallel.
 *   Two ChdbClickHouse handles on one directory in one process are therefore fine.
 * - Another process cannot open a directory in use: the engine locks `<dir>/status` (CANNOT_OPEN_FILE).
 * - One connection runs one statement at a time. Calls made concurrently on it queue inside chDB, and each
 *   queued call occupies a libuv worker thread while it waits (measured: an fs.readFile waited 1.1 s behind
 *   four queued queries on one connection), starving file I/O, DNS and zlib in the whole process. Hence the
 *   pool below: a few connections, and calls queued in JS so chDB never holds more than one per connection.
 * - Calls with bound parameters are serialized process-wide by chdb itself (its native parameter state is not
 *   isolated per connection), so statements without parameters take the unbound path and run in parallel.
 * - Settings that must hold for every statement are given at connect time (`connectionArgs`), per connection.
 * - A connection destroyed while a native call still runs on it aborts the engine for the whole process;
 *   chdb defers such a destruction, and close() below waits until nothing of ours is running.
 * - The engine, when it starts (the first connection in the process, or the first after all were closed),
 *   installs ClickHouse's handlers for the fatal signals (SIGABRT, SIGSEGV, SIGBUS...) and SIGTSTP. Those wait
 *   for a log thread chDB never starts: a V8 heap overflow or any native abort left the process asleep in the
 *   handler for about five minutes, its port open and nothing answered. chdb does not expose the engine's
 *   switch for them (chdb_set_signal_handlers_enabled), so open() gives those signals their default action
 *   back: a fatal error ends the process at once, as it does without chDB. Node's own SIGSEGV handler (for
 *   WebAssembly bounds traps) is not restored: the engine had already replaced it.
 * - Server configuration (not settings) comes from a `--config-file` read when the engine starts; see
 *   ENGINE_CONFIG for what it holds and why.
 * Only the async entry points (queryAsync, queryBindAsync, insert) are used: they run on libuv threads, so a
 * long query never blocks the event loop (the synchronous forms freeze it for the whole query).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { drainPending, Session, type ChdbResult } from 'chdb';
import { fsyncPath, StorageError } from '@plover/core';
import {
  assertTableName,
  clickHouseFailure,
  closedFailure,
  compactRows,
  normalizeParams,
  SESSION_SETTINGS,
  unclassifiedFailure,
  withSettings,
  type ClickHouse,
  type ClickHouseParams,
  type CompactResult,
  type RowsResult,
  type StatementSettings,
} from '@plover/clickhouse';

export interface ChdbClickHouseOptions {
  /** Where the engine keeps its databases; created if missing. */
  dataDir: string;
  /**
   * Connections in the pool, i.e. statements running at once. Keep it below libuv's thread pool
   * (UV_THREADPOOL_SIZE, 4 by default) so file I/O elsewhere in the process always finds a thread.
   */
  connections?: number;
}

/** Under the data directory: where `File('<name>')` backups are written and restored from. */
export const BACKUPS_DIR = 'backups';

/** Two lets an insert proceed while a long query runs, and leaves half of libuv's default four threads free. */
const DEFAULT_CONNECTIONS = 2;

const SETTING_ARGS = Object.entries(SESSION_SETTINGS).map(([name, value]) => `--${name}=${value}`);

/**
 * Embedded mode acknowledges an event once the consumer committed its offset, after which the local log may
 * delete it: the rows must then survive a power loss on their own. ClickHouse's MergeTree defaults leave a
 * new part in the page cache (`fsync_after_insert=0`, `fsync_part_directory=0`), as a replicated server can
 * afford; here they are fsynced before an insert returns, and merged parts before the parts they replace are
 * dropped. These are server-level MergeTree defaults, so they hold for every table the shared migrations
 * create, without the migrations (which a ClickHouse server runs too) saying anything about it.
 * `backups.allowed_path` lets BACKUP and RESTORE use `File('<name>')` under `<dataDir>/backups`.
 */
const ENGINE_CONFIG = `<clickhouse>
  <merge_tree>
    <fsync_after_insert>1</fsync_after_insert>
    <fsync_part_directory>1</fsync_part_directory>
    <min_compressed_bytes_to_fsync_after_merge>1</min_compressed_bytes_to_fsync_after_merge>
  </merge_tree>
  <backups>
    <allowed_path>${BACKUPS_DIR}/</allowed_path>
  </backups>
</clickhouse>
`;

export class ChdbClickHouse implements ClickHouse {
  private readonly idle: Session[];
  /** Tables inserted into since the last sync(). */
  private readonly unsynced = new Set<string>();
  /** Data directories of the tables inserted into, by table name as given to insert(). */
  private readonly tableDirs = new Map<string, readonly string[]>();
  /** Calls waiting for a connection, first come first served. */
  private readonly waiting: ((session: Session) => void)[] = [];
  private closing: Promise<void> | undefined;
  /** Connections of streamed statements not streaming now, kept for the next one. */
  private readonly idleStreams: Session[] = [];
  /** Connections streaming now. */
  private readonly streaming = new Set<Session>();

  private constructor(
    private readonly sessions: readonly Session[],
    private readonly connect: () => Session,
  ) {
    this.idle = [...sessions];
  }

  static async open(options: ChdbClickHouseOptions): Promise<ChdbClickHouse> {
    const count = options.connections ?? DEFAULT_CONNECTIONS;
    if (!Number.isInteger(count) || count < 1) throw new RangeError(`connections must be a positive integer, got ${count}`);
    await mkdir(options.dataDir, { recursive: true });
    // Rewritten at every open: a copy torn by a power loss must not keep the engine from starting.
    const configFile = path.join(options.dataDir, 'plover-engine.xml');
    await writeFile(configFile, ENGINE_CONFIG);
    const connectionArgs = [...SETTING_ARGS, `--config-file=${configFile}`];
    const connect = () => new Session(options.dataDir, { connectionArgs });
    const sessions: Session[] = [];
    try {
      for (let i = 0; i < count; i++) sessions.push(connect());
    } catch (error) {
      for (const session of sessions) session.close();
      throw classify(`chDB open ${options.dataDir}`, error);
    }
    restoreDefaultSignalActions();
    return new ChdbClickHouse(sessions, connect);
  }

  async command(name: string, sql: string, params?: ClickHouseParams): Promise<void> {
    // The Null format: a command's output (if any) is not wanted, so the engine need not even format it.
    await this.run(`ClickHouse command ${name}`, (session) => execute(session, sql, params, 'Null'));
  }

  async query<R = Record<string, unknown>>(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<R[]> {
    return this.run(`ClickHouse query ${name}`, async (session) =>
      parseJsonEachRow<R>(await execute(session, withSettings(sql, settings), params, 'JSONEachRow')),
    );
  }

  async queryRaw(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<Buffer> {
    return this.run(`ClickHouse query ${name}`, async (session) => {
      const bytes = (await execute(session, withSettings(sql, settings), params, 'TabSeparatedRaw')).bytes();
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    });
  }

  /**
   * On a connection of its own (opened at the first stream, kept for the next), not one of the pool's: an export
   * streams for minutes, and the pool's few connections serve every other statement meanwhile. Each chunk is one
   * fetch on a libuv thread; the engine runs ahead of the consumer by at most the block it is writing. chdb formats
   * each chunk on its own (a format's header or footer would repeat in every chunk), hence a row format only.
   */
  async *queryRawStream(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): AsyncIterable<Uint8Array> {
    const operation = `ClickHouse query ${name}`;
    if (this.closing) throw closedFailure(operation);
    let session: Session;
    try {
      session = this.idleStreams.pop() ?? this.connect();
    } catch (error) {
      throw classify(operation, error);
    }
    this.streaming.add(session);
    let clean = false;
    try {
      const text = withSettings(sql, settings);
      const stream =
        params && Object.keys(params).length > 0
          ? session.queryStreamBind(text, normalizeParams(params), { format: 'TabSeparatedRaw' })
          : session.queryStream(text, { format: 'TabSeparatedRaw' });
      for await (const chunk of stream) {
        if (this.closing) throw closedFailure(operation);
        yield chunk.raw();
      }
      clean = true;
    } catch (error) {
      throw classify(operation, error);
    } finally {
      this.streaming.delete(session);
      // A stream broken off or failed may leave output behind on its connection (see flushLeftovers): closed, not kept.
      if (clean && !this.closing) this.idleStreams.push(session);
      else session.close();
    }
  }

  async queryRows(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<RowsResult> {
    return this.run(`ClickHouse query ${name}`, async (session) =>
      compactRows(JSON.parse((await execute(session, withSettings(sql, settings), params, 'JSONCompact')).text()) as CompactResult),
    );
  }

  async insert(table: string, rows: readonly Record<string, unknown>[]): Promise<void> {
    assertTableName(table);
    if (rows.length === 0) return;
    await this.run(`ClickHouse insert into ${table}`, (session) => {
      // The same JSONEachRow text @clickhouse/client sends, handed over as bytes for the engine to parse
      // (chdb's row-array insert would instead build a VALUES statement in JS).
      const values = Buffer.from(rows.map((row) => JSON.stringify(row)).join('\n'), 'utf8');
      return session.insert({ table, values, format: 'JSONEachRow' });
    });
    this.unsynced.add(table);
  }

  /**
   * The insert itself fsyncs its part's files and directory (ENGINE_CONFIG), but the rename that puts the part
   * in place is an entry of the table's directory, which ClickHouse does not fsync: a power loss could take the
   * part back to its temporary name, which the engine deletes when it starts. This fsyncs the directories of
   * the tables inserted into since the last call, so every insert resolved before it survives a power loss.
   */
  async sync(): Promise<void> {
    const tables = [...this.unsynced];
    this.unsynced.clear();
    try {
      for (const table of tables) for (const dir of await this.tableDirectories(table)) await fsyncPath(dir);
    } catch (error) {
      // A table dropped and created again has another directory: look them up afresh next time.
      this.tableDirs.clear();
      for (const table of tables) this.unsynced.add(table);
      throw classify('chDB sync', error);
    }
  }

  async ping(): Promise<void> {
    await this.run('ClickHouse ping', (session) => session.queryAsync('SELECT 1', { format: 'Null' }));
  }

  /**
   * Lets every call already made finish, then destroys the connections. When it resolves the data directory is
   * released, so another ChdbClickHouse (on any directory) can open in this process. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      // Taking every connection through the same queue as the calls means those queued earlier run first and
      // none is still running on a connection when it is destroyed.
      const sessions = await Promise.all(this.sessions.map(() => this.acquire()));
      for (const session of sessions) session.close();
      // chdb cancels a stream still open on a connection it closes, after the fetch in flight (if any).
      for (const session of [...this.idleStreams, ...this.streaming]) session.close();
      // chdb still defers a destruction while native calls of OTHER handles run; wait for those too, since
      // the directory is only free once the last connection is really gone.
      await drainPending();
    })();
    return this.closing;
  }

  private async tableDirectories(table: string): Promise<readonly string[]> {
    let dirs = this.tableDirs.get(table);
    if (!dirs) {
      const [database, name] = table.includes('.') ? table.split('.') : [undefined, table];
      const [row] = await this.query<{ data_paths: string[] }>(
        'chDB table directories',
        "SELECT data_paths FROM system.tables WHERE database = if({database:String} = '', currentDatabase(), {database:String}) AND name = {name:String}",
        { database: database ?? '', name },
      );
      dirs = row?.data_paths ?? [];
      this.tableDirs.set(table, dirs);
    }
    return dirs;
  }

  private async run<T>(operation: string, call: (session: Session) => Promise<T>): Promise<T> {
    if (this.closing) throw closedFailure(operation);
    const session = await this.acquire();
    try {
      return await call(session);
    } catch (error) {
      await flushLeftovers(session);
      throw classify(operation, error);
    } finally {
      this.release(session);
    }
  }

  private acquire(): Promise<Session> {
    const session = this.idle.pop();
    return session ? Promise.resolve(session) : new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(session: Session): void {
    const next = this.waiting.shift();
    if (next) next(session);
    else this.idle.push(session);
  }
}

/** The signals the engine takes over when it starts (see the module). */
const ENGINE_SIGNALS: readonly NodeJS.Signals[] = ['SIGABRT', 'SIGSEGV', 'SIGBUS', 'SIGILL', 'SIGFPE', 'SIGSYS', 'SIGTRAP', 'SIGTSTP'];

/**
 * libuv installs its handler for a signal's first listener and restores the default action when the last one
 * is removed, so adding and removing one listener replaces the engine's handler with SIG_DFL.
 */
function restoreDefaultSignalActions(): void {
  const ignore = () => {};
  for (const signal of ENGINE_SIGNALS) process.on(signal, ignore).off(signal, ignore);
}

/**
 * A statement that fails after it produced output (a limit such as max_result_rows or max_execution_time hit
 * part-way) leaves that output in its connection, and chdb hands it out in front of the NEXT statement's result
 * on the connection (chdb 3.4.0): another caller would read rows of a query it never ran. One throw-away
 * statement takes them, so the connection goes back to the pool clean.
 */
async function flushLeftovers(session: Session): Promise<void> {
  try {
    await session.queryAsync('SELECT 1', { format: 'Null' });
  } catch {
    // The connection could not even run this; the next real statement reports that itself.
  }
}

function execute(session: Session, sql: string, params: ClickHouseParams | undefined, format: string): Promise<ChdbResult> {
  // chdb serializes every bound call in the process (see above); don't pay for that when nothing is bound.
  return params && Object.keys(params).length > 0 ? session.queryBindAsync(sql, normalizeParams(params), { format }) : session.queryAsync(sql, { format });
}

function parseJsonEachRow<R>(result: ChdbResult): R[] {
  const rows: R[] = [];
  for (const line of result.text().split('\n')) if (line !== '') rows.push(JSON.parse(line) as R);
  return rows;
}

/**
 * chDB errors carry the engine's numeric `clickhouseCode` when ClickHouse raised them, else chdb's own `code`; a
 * streamed statement's failure carries neither, only the engine's message (`Code: N. DB::Exception: …`).
 */
function classify(operation: string, error: unknown): StorageError {
  if (error instanceof StorageError) return error;
  const { clickhouseCode, code, message } = (error ?? {}) as { clickhouseCode?: unknown; code?: unknown; message?: unknown };
  if (typeof clickhouseCode === 'number') return clickHouseFailure(operation, clickhouseCode, error);
  const engineCode = typeof message === 'string' ? /^Code: (\d+)\. DB::Exception/.exec(message) : null;
  if (engineCode) return clickHouseFailure(operation, Number(engineCode[1]), error);
  return unclassifiedFailure(operation, error, typeof code === 'string' ? code : undefined);
}
