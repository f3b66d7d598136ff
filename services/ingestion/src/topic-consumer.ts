/**
 * A consumer group on one topic with a dead-letter topic of its own: what the replay and logs consumers each are.
 * The handler decides what a batch stores and dead-letters; this starts the group and stops it once.
 */
import type { Batch, EventBus } from '@plover/bus';
import type { Logger } from '@plover/core';
import type { IngestionConsumer } from './consumer';

export interface TopicConsumerSettings {
  topic: string;
  groupId: string;
  /** Where messages that cannot be stored go, with the reason (docs/ingestion.md#dead-letters). */
  deadLetterTopic: string;
  /** Most messages handled at once: with the size of one message, this bounds the memory a batch takes. */
  batchSize: number;
  /** How long a short batch waits for more messages (ConsumeOptions.lingerMs). */
  lingerMs: number;
  retryBackoffMs: number;
}

/** Creates the topic and its dead-letter topic, then joins the group; `name` words the start and stop log lines. */
export async function startTopicConsumer(
  bus: EventBus,
  settings: TopicConsumerSettings,
  handleBatch: (batch: Batch) => Promise<void>,
  logger: Logger,
  name: string,
): Promise<IngestionConsumer> {
  await bus.ensureTopics([settings.topic, settings.deadLetterTopic]);
  const consumer = await bus.consume({
    groupId: settings.groupId,
    topics: [settings.topic],
    handleBatch,
    maxBatchSize: settings.batchSize,
    lingerMs: settings.lingerMs,
    retryBackoffMs: settings.retryBackoffMs,
  });
  logger.info({ topic: settings.topic, groupId: settings.groupId }, `${name} consumer started`);
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= consumer.stop().then(() => logger.info(`${name} consumer stopped`));
      return stopping;
    },
  };
}
