/**
 * The ingestion consumer: reads capture's topics from the bus, processes persons and groups in Postgres,
 * stores events in ClickHouse, and lets the bus commit a batch only once all of it is durable (batch.ts).
 * The same code runs in distributed mode (KafkaBus, PgSql, HttpClickHouse) and embedded mode (LocalLogBus,
 * PGlite, chDB): the composition root picks the adapters.
 */
import type { Consumer, EventBus } from '@plover/bus';
import type { ClickHouse } from '@plover/clickhouse';
import { sectionDefaults, sections, type IngestionConfig } from '@plover/config';
import { CAPTURE_TOPICS } from '@plover/contracts';
import type { Logger } from '@plover/core';
import type { GeoIpLookup } from '@plover/geoip';
import type { MetricsRegistry } from '@plover/http';
import { GroupStore, PersonStore } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { BatchHandler } from './batch';
import { DefinitionsUpkeep } from './definitions/upkeep';
import { AnonymizedProjects } from './geoip';
import { ingestionMetrics } from './metrics';
import { IngestedProjects } from './ingested-projects';
import { EventProcessor } from './process';

export interface IngestionSettings extends IngestionConfig {
  topics: { events: string; historical: string; deadLetter: string };
  /** Historical imports have a group of their own, so an import never delays live events (docs/capture.md, historical migration). */
  groupIds: { events: string; historical: string };
}

export const DEFAULT_INGESTION_SETTINGS: IngestionSettings = {
  ...sectionDefaults(sections.ingestion),
  topics: { ...CAPTURE_TOPICS, deadLetter: 'events_dlq' },
  groupIds: { events: 'ingestion', historical: 'ingestion-historical' },
};

export interface ConsumerDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  sql: Sql;
  clickhouse: ClickHouse;
  bus: EventBus;
  /** The `ingestion` config section, and in tests other topics or groups; defaults otherwise. */
  settings?: Partial<IngestionSettings>;
  /**
   * Locates events' `$ip`: the bundled database (`loadGeoIp` of @plover/geoip) when the `ingestion` section's
   * `geoip` is on, which the composition root loads; none when undefined.
   */
  geoip?: GeoIpLookup | undefined;
  /** Ingestion time (`created_at`, dead letters); tests fix it. */
  now?: () => Date;
}

export interface IngestionConsumer {
  /** Finishes the batches in flight, commits them, and leaves the consumer groups. Idempotent. */
  stop(): Promise<void>;
}

export async function createConsumer(deps: ConsumerDeps): Promise<IngestionConsumer> {
  const settings: IngestionSettings = { ...DEFAULT_INGESTION_SETTINGS, ...deps.settings };
  const logger = deps.logger.child({ component: 'ingestion' });
  const now = deps.now ?? (() => new Date());
  const groups = new GroupStore(deps.sql);
  const handler = new BatchHandler({
    processor: new EventProcessor({
      persons: new PersonStore(deps.sql),
      groups,
      anonymized: new AnonymizedProjects(deps.sql),
      geoip: deps.geoip,
      now,
    }),
    ingestedProjects: new IngestedProjects(deps.sql),
    ...(settings.definitions
      ? { definitions: new DefinitionsUpkeep({ sql: deps.sql, now, groupTypeIndex: (projectId, groupType) => groups.groupTypeIndex(projectId, groupType) }) }
      : {}),
    clickhouse: deps.clickhouse,
    bus: deps.bus,
    deadLetterTopic: settings.topics.deadLetter,
    concurrency: settings.concurrency,
    metrics: ingestionMetrics(deps.metrics),
    logger,
  });
  const { topics, groupIds } = settings;
  // The dead-letter topic must exist before the first dead letter; capture's topics before a group subscribes.
  await deps.bus.ensureTopics([topics.events, topics.historical, topics.deadLetter]);

  const consume = (groupId: string, topic: string) =>
    deps.bus.consume({
      groupId,
      topics: [topic],
      handleBatch: (batch) => handler.handle(batch),
      maxBatchSize: settings.batchSize,
      lingerMs: settings.lingerMs,
      retryBackoffMs: settings.retryBackoffMs,
    });
  const started = await Promise.allSettled([consume(groupIds.events, topics.events), consume(groupIds.historical, topics.historical)]);
  const consumers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) {
    await stopAll(consumers);
    throw failed.reason;
  }
  logger.info({ topics: [topics.events, topics.historical], groupIds }, 'ingestion consumer started');

  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= stopAll(consumers).then(() => logger.info('ingestion consumer stopped'));
      return stopping;
    },
  };
}

async function stopAll(consumers: readonly Consumer[]): Promise<void> {
  await Promise.all(consumers.map((consumer) => consumer.stop()));
}
