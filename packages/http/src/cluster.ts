import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client';
import type { Logger } from '@plover/core';
import type { ServiceApp } from './app';
import { createMetricsRegistry, type WorkersStatus, type WorkersView } from './health';
import { listen, onShutdown, serve, type ListenOptions } from './server';

/**
 * A limit by key (a token, a project): whether `cost` more units may pass now, counting them when they do. In
 * one process it answers at once; a cluster worker asks its primary, which holds the only count.
 */
export interface Admission<K extends string | number> {
  admit(key: K, cost?: number): boolean | Promise<boolean>;
}

/** A service's named limits; a limit that is off is undefined. */
export type Limits<L> = { [name in keyof L]?: Admission<string> | Admission<number> };

/** What the service's `start` is given, in the process that serves (the only one, or each worker). */
export interface ServiceInstance<L> {
  logger: Logger;
  /** The service registers its metrics here; its `/metrics` answers for the whole service (every worker). */
  metrics: Registry;
  /** The limits, counted once for the whole service. */
  limits: L;
  /** In a cluster worker: the primary's view of the workers, for `/_health` and `/_ready`. */
  workers?: WorkersView;
}

export interface ServiceParts {
  app: ServiceApp;
  /** Runs after the server stopped accepting and its open requests finished (SIGTERM). */
  closeResources: () => Promise<void>;
}

export interface ServiceOptions<L> {
  /** The `service` label of every metric. */
  service: string;
  /** 1 serves in this process; more fork that many `node:cluster` workers sharing the port. */
  workers: number;
  http: ListenOptions;
  logger: Logger;
  /** Builds the limits where they are counted: this process, or a cluster's primary (never in a worker). */
  limits(): L;
  /** Builds the service in each process that serves. */
  start(instance: ServiceInstance<L>): ServiceParts | Promise<ServiceParts>;
}

const ADMIT_TIMEOUT_MS = 1_000;
const COLLECT_TIMEOUT_MS = 2_000;
const METRICS_TIMEOUT_MS = 5_000;
const STATUS_TIMEOUT_MS = 2_000;
/** A worker that exits before it listens is started again after this, doubling up to the maximum. */
const RESTART_DELAY_MS = 250;
const MAX_RESTART_DELAY_MS = 10_000;

/**
 * Serves an HTTP service: in this process (`workers` 1, exactly as `serve` does), or in `workers` cluster
 * workers behind one port. In a cluster the primary serves no request itself: it hands connections to the
 * workers (node's round robin), starts a worker again when one exits, holds the limits that workers ask for over
 * IPC (a request admitted anywhere counts everywhere), answers `/metrics` summed over every process (a worker
 * that receives the request asks it), and on SIGTERM or SIGINT has every worker drain before it exits.
 */
export function runService<L extends Limits<L>>(options: ServiceOptions<L>): void {
  const failed = (error: unknown) => {
    options.logger.fatal({ err: error }, 'failed to start');
    process.exit(1);
  };
  if (cluster.isWorker) runWorker(options).catch(failed);
  else if (options.workers > 1) runPrimary(options);
  else runAlone(options).catch(failed);
}

async function runAlone<L extends Limits<L>>(options: ServiceOptions<L>): Promise<void> {
  const { logger } = options;
  const parts = await options.start({ logger, metrics: createMetricsRegistry(options.service), limits: options.limits() });
  await serve(parts.app, { ...options.http, logger, closeResources: parts.closeResources });
}

// ---- IPC between the primary and a worker ----

type Envelope = { plover: 'ask'; id: number; kind: string; body?: unknown } | { plover: 'answer'; id: number; body?: unknown };

type Handlers = Record<string, (body: unknown) => unknown>;

function isEnvelope(message: unknown): message is Envelope {
  return typeof message === 'object' && message !== null && ((message as Envelope).plover === 'ask' || (message as Envelope).plover === 'answer');
}

/** One end of the channel between the primary and a worker: asks with an id, answers what the other end asks. */
class Peer {
  private nextId = 0;
  private readonly pending = new Map<number, (body: unknown) => void>();

  constructor(
    private readonly send: (envelope: Envelope) => void,
    private readonly handlers: Handlers,
  ) {}

  /** The other end's answer; undefined when none came within `timeoutMs` or the channel closed. */
  ask(kind: string, body: unknown, timeoutMs: number): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.settle(id, undefined), timeoutMs);
      this.pending.set(id, (answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
      this.send({ plover: 'ask', id, kind, body });
    });
  }

  /** Asks without waiting for the answer. */
  tell(kind: string): void {
    this.send({ plover: 'ask', id: this.nextId++, kind });
  }

  receive(message: unknown): void {
    if (!isEnvelope(message)) return;
    if (message.plover === 'answer') {
      this.settle(message.id, message.body);
      return;
    }
    const handler = this.handlers[message.kind];
    if (!handler) return;
    // A handler that fails answers nothing: the asker's timeout covers it.
    new Promise((resolve) => resolve(handler(message.body))).then(
      (body) => this.send({ plover: 'answer', id: message.id, body }),
      () => undefined,
    );
  }

  /** The channel closed: every pending question resolves without an answer. */
  close(): void {
    for (const id of [...this.pending.keys()]) this.settle(id, undefined);
  }

  private settle(id: number, body: unknown): void {
    const resolve = this.pending.get(id);
    if (!resolve) return;
    this.pending.delete(id);
    resolve(body);
  }
}

const ignoreSendError = () => undefined;

// ---- the primary ----

type AdmitRequest = Array<[name: string, key: string | number, cost: number]>;

function runPrimary<L extends Limits<L>>(options: ServiceOptions<L>): void {
  const { logger, workers: configured } = options;
  const metrics = createMetricsRegistry(options.service);
  const listeningGauge = new Gauge({ name: 'plover_workers_listening', help: 'Cluster workers serving the port', registers: [metrics] });
  const restartCounter = new Counter({
    name: 'plover_worker_restarts_total',
    help: 'Cluster workers started again after one exited unexpectedly',
    registers: [metrics],
  });
  const limits = options.limits() as Record<string, Admission<string | number> | undefined>;
  const peers = new Map<Worker, Peer>();
  const listening = new Set<Worker>();
  let started = false;
  let stopping = false;
  let restarts = 0;
  /** Workers in a row that exited before listening; resets when one listens. */
  let failedStarts = 0;
  let stopped: ((clean: boolean) => void) | undefined;
  let clean = true;

  const status = (): WorkersStatus => ({ configured, listening: listening.size, restarts, stopping });

  async function admit(body: unknown): Promise<boolean[]> {
    return Promise.all((body as AdmitRequest).map(async ([name, key, cost]) => (await limits[name]?.admit(key, cost)) ?? true));
  }

  /** Every process's metrics, the primary's own included, combined by each metric's aggregator (sum unless it says otherwise). */
  async function collect(): Promise<string> {
    const parts = await Promise.all([...peers.values()].map((peer) => peer.ask('collect', undefined, COLLECT_TIMEOUT_MS)));
    const own = await metrics.getMetricsAsJSON();
    return AggregatorRegistry.aggregate([own, ...parts.filter((part): part is object[] => Array.isArray(part))]).metrics();
  }

  function fork(): void {
    const worker = cluster.fork();
    const peer = new Peer(
      (envelope) => {
        if (worker.isConnected()) worker.send(envelope, undefined, ignoreSendError);
      },
      { admit, metrics: collect, status },
    );
    peers.set(worker, peer);
    worker.on('message', (message) => peer.receive(message));
  }

  cluster.on('listening', (worker, address) => {
    listening.add(worker);
    listeningGauge.set(listening.size);
    failedStarts = 0;
    if (!started && listening.size === configured) {
      started = true;
      logger.info({ port: address.port, host: options.http.host, workers: configured }, 'listening');
    }
  });

  cluster.on('exit', (worker, code, signal) => {
    const wasListening = listening.delete(worker);
    listeningGauge.set(listening.size);
    peers.get(worker)?.close();
    peers.delete(worker);
    if (stopping) {
      if (code !== 0) clean = false;
      if (peers.size === 0) stopped?.(clean);
      return;
    }
    if (!started) {
      // Nothing served yet (a port in use, a failing start): exit as one process would, the others with us.
      logger.fatal({ worker: worker.id, code, signal }, 'a worker failed to start');
      process.exit(1);
    }
    if (!wasListening) failedStarts++;
    const delay = failedStarts === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, RESTART_DELAY_MS * 2 ** (failedStarts - 1));
    restarts++;
    restartCounter.inc();
    logger.error({ worker: worker.id, code, signal, restartInMs: delay }, 'worker exited; starting another');
    setTimeout(() => {
      if (!stopping) fork();
    }, delay);
  });

  onShutdown(
    logger,
    () =>
      new Promise<void>((resolve, reject) => {
        stopping = true;
        stopped = (allClean) => (allClean ? resolve() : reject(new Error('a worker did not stop cleanly')));
        if (peers.size === 0) stopped(clean);
        for (const peer of peers.values()) peer.tell('shutdown');
      }),
  );

  for (let i = 0; i < configured; i++) fork();
}

// ---- a worker ----

/** A worker's registry: its own metrics as any registry's, and `/metrics` (`metrics()`) from the primary, for every process. */
class ClusterMetricsRegistry extends Registry {
  constructor(private readonly primary: Peer) {
    super();
  }

  override async metrics(): Promise<string> {
    const text = await this.primary.ask('metrics', undefined, METRICS_TIMEOUT_MS);
    if (typeof text !== 'string') throw new Error('the cluster primary did not answer for the metrics');
    return text;
  }
}

/**
 * The worker's side of each limit that is on: admissions asked within one turn of the event loop go to the
 * primary in one message. Without an answer (the primary is gone or stuck) requests are admitted: a limit
 * that cannot be counted must not refuse traffic.
 */
function remoteLimits<L extends Limits<L>>(local: L, primary: Peer, logger: Logger): L {
  let batch: Array<{ name: string; key: string | number; cost: number; resolve: (allowed: boolean) => void }> = [];
  async function flush(): Promise<void> {
    const sent = batch;
    batch = [];
    const allowed = await primary.ask(
      'admit',
      sent.map(({ name, key, cost }) => [name, key, cost]),
      ADMIT_TIMEOUT_MS,
    );
    if (!Array.isArray(allowed)) logger.warn({ admissions: sent.length }, 'the cluster primary did not answer for the limits; admitted');
    sent.forEach((admission, i) => admission.resolve(Array.isArray(allowed) ? allowed[i] === true : true));
  }
  const remote: Record<string, Admission<string | number>> = {};
  for (const [name, limit] of Object.entries(local)) {
    if (!limit) continue;
    remote[name] = {
      admit: (key, cost = 1) =>
        new Promise((resolve) => {
          if (batch.length === 0) setImmediate(() => void flush());
          batch.push({ name, key, cost, resolve });
        }),
    };
  }
  return remote as L;
}

async function runWorker<L extends Limits<L>>(options: ServiceOptions<L>): Promise<void> {
  const logger = options.logger.child({ worker: cluster.worker!.id });
  let askToStop = (): void => undefined;
  const stopAsked = new Promise<void>((resolve) => (askToStop = resolve));
  const primary = new Peer((envelope) => process.send?.(envelope, undefined, undefined, ignoreSendError), {
    collect: () => metrics.getMetricsAsJSON(),
    shutdown: () => askToStop(),
  });
  const metrics = createMetricsRegistry(options.service, new ClusterMetricsRegistry(primary));
  process.on('message', (message) => primary.receive(message));
  process.on('SIGTERM', () => askToStop());
  // An interrupt from a terminal reaches every process of the group; the primary's reaches the workers as `shutdown`.
  process.on('SIGINT', () => undefined);

  const parts = await options.start({
    logger,
    metrics,
    limits: remoteLimits(options.limits(), primary, logger),
    workers: { status: async () => (await primary.ask('status', undefined, STATUS_TIMEOUT_MS)) as WorkersStatus | undefined },
  });
  const running = await listen(parts.app, options.http);
  logger.info({ port: running.port }, 'worker listening');
  await stopAsked;
  logger.info('worker draining');
  try {
    await running.close();
    await parts.closeResources();
  } catch (error) {
    logger.error({ err: error }, 'worker shutdown failed');
    process.exit(1);
  }
  process.exit(0);
}
