/**
 * One readiness probe for scripts/kafka.sh: exits 0 when the broker at argv[2] answers a metadata
 * request and can coordinate consumer groups, 1 otherwise. An open port alone is not enough: a KRaft
 * broker accepts connections before its metadata is caught up, and the first group lookup creates
 * __consumer_offsets, which would otherwise be paid for by the first test that consumes.
 * Plain JavaScript so that it runs with nothing but node and the repository's installed kafkajs.
 */
import { createRequire } from 'node:module';

const broker = process.argv[2];
if (!broker) {
  console.error('usage: probe.mjs HOST:PORT');
  process.exit(2);
}

// Resolved from the bus package, which owns the kafkajs dependency, wherever npm placed it.
const requireFromBus = createRequire(new URL('../../packages/bus/package.json', import.meta.url));
let kafkajs;
try {
  kafkajs = requireFromBus('kafkajs');
} catch {
  console.error('kafkajs is not installed: run `npm ci` first');
  process.exit(2);
}

const { Kafka, logLevel } = kafkajs;
const admin = new Kafka({
  clientId: 'plover-kafka-probe',
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 2000,
  requestTimeout: 5000,
  retry: { retries: 3, initialRetryTime: 200 },
}).admin();

async function probe() {
  await admin.connect();
  try {
    await admin.listTopics();
    await admin.describeGroups(['plover-kafka-probe']);
  } finally {
    await admin.disconnect();
  }
}

probe().then(
  () => process.exit(0),
  (error) => {
    console.error(`not ready: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
