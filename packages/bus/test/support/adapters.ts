/**
 * The adapters the bus contract suite (bus.contract.test.ts) runs against: LocalLogBus always, KafkaBus when a
 * broker is configured (kafka-factory.ts). Child processes of the suite (bus-child.ts) open their bus through
 * openChildBus, from the environment a harness hands out.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { LocalLogBus } from '@plover/bus';
import type { EventBus } from '@plover/bus';
import { PortBus, serveBus } from '@plover/bus/over-port';
import { PortRpc } from '@plover/core';
import { kafkaFactory } from './kafka-factory';

/** Storage opened for one test: the bus on it, and what is needed to reopen it here or in a child process. */
export interface BusHarness {
  /** The open bus; replaced by `reopen`. */
  readonly bus: EventBus;
  /** Closes `bus` if still open and opens a new one on the same storage, as a restarted process would. */
  reopen(): Promise<EventBus>;
  /**
   * Variables under which `openChildBus` opens this storage in a child process. Close `bus` first: LocalLogBus
   * lets one process at a time own its data directory.
   */
  readonly childEnv: Record<string, string>;
  /** Closes the bus and removes what the harness created. */
  cleanup(): Promise<void>;
}

export interface BusFactory {
  name: string;
  open(): Promise<BusHarness>;
  /** Opens the bus a harness's `childEnv` describes (called in the child process). */
  openFromEnv(env: NodeJS.ProcessEnv): Promise<EventBus>;
  /** How long a test may wait for deliveries that must come (a Kafka group takes seconds to form). */
  deliveryTimeoutMs: number;
  /** How long a test watches for deliveries that must not come (after pause, after a commit). */
  quietMs: number;
}

/** Part of every topic and group name: Kafka is shared across runs, so names must never repeat. */
const runId = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
let sequence = 0;

export function uniqueName(label: string): string {
  return `plover-bus-test-${runId}-${label}-${++sequence}`;
}

/** The variable that names, in a child process, which factory opens the bus. */
const ADAPTER_VARIABLE = 'TEST_BUS_ADAPTER';

export const localLogFactory: BusFactory = {
  name: 'LocalLogBus',
  async open() {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'plover-bus-'));
    let bus: EventBus = await LocalLogBus.open({ dataDir });
    return {
      get bus() {
        return bus;
      },
      async reopen() {
        await bus.close();
        bus = await LocalLogBus.open({ dataDir });
        return bus;
      },
      childEnv: { TEST_BUS_DATA_DIR: dataDir },
      async cleanup() {
        await bus.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  },
  openFromEnv: (env) => LocalLogBus.open({ dataDir: required(env, 'TEST_BUS_DATA_DIR') }),
  deliveryTimeoutMs: 10_000,
  quietMs: 300,
};

/** A bus used through a MessagePort (as embedded mode's ingestion thread uses the main thread's); closing it closes the bus. */
class BusThroughPort extends PortBus {
  private constructor(
    private readonly owner: EventBus,
    private readonly ownerSide: PortRpc,
    clientSide: PortRpc,
  ) {
    super(clientSide);
  }

  static over(owner: EventBus): BusThroughPort {
    const { port1, port2 } = new MessageChannel();
    const ownerSide = new PortRpc(port1);
    serveBus(ownerSide, owner);
    return new BusThroughPort(owner, ownerSide, new PortRpc(port2));
  }

  override async close(): Promise<void> {
    await super.close();
    // The owner first: closing a bus commits what its consumers handled, as a local bus's close does.
    await this.owner.close();
    this.ownerSide.close();
  }
}

/** LocalLogBus behind serveBus/PortBus: the same contract must hold through the port. */
export const portFactory: BusFactory = {
  ...localLogFactory,
  name: 'LocalLogBus through a MessagePort',
  async open() {
    const local = await localLogFactory.open();
    let bus: EventBus = BusThroughPort.over(local.bus);
    return {
      get bus() {
        return bus;
      },
      async reopen() {
        await bus.close();
        bus = BusThroughPort.over(await local.reopen());
        return bus;
      },
      childEnv: local.childEnv,
      async cleanup() {
        await bus.close();
        await local.cleanup();
      },
    };
  },
  openFromEnv: async (env) => BusThroughPort.over(await localLogFactory.openFromEnv(env)),
};

export function busFactories(): BusFactory[] {
  const kafka = kafkaFactory();
  return kafka ? [localLogFactory, portFactory, kafka] : [localLogFactory, portFactory];
}

/** The environment of a child process that opens `harness`'s storage with `factory`. */
export function childEnvironment(factory: BusFactory, harness: BusHarness): NodeJS.ProcessEnv {
  return { ...process.env, ...harness.childEnv, [ADAPTER_VARIABLE]: factory.name };
}

/** In a child process: opens the bus its parent described with `childEnvironment`. */
export function openChildBus(env: NodeJS.ProcessEnv): Promise<EventBus> {
  const name = required(env, ADAPTER_VARIABLE);
  const factory = busFactories().find((candidate) => candidate.name === name);
  if (!factory) throw new Error(`${ADAPTER_VARIABLE}=${name} names no bus factory`);
  return factory.openFromEnv(env);
}

function required(env: NodeJS.ProcessEnv, variable: string): string {
  const value = env[variable];
  if (!value) throw new Error(`${variable} is not set`);
  return value;
}
