import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Api } from '../src/api';
import { UserError } from '../src/errors';
import { BatchSender, type Outgoing } from '../src/import/sender';
import { propertiesOf, timeOf } from '../src/export';
import { parseMetrics } from '../src/status';

/**
 * The batch sender against a scripted capture: what it does with each answer capture can give a historical
 * batch (an event named in `attr`, a refusal naming none, a retryable status, a refused token).
 */

type Answer = (events: Array<{ event: string }>) => { status: number; body?: unknown; headers?: Record<string, string> };

async function captureServer(answer: Answer): Promise<{ api: Api; requests: Array<Array<{ event: string }>>; close: () => Promise<void> }> {
  const requests: Array<Array<{ event: string }>> = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as { batch: Array<{ event: string }>; historical_migration: boolean; api_key: string };
      expect(body).toMatchObject({ historical_migration: true, api_key: 'phc_t' });
      requests.push(body.batch);
      const { status, body: reply, headers } = answer(body.batch);
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(reply ?? { status: 1 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    api: new Api({ host: `http://127.0.0.1:${port}`, apiKey: undefined, project: '1' }),
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const outgoing = (...names: string[]): Outgoing[] => names.map((event, i) => ({ index: i + 1, json: JSON.stringify({ event }), raw: event }));
const options = { retryForMs: 5000, requestTimeoutMs: 5000 };

it('rejects the event capture names in attr and sends the rest again', async () => {
  const capture = await captureServer((events) => {
    const bad = events.findIndex((e) => e.event === 'bad');
    return bad < 0 ? { status: 200 } : { status: 400, body: { type: 'validation_error', code: 'invalid_event', detail: 'no', attr: `batch__${bad}__event` } };
  });
  try {
    const rejected = await new BatchSender(capture.api, 'phc_t', options).send(outgoing('a', 'bad', 'b'));
    expect(rejected).toEqual([{ index: 2, raw: 'bad', field: 'event', reason: 'capture: invalid_event no' }]);
    expect(capture.requests.map((batch) => batch.map((e) => e.event))).toEqual([['a', 'bad', 'b'], ['a'], ['b']]);
  } finally {
    await capture.close();
  }
});

it('halves a batch refused without naming an event, down to the one refused alone', async () => {
  const capture = await captureServer((events) =>
    events.some((e) => e.event === 'huge') ? { status: 413, body: { code: 'payload_too_large', detail: 'too large', attr: null } } : { status: 200 },
  );
  try {
    const rejected = await new BatchSender(capture.api, 'phc_t', options).send(outgoing('a', 'b', 'huge', 'c'));
    expect(rejected).toEqual([{ index: 3, raw: 'huge', reason: 'capture: payload_too_large too large' }]);
    const acknowledged = capture.requests.filter((batch) => !batch.some((e) => e.event === 'huge')).flat();
    expect(acknowledged.map((e) => e.event).sort()).toEqual(['a', 'b', 'c']);
  } finally {
    await capture.close();
  }
});

it('retries 503 and 429 after their Retry-After, and stops on a refused token with one line', async () => {
  let calls = 0;
  const flaky = await captureServer(() =>
    ++calls < 3 ? { status: calls === 1 ? 503 : 429, body: { code: 'service_unavailable', detail: 'busy' }, headers: { 'retry-after': '1' } } : { status: 200 },
  );
  const retries: string[] = [];
  try {
    const started = Date.now();
    expect(await new BatchSender(flaky.api, 'phc_t', { ...options, onRetry: (reason) => retries.push(reason) }).send(outgoing('a'))).toEqual([]);
    expect(flaky.requests).toHaveLength(3);
    expect(retries).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
  } finally {
    await flaky.close();
  }
  const refused = await captureServer(() => ({ status: 401, body: { code: 'ingest_key_unknown', detail: 'Project API key invalid.' } }));
  try {
    const failure = await new BatchSender(refused.api, 'phc_t', options).send(outgoing('a')).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UserError);
    expect((failure as Error).message).toBe('POST /batch/ answered 401 ingest_key_unknown: Project API key invalid. (check --api-key / PLOVER_API_KEY)');
  } finally {
    await refused.close();
  }
});

describe('export and status arguments', () => {
  it('reads --from/--to as dates or as a time before now', () => {
    const now = Date.parse('2024-05-10T12:00:00Z');
    expect(timeOf('-7d', '--from', now)).toBe('2024-05-03T12:00:00.000Z');
    expect(timeOf('-90m', '--from', now)).toBe('2024-05-10T10:30:00.000Z');
    expect(timeOf('2024-05-01', '--from', now)).toBe('2024-05-01T00:00:00.000Z');
    expect(() => timeOf('yesterday', '--from', now)).toThrow(UserError);
  });

  it('reads --where as key=value filters of the exported kind, or as the API’s JSON', () => {
    expect(JSON.parse(propertiesOf(['plan=pro', 'a=b=c'], 'events')!)).toEqual([
      { key: 'plan', value: 'pro', operator: 'exact', type: 'event' },
      { key: 'a', value: 'b=c', operator: 'exact', type: 'event' },
    ]);
    expect(JSON.parse(propertiesOf(['plan=pro'], 'persons')!)[0].type).toBe('person');
    expect(propertiesOf(['[{"key":"x","value":1}]'], 'events')).toBe('[{"key":"x","value":1}]');
    expect(() => propertiesOf(['novalue'], 'events')).toThrow(/use key=value/);
    expect(propertiesOf([], 'events')).toBeUndefined();
  });

  it('parses Prometheus samples with their labels', () => {
    const samples = parseMetrics(
      '# HELP plover_ingestion_lag_seconds Age\nplover_ingestion_lag_seconds{topic="events_historical",service="plover"} 1.5\nplain_total 3\n',
    );
    expect(samples).toEqual([
      { name: 'plover_ingestion_lag_seconds', labels: { topic: 'events_historical', service: 'plover' }, value: 1.5 },
      { name: 'plain_total', labels: {}, value: 3 },
    ]);
  });
});
