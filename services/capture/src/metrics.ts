import { Counter, Histogram, type Registry } from 'prom-client';
import { singleMetric } from '@plover/http';

export interface CaptureMetrics {
  events: Counter<'topic'>;
  rejected: Counter<'code'>;
  produceSeconds: Histogram;
  /** `/i/v0/ai/otel` spans left out because their event was too large. */
  otelSpansShed: Counter;
}

/** Labels are bounded: three topics (`events`, `historical`, `replay`), and the error codes of errors.ts. */
export function captureMetrics(registry: Registry): CaptureMetrics {
  return {
    events: singleMetric(
      registry,
      'plover_capture_events_total',
      () => new Counter({ name: 'plover_capture_events_total', help: 'Events accepted (durable on the bus)', labelNames: ['topic'], registers: [registry] }),
    ),
    rejected: singleMetric(
      registry,
      'plover_capture_rejected_requests_total',
      () =>
        new Counter({
          name: 'plover_capture_rejected_requests_total',
          help: 'Requests answered with an error, by error code',
          labelNames: ['code'],
          registers: [registry],
        }),
    ),
    otelSpansShed: singleMetric(
      registry,
      'plover_capture_otel_spans_shed_total',
      () =>
        new Counter({
          name: 'plover_capture_otel_spans_shed_total',
          help: 'OpenTelemetry AI spans left out of an accepted export because their event was too large',
          registers: [registry],
        }),
    ),
    produceSeconds: singleMetric(
      registry,
      'plover_capture_produce_seconds',
      () =>
        new Histogram({
          name: 'plover_capture_produce_seconds',
          help: 'Time from produce to durable acknowledgement, per request',
          buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
          registers: [registry],
        }),
    ),
  };
}
