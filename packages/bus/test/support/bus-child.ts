/**
 * A child process of the bus contract suite, which kills it with SIGKILL in the middle of its work:
 *
 *   produce <topic>          produces 1 KB messages with ids 0, 1, 2, … from concurrent loops and prints
 *                            `acked <first id> <count>` each time a produce call resolves
 *   consume <topic> <group>  prints `handled <id> <id> …` for the first batch it gets and never finishes
 *                            handling it, so its offsets are never committed
 *
 * The bus comes from the environment the parent built with childEnvironment (see adapters.ts).
 * Run from the repository root: node --conditions=plover-source --import tsx packages/bus/test/support/bus-child.ts …
 */
import type { EventBus } from '@plover/bus';
import { openChildBus } from './adapters';
import { messageId, messageValue } from './messages';

/** Several produce calls in flight at once, so that a kill lands in the middle of a group commit. */
const PRODUCE_LOOPS = 4;
const BATCH = 20;

async function produceForever(bus: EventBus, topic: string): Promise<never> {
  let nextId = 0;
  const loop = async (): Promise<never> => {
    for (;;) {
      const first = nextId;
      nextId += BATCH;
      const ids = Array.from({ length: BATCH }, (_, i) => first + i);
      await bus.produce(
        topic,
        ids.map((id) => ({ key: `key-${id % 37}`, value: messageValue(id) })),
      );
      // Writes to a pipe are synchronous on Linux: once this returns, the parent will read the line.
      process.stdout.write(`acked ${first} ${BATCH}\n`);
    }
  };
  return Promise.race(Array.from({ length: PRODUCE_LOOPS }, loop));
}

async function consumeFirstBatchForever(bus: EventBus, topic: string, groupId: string): Promise<void> {
  await bus.consume({
    groupId,
    topics: [topic],
    handleBatch: (batch) => {
      process.stdout.write(`handled ${batch.messages.map((message) => messageId(message.value)).join(' ')}\n`);
      return new Promise<void>(() => undefined);
    },
  });
}

async function main(): Promise<void> {
  const [mode, topic, groupId] = process.argv.slice(2);
  const bus = await openChildBus(process.env);
  if (mode === 'produce' && topic) await produceForever(bus, topic);
  else if (mode === 'consume' && topic && groupId) await consumeFirstBatchForever(bus, topic, groupId);
  else throw new Error(`usage: bus-child.ts produce <topic> | consume <topic> <group> (got ${process.argv.slice(2).join(' ')})`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
