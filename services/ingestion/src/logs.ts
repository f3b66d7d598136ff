/**
 * The logs consumer: reads capture's log record messages from the logs topic in a consumer group of its own, so
 * console lines and analytics events never wait for each other, and stores them in the `logs` table (docs/logs.md).
 * Distributed mode runs it in the ingestion service beside the events and replay consumers; embedded mode in the
 * ingestion thread.
 *
 * A batch is read, its unreadable messages dead-lettered, its records inserted and made durable, and only then
 * does the handler resolve, which lets the bus commit it. Every write is idempotent (a record's uuid and time are
 * its key), so a batch that fails anywhere is simply redelivered.
 */
import type { Batch, BusMessage, EventBus } from '@plover/bus';
import { sectionDefaults, sections, type IngestionConfig } from '@plover/config';
import { insertLogs, type ClickHouse, type LogRow } from '@plover/clickhouse';
import { LOGS_TOPIC, parseLogRecordMessage } from '@plover/contracts';
import { isRetriable, type Logger } from '@plover/core';
import type { MetricsRegistry } from '@plover/http';
import { storableJson, storableText } from '@plover/persons';
import { Counter } from 'prom-client';
import type { IngestionConsumer } from './consumer';
import { deadLetterMessage, deadLetterOf, type DeadLetter } from './dead-letter';
import { identityOf } from './message';
import { metric } from './metrics';
import { startTopicConsumer, type TopicConsumerSettings } from './topic-consumer';

export interface LogsSettings extends TopicConsumerSettings {
  /** Days a record is kept from its UTC day. */
  retentionDays: number;
}

const INGESTION_DEFAULTS = sectionDefaults(sections.ingestion);

export const DEFAULT_LOGS_SETTINGS: LogsSettings = {
  topic: LOGS_TOPIC,
  groupId: 'logs',
  deadLetterTopic: `${LOGS_TOPIC}_dlq`,
  batchSize: 1000,
  lingerMs: INGESTION_DEFAULTS.lingerMs,
  retryBackoffMs: INGESTION_DEFAULTS.retryBackoffMs,
  retentionDays: INGESTION_DEFAULTS.logsRetentionDays,
};

/** What the ingestion config section sets of the logs consumer; the rest keeps its defaults. */
export function logsSettingsFrom(ingestion: Pick<IngestionConfig, 'retryBackoffMs' | 'lingerMs' | 'logsRetentionDays'>): Partial<LogsSettings> {
  return { retryBackoffMs: ingestion.retryBackoffMs, lingerMs: ingestion.lingerMs, retentionDays: ingestion.logsRetentionDays };
}

export interface LogsConsumerDeps {
  logger: Logger;
  metrics: MetricsRegistry;
  clickhouse: ClickHouse;
  bus: EventBus;
  settings?: Partial<LogsSettings>;
  /** Dead letters' time; tests fix it. */
  now?: () => Date;
}

export async function createLogsConsumer(deps: LogsConsumerDeps): Promise<IngestionConsumer> {
  const settings: LogsSettings = { ...DEFAULT_LOGS_SETTINGS, ...deps.settings };
  const logger = deps.logger.child({ component: 'logs-ingestion' });
  const now = deps.now ?? (() => new Date());
  const records = metric(
    deps.metrics,
    'plover_logs_records_total',
    (name) => new Counter({ name, help: 'Log records handled and committed, by outcome', labelNames: ['outcome'], registers: [deps.metrics] }),
  );
  const handleBatch = async (batch: Batch): Promise<void> => {
    try {
      const deadLetters: DeadLetter[] = [];
      const rows = batch.messages.flatMap((message): LogRow[] => {
        const row = logRow(message, settings.retentionDays);
        if ('row' in row) return [row.row];
        deadLetters.push(deadLetterOf(message, { reason: 'invalid_message', detail: row.detail, ...identityOf(message.value) }, now()));
        return [];
      });
      if (deadLetters.length > 0) await deps.bus.produce(settings.deadLetterTopic, deadLetters.map(deadLetterMessage));
      await insertLogs(deps.clickhouse, rows);
      // chDB cannot make each insert durable by itself: the commit must not cover rows a power loss could take back.
      await deps.clickhouse.sync?.();
      records.inc({ outcome: 'stored' }, rows.length);
      records.inc({ outcome: 'dead_lettered' }, deadLetters.length);
    } catch (error) {
      logger[isRetriable(error) ? 'warn' : 'error'](
        { err: error, topic: batch.topic, partition: batch.partition, offset: batch.messages[0]?.offset, messages: batch.messages.length },
        'logs batch not stored; it will be redelivered',
      );
      throw error;
    }
  };
  return startTopicConsumer(deps.bus, settings, handleBatch, logger, 'logs');
}

/** The row of one message, or why it cannot be stored. */
function logRow(message: BusMessage, retentionDays: number): { row: LogRow } | { detail: string } {
  const parsed = parseLogRecordMessage(message.value);
  if (!parsed.ok) return { detail: parsed.violation.detail };
  const record = parsed.value;
  return {
    row: {
      team_id: record.team_id,
      uuid: record.uuid.toLowerCase(),
      timestamp: record.timestamp,
      observed_timestamp: record.observed_timestamp,
      severity_text: storableText(record.severity_text),
      severity_number: record.severity_number,
      body: storableText(record.body),
      trace_id: record.trace_id,
      span_id: record.span_id,
      attributes: JSON.stringify(storableJson(record.attributes)),
      resource_attributes: JSON.stringify(storableJson(record.resource_attributes)),
      service_name: storableText(record.service_name),
      session_id: storableText(record.session_id),
      distinct_id: storableText(record.distinct_id),
      retention_days: retentionDays,
    },
  };
}
