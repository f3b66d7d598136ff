import { Counter, type Registry } from 'prom-client';
import { singleMetric } from '@plover/http';

export interface DecideMetrics {
  requests: Counter<'endpoint'>;
  regexUndecided: Counter;
}

/** Labels are bounded: the two flag endpoints, `decide` and `flags`. */
export function decideMetrics(registry: Registry): DecideMetrics {
  return {
    requests: singleMetric(
      registry,
      'plover_decide_requests_total',
      () =>
        new Counter({
          name: 'plover_decide_requests_total',
          help: 'Requests to /decide and /flags, whatever their answer',
          labelNames: ['endpoint'],
          registers: [registry],
        }),
    ),
    regexUndecided: singleMetric(
      registry,
      'plover_decide_regex_undecided_total',
      () =>
        new Counter({
          name: 'plover_decide_regex_undecided_total',
          help: 'regex/not_regex matches left undecided (a non-match) because a request spent its regex time budget',
          registers: [registry],
        }),
    ),
  };
}
