import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync, fsyncSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { NodeFS } from '@electric-sql/pglite/nodefs';
import { DiskWatch, formatBytes, freeBytes, isDiskFull, StorageError, syncTreeAndParent } from '@plover/core';
import { toStorageError } from './errors';
import { WritesRefusedWhen } from './read-only';
import type { QueryResult, Sql, SqlExecutor } from './sql';
import { RESULT_PARSERS } from './types';

export interface PGliteSqlOptions {
  /** Directory holding the database files; undefined keeps the database in memory (tests). */
  dataDir?: string;
  /**
   * Fail at once when a transaction callback calls this Sql instead of its transaction's executor (see
   * assertOutsideTransaction). On by default, so every test catches that mistake. It follows the callback with
   * AsyncLocalStorage, which on Node 20 runs async hooks for every promise the process creates: 20–30 % of the
   * embedded server's CPU per captured event (bench/capture.ts, 2026-11-22). The embedded server turns it off.
   */
  guardTransactions?: boolean;
  /** A dumpDataDir() tarball to create the database from; `dataDir` must hold no database yet. */
  load?: Blob;
  /** When an on-disk database checkpoints (see Checkpointer); Postgres' own triggers by default. */
  checkpoint?: Partial<CheckpointPolicy>;
  /** A periodic checkpoint that failed (it is tried again at the next check). */
  onCheckpointError?: (error: unknown) => void;
  /** On disk: below this much free space every statement runs read-only (see PGliteSql.failed); default 48 MiB. */
  minFreeBytes?: number;
}

/** Three WAL segments: room for the WAL to switch to a new one, and for a checkpoint, when writes stop. */
const MIN_FREE_TO_WRITE = 48 * 1024 * 1024;

/**
 * Postgres' checkpointer process, which PGlite's single process does not have: without it nothing recycles the
 * WAL while the database stays open (`pg_wal` passed 1.3 GB under ingestion), and a crash replays all of it.
 */
export interface CheckpointPolicy {
  /** How often the WAL written since the last checkpoint is looked at. */
  checkEveryMs: number;
  /** Checkpoint once this much WAL was written since the last one (Postgres: about half of max_wal_size). */
  walBytes: number;
  /** Checkpoint when the last one is this old and anything was written since (Postgres' checkpoint_timeout). */
  maxAgeMs: number;
}

const DEFAULT_CHECKPOINTS: CheckpointPolicy = { checkEveryMs: 30_000, walBytes: 512 * 1024 * 1024, maxAgeMs: 5 * 60_000 };

/** WAL a checkpoint writes for itself: below this, nothing else was written since the last one. */
const CHECKPOINT_RECORD_BYTES = 4096;

/** How often a Postgres stopped by a disk failure is tried again (when something asks for it). */
const REOPEN_EVERY_MS = 2000;

/**
 * PGlite's top-level handle and its transaction handle offer the same query/exec calls. `check` runs before
 * each call and `failed` sees each failure (PGliteSql's guard against a Postgres a disk failure broke).
 */
function executor(target: PGlite | Transaction, guard: { check(name: string): void; failed(error: StorageError): void }): SqlExecutor {
  const run = async <T>(name: string, call: () => Promise<T>): Promise<T> => {
    guard.check(name);
    try {
      return await call();
    } catch (error) {
      const failure = toStorageError(error, name);
      guard.failed(failure);
      throw failure;
    }
  };
  return {
    async query<R = Record<string, unknown>>(name: string, text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      const result = await run(name, () => target.query<R>(text, params ? [...params] : undefined));
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    },
    async exec(name: string, script: string): Promise<void> {
      await run(name, () => target.exec(script));
    },
  };
}

/**
 * Why PGlite could not open `dataDir` (undefined: it was not tried), naming the disk when it is (nearly) full:
 * PGlite's own failure does not (an object without a message; "PGlite failed to initialize properly" on stderr).
 */
function openFailure(error: unknown, dataDir: string | undefined): StorageError {
  const failure = toStorageError(error ?? new Error('not started'), 'open');
  if (dataDir === undefined || failure.code !== undefined) return failure;
  const free = freeBytes(dataDir);
  if (free >= MIN_FREE_TO_OPEN) return failure;
  return new StorageError(
    `PGlite could not start Postgres in ${dataDir}: its disk has ${formatBytes(free)} free, and Postgres needs ${formatBytes(MIN_FREE_TO_OPEN)} for its WAL`,
    true,
    '53100',
    { cause: error },
  );
}

/** Below this much free space a start is put down to the disk (or not tried): two WAL segments of 16 MB. */
const MIN_FREE_TO_OPEN = 32 * 1024 * 1024;

/** Carries an error thrown by the caller's callback through PGlite's transaction, so it is rethrown unwrapped. */
class CallbackFailure extends Error {
  constructor(readonly error: unknown) {
    super('transaction callback failed');
  }
}

/**
 * PGlite's shared buffers live in this process's memory: Postgres' default 128 MB made an opened database
 * 210 MB of RSS, 16 MB makes it 90 MB (reopening a data dir, measured 2026-11-22). Embedded mode's tables are
 * read through the OS page cache beyond that, which is what one machine's page cache is for.
 */
const MEMORY_SETTINGS = ['shared_buffers=16MB'];

/**
 * A committed transaction must survive a power loss: embedded mode acknowledges events and API writes on it, and
 * the ingestion consumer lets the local log delete what Postgres has committed. PGlite starts Postgres with `-F`
 * (fsync off), which also gives up crash safety: data pages written with no WAL flush before them. So it runs
 * here without `-F`, on SyncingNodeFS (below), with WAL flushed by fsync(): Emscripten's fdatasync() returns
 * success without touching the file, while its fsync() reaches the filesystem's `fsync` stream operation.
 */
const DURABILITY_SETTINGS = ['wal_sync_method=fsync', 'synchronous_commit=on'];
const START_PARAMS = PGlite.defaultStartParams.filter((param) => param !== '-F');

interface EmscriptenStream {
  /** The host file descriptor NODEFS opened for this stream (files and directories alike). */
  nfd: number;
}

interface NodeFsOperations {
  stream_ops: { fsync?: (stream: EmscriptenStream) => number };
}

/**
 * PGlite's NodeFS, whose fsync() is a real fsync of the host file or directory. Emscripten's NODEFS writes
 * through to host descriptors but implements no `fsync` stream operation, so Postgres' fsync() did nothing.
 */
class SyncingNodeFS extends NodeFS {
  override async init(...args: Parameters<NodeFS['init']>): ReturnType<NodeFS['init']> {
    const result = await super.init(...args);
    const preRun = [...(result.emscriptenOpts.preRun ?? [])];
    preRun.push((mod) => {
      // NODEFS is this module instance's own object: the operation reaches only this database's files.
      (mod.NODEFS as unknown as NodeFsOperations).stream_ops.fsync = (stream) => {
        fsyncSync(stream.nfd);
        return 0;
      };
    });
    return { emscriptenOpts: { ...result.emscriptenOpts, preRun } };
  }
}

/**
 * The Sql port on PGlite, in process (embedded mode).
 *
 * Main thread, not PGlite's worker mode: `PGliteWorker` expects a browser-style Worker, elects a leader with
 * `navigator.locks` (absent in Node 20) and loads its database from a separate worker entry module, which
 * would need its own build step outside tsc's CommonJS output and jest's transform. Queries therefore run on
 * the event loop; callers that need throughput cache (docs/architecture.md, ports and adapters).
 *
 * PGlite is one connection. Its `transaction()` and top-level `query()`/`exec()` share one mutex, so a
 * transaction is exclusive and a plain query issued meanwhile waits for it to end instead of running inside it.
 */
export class PGliteSql implements Sql {
  /** Set while this instance's transaction callback runs (when guarded); see assertOutsideTransaction. */
  private readonly transactionScope: AsyncLocalStorage<true> | undefined;
  private checkpointTimer: NodeJS.Timeout | undefined;
  private checkpointRunning: Promise<void> | undefined;
  /** The disk failure that stopped `db`, while it is not reopened yet (see failed()). */
  private broken: { db: PGlite; error: StorageError; lastTry: number } | undefined;
  private reopening: Promise<void> | undefined;
  /** The disk of an on-disk database, looked at once a second; below its floor writes are refused. */
  private disk: DiskWatch | undefined;
  /** This Sql's statements as they are, and read-only while the disk is below its floor. */
  private readonly unguarded: Sql;
  private readonly gated: Sql;
  private readonly guard = (db: PGlite) => ({
    check: (name: string) => {
      if (this.broken?.db === db) throw this.stoppedError(name);
    },
    failed: (error: StorageError) => this.failed(db, error),
  });

  private constructor(
    private db: PGlite,
    guardTransactions: boolean,
    /** Opens the database again (on disk only): after a disk failure. */
    private readonly reopen: (() => Promise<PGlite>) | undefined,
  ) {
    this.transactionScope = guardTransactions ? new AsyncLocalStorage<true>() : undefined;
    const unguarded: Sql = (this.unguarded = {
      query: (name, text, params) => this.run(name, (db) => executor(db, this.guard(db)).query(name, text, params)),
      exec: (name, script) => this.run(name, (db) => executor(db, this.guard(db)).exec(name, script)),
      transaction: (fn) => this.runTransaction(fn),
      ping: () => this.ping(),
      close: () => this.close(),
    });
    this.gated = new WritesRefusedWhen(unguarded, () => this.disk?.lowCause());
  }

  static async open(options: PGliteSqlOptions = {}): Promise<PGliteSql> {
    try {
      // pg_trgm indexes the persons `search` (email contains); real Postgres ships it, PGlite loads it here.
      // Imported dynamically: the contrib modules declare only ESM typings.
      const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
      const common = { parsers: RESULT_PARSERS, extensions: { pg_trgm } };
      const { dataDir } = options;
      if (dataDir === undefined)
        return new PGliteSql(
          await PGlite.create({ ...common, loadDataDir: options.load, postgresqlconf: MEMORY_SETTINGS }),
          options.guardTransactions ?? true,
          undefined,
        );

      // PGlite creates only the last path segment; a fresh install's data dir has no parents yet.
      await mkdir(dataDir, { recursive: true });
      const fresh = !existsSync(path.join(dataDir, 'PG_VERSION'));
      const create = (load?: Blob) =>
        PGlite.create({
          ...common,
          loadDataDir: load,
          fs: new SyncingNodeFS(dataDir),
          startParams: START_PARAMS,
          postgresqlconf: [...MEMORY_SETTINGS, ...DURABILITY_SETTINGS],
        });
      const reopen = async () => {
        // Starting Postgres on a full disk fails after seconds of work (and needs room for its WAL): not tried.
        if (freeBytes(dataDir) < MIN_FREE_TO_OPEN) throw openFailure(undefined, dataDir);
        return create().catch((error: unknown) => Promise.reject(openFailure(error, dataDir)));
      };
      const sql = new PGliteSql(await create(options.load), options.guardTransactions ?? true, reopen);
      const minFreeBytes = options.minFreeBytes ?? MIN_FREE_TO_WRITE;
      const limit = `the ${formatBytes(minFreeBytes)} Postgres keeps for its WAL`;
      if (minFreeBytes > 0) sql.disk = new DiskWatch({ dirs: { postgres: dataDir }, minFreeBytes, limit }).start();
      try {
        await sql.assertDurable();
        // initdb's cluster (or a loaded tarball) was unpacked into the directory without an fsync, and Postgres
        // fsyncs only what it writes itself: make the whole cluster durable once before anything commits on it.
        if (fresh) await syncTreeAndParent(dataDir);
        sql.startCheckpoints({ ...DEFAULT_CHECKPOINTS, ...options.checkpoint }, options.onCheckpointError ?? (() => undefined));
      } catch (error) {
        await sql.close();
        throw error;
      }
      return sql;
    } catch (error) {
      throw openFailure(error, options.dataDir);
    }
  }

  async query<R = Record<string, unknown>>(name: string, text: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
    this.assertOutsideTransaction(name);
    return this.gated.query<R>(name, text, params);
  }

  async exec(name: string, script: string): Promise<void> {
    this.assertOutsideTransaction(name);
    return this.gated.exec(name, script);
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    this.assertOutsideTransaction('transaction');
    return this.gated.transaction(fn);
  }

  private async run<T>(name: string, call: (db: PGlite) => Promise<T>): Promise<T> {
    return call(await this.usable(name));
  }

  private async runTransaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const db = await this.usable('transaction');
    const guard = this.guard(db);
    let abandon!: (failure: CallbackFailure) => void;
    const abandoned = new Promise<never>((_resolve, reject) => (abandon = reject));
    const callback = async (tx: Transaction): Promise<T> => {
      try {
        return await fn(executor(tx, guard));
      } catch (error) {
        if (this.broken?.db !== db) throw new CallbackFailure(error);
        // PGlite would now send ROLLBACK to a Postgres that a disk failure left unable to answer (it spins).
        // The caller gets its error; this callback never ends, so PGlite sends nothing more to that instance.
        abandon(new CallbackFailure(error));
        return new Promise<never>(() => undefined);
      }
    };
    const scope = this.transactionScope;
    try {
      return await Promise.race([db.transaction((tx) => (scope ? scope.run(true, callback, tx) : callback(tx))), abandoned]);
    } catch (error) {
      if (error instanceof CallbackFailure) throw error.error;
      // BEGIN, COMMIT (25P02 when the callback swallowed an error) or ROLLBACK failed.
      const failure = toStorageError(error, 'transaction');
      guard.failed(failure);
      throw failure;
    }
  }

  async ping(): Promise<void> {
    await this.query('ping', 'SELECT 1');
  }

  async close(): Promise<void> {
    this.disk?.stop();
    clearInterval(this.checkpointTimer);
    await this.checkpointRunning;
    await this.reopening;
    // A broken instance is left alone: closing it would checkpoint, which spins as any statement would.
    if (!this.db.closed && this.broken?.db !== this.db) await this.db.close();
  }

  /**
   * After a disk failure (no space, an I/O error) PGlite's Postgres may be unable to answer again: the WAL
   * write that failed leaves its single process in a state where the next statement spins at 100 % CPU
   * forever (measured on 0.5.16 with a WAL segment that could not be created). Real Postgres would PANIC and
   * restart into crash recovery. So the instance gets no further statement: every call fails at once with the
   * disk failure, and the database is reopened (crash recovery from the last checkpoint, as after a crash) once a
   * call comes after REOPEN_EVERY_MS and the disk has room again. What committed before the failure is kept.
   */
  private failed(db: PGlite, error: StorageError): void {
    if (this.reopen === undefined || this.broken || db !== this.db || !isDiskFull(error)) return;
    this.broken = { db, error, lastTry: Date.now() };
  }

  private stoppedError(name: string): StorageError {
    const cause = this.broken!.error;
    return new StorageError(`${name}: Postgres stopped after a disk failure and reopens once there is room (${cause.message})`, true, cause.code, {
      cause,
    });
  }

  /** The PGlite to run a statement on: reopened after a disk failure when it is time to try, else a fast failure. */
  private async usable(name: string): Promise<PGlite> {
    const { broken, reopen } = this;
    if (!broken || !reopen) return this.db;
    if (!this.reopening && Date.now() - broken.lastTry >= REOPEN_EVERY_MS) {
      broken.lastTry = Date.now();
      this.reopening = reopen()
        .then((db) => {
          this.db = db;
          this.broken = undefined;
        })
        .catch((error: unknown) => {
          broken.error = toStorageError(error, 'reopen');
        })
        .finally(() => (this.reopening = undefined));
    }
    await this.reopening;
    if (this.broken) throw this.stoppedError(name);
    return this.db;
  }

  private startCheckpoints(policy: CheckpointPolicy, onError: (error: unknown) => void): void {
    this.checkpointTimer = setInterval(() => {
      if (this.checkpointRunning) return;
      this.checkpointRunning = this.checkpointIfDue(policy)
        .catch(onError)
        .finally(() => (this.checkpointRunning = undefined));
    }, policy.checkEveryMs);
    this.checkpointTimer.unref();
  }

  private async checkpointIfDue(policy: CheckpointPolicy): Promise<void> {
    const { rows } = await this.query<{ written: string; age_ms: string }>(
      'checkpoint.due',
      `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn)::text AS written,
              (extract(epoch FROM now() - checkpoint_time) * 1000)::bigint::text AS age_ms
         FROM pg_control_checkpoint()`,
    );
    const written = Number(rows[0]!.written);
    if (written >= policy.walBytes || (written > CHECKPOINT_RECORD_BYTES && Number(rows[0]!.age_ms) >= policy.maxAgeMs)) {
      // Also below the disk's floor: a checkpoint lets Postgres recycle the WAL it has written.
      await this.unguarded.exec('checkpoint', 'CHECKPOINT');
    }
  }

  /**
   * The database as a tarball for PGliteSqlOptions.load, taken after a checkpoint so that it holds every
   * committed transaction in its data files. Held in memory whole.
   */
  async dump(): Promise<Blob> {
    await this.exec('dump.checkpoint', 'CHECKPOINT');
    try {
      return await (await this.usable('dump')).dumpDataDir('none');
    } catch (error) {
      throw toStorageError(error, 'dump');
    }
  }

  /** Refuses a Postgres that would acknowledge commits it has not made durable (a PGlite that ignores the settings). */
  private async assertDurable(): Promise<void> {
    const { rows } = await this.query<{ name: string; setting: string }>(
      'durability',
      "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method')",
    );
    const actual = Object.fromEntries(rows.map((row) => [row.name, row.setting]));
    const expected = { fsync: 'on', synchronous_commit: 'on', wal_sync_method: 'fsync' };
    if (Object.entries(expected).some(([name, setting]) => actual[name] !== setting)) {
      throw new StorageError(`PGlite runs with ${JSON.stringify(actual)}, not ${JSON.stringify(expected)}: commits would not be durable`, false, undefined);
    }
  }

  /**
   * Inside a transaction callback the Sql itself would wait for that very transaction to end: a deadlock
   * that hangs embedded mode while the same code runs on a pg pool. Fail at once instead (when guarded).
   */
  private assertOutsideTransaction(name: string): void {
    if (this.transactionScope?.getStore()) {
      throw new StorageError(`${name}: called on the Sql inside its own transaction; use the transaction's executor`, false, undefined);
    }
  }
}
