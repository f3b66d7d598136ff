import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type Outcome = 'ingested' | 'dead_lettered' | 'already_stored';
export type Step = 'read' | 'recover' | 'process' | 'flush_persons' | 'side_writes' | 'definitions' | 'insert_events' | 'sync' | 'batch';

export interface IngestionMetrics {
  /** Messages handled (committed), by topic and what became of them; its rate is events/s. */
  messages: Counter<'topic' | 'outcome'>;
  deadLetters: Counter<'reason'>;
  warnings: Counter<'type'>;
  batchSize: Histogram;
  stepSeconds: Histogram<'step'>;
  /** Batches handed back to the bus for redelivery, by whether the failure was expected to pass. */
  batchFailures: Counter<'topic' | 'retriable'>;
  /** Events processed a second time because the staged person changes they relied on could not be stored. */
  personReprocessed: Counter;
  /** Age of the newest message of the last handled batch: how far the consumer is behind capture. */
  lagSeconds: Gauge<'topic'>;
  /** Per event: from the bus append to its row being stored. */
  eventLagSeconds: Histogram<'topic'>;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60];

/**
 * Labels are bounded: two topics, the outcomes and steps above, the dead-letter reasons of dead-letter.ts, and
 * warning types, which are a fixed set of PostHog's names.
 */
export function ingestionMetrics(registry: Registry): IngestionMetrics {
  return {
    messages: metric(
      registry,
      'plover_ingestion_messages_total',
      (name) =>
        new Counter({ name, help: 'Bus messages handled and committed, by topic and outcome', labelNames: ['topic', 'outcome'], registers: [registry] }),
    ),
    deadLetters: metric(
      registry,
      'plover_ingestion_dead_letters_total',
      (name) => new Counter({ name, help: 'Messages sent to the dead-letter topic, by reason', labelNames: ['reason'], registers: [registry] }),
    ),
    warnings: metric(
      registry,
      'plover_ingestion_warnings_total',
      (name) => new Counter({ name, help: 'Ingestion warnings recorded, by type', labelNames: ['type'], registers: [registry] }),
    ),
    batchSize: metric(
      registry,
      'plover_ingestion_batch_size',
      (name) =>
        new Histogram({ name, help: 'Messages per handled batch', buckets: [1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000], registers: [registry] }),
    ),
    stepSeconds: metric(
      registry,
      'plover_ingestion_step_seconds',
      (name) => new Histogram({ name, help: 'Time per batch spent in each step', labelNames: ['step'], buckets: LATENCY_BUCKETS, registers: [registry] }),
    ),
    batchFailures: metric(
      registry,
      'plover_ingestion_batch_failures_total',
      (name) => new Counter({ name, help: 'Batches left uncommitted for redelivery', labelNames: ['topic', 'retriable'], registers: [registry] }),
    ),
    personReprocessed: metric(
      registry,
      'plover_ingestion_person_reprocessed_total',
      (name) =>
        new Counter({ name, help: 'Events processed again because a person changed concurrently with their staged person change', registers: [registry] }),
    ),
    lagSeconds: metric(
      registry,
      'plover_ingestion_lag_seconds',
      (name) => new Gauge({ name, help: 'Age of the newest message of the last handled batch', labelNames: ['topic'], registers: [registry] }),
    ),
    eventLagSeconds: metric(
      registry,
      'plover_ingestion_event_lag_seconds',
      (name) =>
        new Histogram({
          name,
          help: 'Time from the bus append to the stored row, per event',
          labelNames: ['topic'],
          buckets: LATENCY_BUCKETS,
          registers: [registry],
        }),
    ),
  };
}

/** A consumer created twice on one registry (tests, embedded restarts) shares the metric instead of failing to register it. */
export function metric<T>(registry: Registry, name: string, create: (name: string) => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? create(name);
}
