import { countEvents } from '@plover/clickhouse';
import type { OutgoingMessage } from '@plover/bus';
import { createProject } from '../../../packages/persons/test/support/stores';
import { captured } from './support/captured';
import { personStates, referenceStates } from './support/persons';
import { stackFactories, startConsumer, waitFor, type Stack } from './support/stacks';
import { seededRandom } from '../../../test/support/random';

const EVENTS = 10_000;
const PEOPLE = 100;
const KEYS = ['plan', 'email', 'name', 'company', 'score'];

/**
 * Events of 100 distinct ids interleaved at random, each a `$set`, `$set_once` or `$unset` of a few shared keys,
 * or no update at all: the final state of a person depends on the order of its own events.
 */
function interleavedUpdates(projectId: number): { messages: OutgoingMessage[]; distinctIds: string[] } {
  const next = seededRandom(4);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)] as T;
  const distinctIds = Array.from({ length: PEOPLE }, (_, person) => `person-${person}`);
  const messages = Array.from({ length: EVENTS }, (_, i) => {
    const operation = pick(['$set', '$set_once', '$unset', 'none'] as const);
    const key = pick(KEYS);
    const properties = operation === 'none' ? {} : operation === '$unset' ? { $unset: [key] } : { [operation]: { [key]: i } };
    return captured(projectId, pick(distinctIds), 'changed', properties, { minutes: i / 600 });
  });
  return { messages, distinctIds };
}

describe.each(stackFactories)('ordering: $name', (factory) => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await factory.open();
  });

  afterAll(async () => {
    await stack?.destroy();
  });

  it(`${EVENTS} interleaved events of ${PEOPLE} distinct ids over 4 partitions end as if processed one by one`, async () => {
    const projectId = await createProject(stack.stores.sql);
    const { messages, distinctIds } = interleavedUpdates(projectId);
    const consumer = await startConsumer(stack, { settings: { ...stack.description.settings, batchSize: 250, concurrency: 32 } });
    try {
      // In requests of 100 events, as SDKs send them.
      for (let start = 0; start < messages.length; start += 100) {
        await stack.stores.bus.produce(stack.description.settings.topics.events, messages.slice(start, start + 100));
      }
      await waitFor('every event', async () => (await countEvents(stack.stores.clickhouse, projectId)) === EVENTS, 120_000);
    } finally {
      await consumer.stop();
    }
    expect(await personStates(stack.stores.sql, projectId, distinctIds)).toEqual(await referenceStates(messages, distinctIds));
  }, 300_000);
});
