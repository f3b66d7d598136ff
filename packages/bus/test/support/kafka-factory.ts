/**
 * The KafkaBus entry of the bus contract suite (see adapters.ts). The broker is shared by every run on the
 * machine, so the suite's names are unique per run (uniqueName) and each harness deletes the topics its buses
 * touched: otherwise a developer's broker collects thousands of partitions over a few weeks of test runs.
 */
import { Kafka, logLevel } from 'kafkajs';
import type { EventBus } from '@plover/bus';
import { KafkaBus } from '@plover/bus/kafka';
import { silentLogger } from '@plover/core';
import { realService } from '../../../../test/support/services';
import type { BusFactory } from './adapters';

const CLIENT_ID = 'plover-bus-contract';

function openBus(brokers: string): KafkaBus {
  return new KafkaBus({ brokers: brokers.split(','), clientId: CLIENT_ID, logger: silentLogger() });
}

/** Delegates to `bus`, noting every topic it is asked about. */
function recordingTopics(bus: KafkaBus, topics: Set<string>): EventBus {
  const note = (names: readonly string[]) => names.forEach((name) => topics.add(name));
  return {
    produce: (topic, messages) => {
      note([topic]);
      return bus.produce(topic, messages);
    },
    consume: (options) => {
      note(options.topics);
      return bus.consume(options);
    },
    ensureTopics: (names) => {
      note(names);
      return bus.ensureTopics(names);
    },
    ping: () => bus.ping(),
    close: () => bus.close(),
  };
}

/** Deletes those of `topics` that exist on the broker(s) `brokers` (comma-separated). */
export async function deleteTopics(brokers: string, topics: readonly string[]): Promise<void> {
  if (topics.length === 0) return;
  const admin = new Kafka({ clientId: CLIENT_ID, brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    // Only topics that exist: deleting an unknown one fails the whole request.
    const existing = new Set(await admin.listTopics());
    const present = topics.filter((topic) => existing.has(topic));
    if (present.length > 0) await admin.deleteTopics({ topics: present });
  } finally {
    await admin.disconnect();
  }
}

/** Undefined when TEST_KAFKA_BROKERS is unset: a local run skips Kafka; under CI=true realService throws instead. */
export function kafkaFactory(): BusFactory | undefined {
  const brokers = realService('TEST_KAFKA_BROKERS').url;
  if (!brokers) return undefined;
  return {
    name: 'KafkaBus',
    open() {
      const topics = new Set<string>();
      let kafkaBus = openBus(brokers);
      let bus = recordingTopics(kafkaBus, topics);
      return Promise.resolve({
        get bus() {
          return bus;
        },
        async reopen() {
          await kafkaBus.close();
          kafkaBus = openBus(brokers);
          bus = recordingTopics(kafkaBus, topics);
          return bus;
        },
        // Child processes reach the same broker; the topics they use are the parent's, deleted by the parent.
        childEnv: { TEST_KAFKA_BROKERS: brokers },
        async cleanup() {
          await kafkaBus.close();
          await deleteTopics(brokers, [...topics]);
        },
      });
    },
    openFromEnv: (env) => {
      const childBrokers = env.TEST_KAFKA_BROKERS;
      if (!childBrokers) return Promise.reject(new Error('TEST_KAFKA_BROKERS is not set'));
      return Promise.resolve(openBus(childBrokers));
    },
    // A fresh group needs a join and a sync before its first fetch, and a consumer killed without leaving
    // holds its partitions until the 10 s session timeout expires.
    deliveryTimeoutMs: 60_000,
    // Longer than a fetch's 500 ms wait plus a batch round trip, so a delivery that should not happen would.
    quietMs: 2_000,
  };
}
