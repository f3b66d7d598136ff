/**
 * The replay consumer: reads capture's `$snapshot` messages from the replay topic in a consumer group of its own,
 * so recordings and analytics events never wait for each other, and stores them (handler.ts). Distributed mode
 * runs it in the ingestion service beside the events consumer; embedded mode in the standalone process.
 */
import type { EventBus } from '@plover/bus';
import { sectionDefaults, sections, type IngestionConfig } from '@plover/config';
import type { ClickHouse } from '@plover/clickhouse';
import { REPLAY_TOPIC } from '@plover/contracts';
import type { Logger } from '@plover/core';
import type { MetricsRegistry } from '@plover/http';
import type { Sql } from '@plover/postgres';
import type { IngestionConsumer } from '../consumer';
import { startTopicConsumer, type TopicConsumerSettings } from '../topic-consumer';
import { replayBatchHandler } from './handler';

/** A replay message holds up to about a megabyte of rrweb events: `batchSize` is kept small. */
export type ReplaySettings = TopicConsumerSettings;

const INGESTION_DEFAULTS = sectionDefaults(sections.ingestion);

export const DEFAULT_REPLAY_SETTINGS: ReplaySettings = {
  topic: REPLAY_TOPIC,
  groupId: 'session-recordings',
  deadLetterTopic: `${REPLAY_TOPIC}_dlq`,
  batchSize: 100,
  lingerMs: INGESTION_DEFAULTS.lingerMs,
  retryBackoffMs: INGESTION_DEFAULTS.retryBackoffMs,
};

/** What the ingestion config section sets of a replay consumer; the rest keeps its defaults. */
export function replaySettingsFrom(ingestion: Pick<IngestionConfig, 'retryBackoffMs' | 'lingerMs'>): Partial<ReplaySettings> {
  return { retryBackoffMs: ingestion.retryBackoffMs, lingerMs: ingestion.lingerMs };
}

export interface ReplayConsumerDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  clickhouse: ClickHouse;
  bus: EventBus;
  settings?: Partial<ReplaySettings>;
  /** Dead letters' time; tests fix it. */
  now?: () => Date;
}

export async function createReplayConsumer(deps: ReplayConsumerDeps): Promise<IngestionConsumer> {
  const settings: ReplaySettings = { ...DEFAULT_REPLAY_SETTINGS, ...deps.settings };
  const logger = deps.logger.child({ component: 'replay-ingestion' });
  const handleBatch = replayBatchHandler({ ...deps, logger, deadLetterTopic: settings.deadLetterTopic, now: deps.now ?? (() => new Date()) });
  return startTopicConsumer(deps.bus, settings, handleBatch, logger, 'replay');
}
