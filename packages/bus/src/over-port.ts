/**
 * The EventBus port across threads: `serveBus` answers, on the thread that owns a bus, the calls a `PortBus`
 * makes from another thread. Embedded mode's LocalLogBus is owned by the main thread (capture appends to it)
 * while ingestion consumes in a worker thread (services/standalone).
 *
 * A subscription made through a PortBus is a consumer of the owner's bus whose `handleBatch` is a call to the
 * worker: the owner commits a batch's offsets only once the worker's handler resolved, exactly as for a local
 * handler, so the bus's guarantees (at least once, order per partition, commit after handling) are unchanged.
 * If the worker's thread ends, its pending batches fail (and are redelivered) and its consumers are stopped.
 */
import { asBuffer, PortRpc, StorageError } from '@plover/core';
import type { Batch, ConsumeOptions, Consumer, EventBus, OutgoingMessage } from './port';

type Subscription = Omit<ConsumeOptions, 'handleBatch'>;

/** Answers `rpc`'s bus calls with `bus`, until the other side goes away. */
export function serveBus(rpc: PortRpc, bus: EventBus): void {
  const consumers = new Map<number, Consumer>();
  const consumer = (id: number): Consumer => {
    const found = consumers.get(id);
    if (!found) throw new Error(`consumer ${id} does not exist`);
    return found;
  };
  rpc
    .handle('bus.produce', (topic: string, messages: readonly OutgoingMessage[]) =>
      bus.produce(
        topic,
        messages.map((message) => ({ ...message, value: asBuffer(message.value) })),
      ),
    )
    .handle('bus.ensureTopics', (topics: readonly string[]) => bus.ensureTopics(topics))
    .handle('bus.ping', () => bus.ping())
    .handle('bus.consume', async (id: number, subscription: Subscription) => {
      consumers.set(id, await bus.consume({ ...subscription, handleBatch: (batch) => rpc.call('bus.batch', id, batch) }));
    })
    .handle('bus.pause', (id: number) => consumer(id).pause())
    .handle('bus.resume', (id: number) => consumer(id).resume())
    .handle('bus.stop', async (id: number) => {
      await consumer(id).stop();
      consumers.delete(id);
    });
  rpc.onClose(() => {
    for (const orphan of consumers.values()) void orphan.stop();
    consumers.clear();
  });
}

/**
 * The EventBus of another thread (see serveBus). Closing it ends this handle only (later calls reject): the
 * owner closes its bus.
 */
export class PortBus implements EventBus {
  private readonly handlers = new Map<number, (batch: Batch) => Promise<void>>();
  private nextConsumer = 0;
  private closed = false;

  constructor(private readonly rpc: PortRpc) {
    rpc.handle('bus.batch', (id: number, batch: Batch) => {
      const handle = this.handlers.get(id);
      if (!handle) throw new Error(`consumer ${id} is not subscribed here`);
      for (const message of batch.messages) message.value = asBuffer(message.value);
      return handle(batch);
    });
  }

  produce(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    return this.call('bus.produce', topic, messages);
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    const { handleBatch, ...subscription } = options;
    const id = this.nextConsumer++;
    this.handlers.set(id, handleBatch);
    try {
      await this.call('bus.consume', id, subscription);
    } catch (error) {
      this.handlers.delete(id);
      throw error;
    }
    return {
      // Synchronous in the port; a failure means the owner is gone, which stops the consumer there anyway.
      pause: () => void this.rpc.call('bus.pause', id).catch(() => {}),
      resume: () => void this.rpc.call('bus.resume', id).catch(() => {}),
      stop: async () => {
        await this.rpc.call('bus.stop', id);
        this.handlers.delete(id);
      },
    };
  }

  ensureTopics(topics: readonly string[]): Promise<void> {
    return this.call('bus.ensureTopics', topics);
  }

  ping(): Promise<void> {
    return this.call('bus.ping');
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private call<T>(method: string, ...args: unknown[]): Promise<T> {
    return this.closed ? Promise.reject(new StorageError(`${method}: the bus handle is closed`, false, undefined)) : this.rpc.call<T>(method, ...args);
  }
}
