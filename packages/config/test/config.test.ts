import os from 'node:os';
import { ConfigError, loadConfig, sectionDefaults, sections } from '@plover/config';

const distributed = { logging: sections.logging, http: sections.http(8000), postgres: sections.postgres, kafka: sections.kafka };
const valid = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/plover', KAFKA_BROKERS: 'a:9092,b:9093' };

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('coerces values and applies defaults', () => {
    const config = loadConfig({ ...valid, PORT: '9001', TRUST_PROXY: 'true' }, distributed);
    expect(config.http).toEqual({
      port: 9001,
      host: '0.0.0.0',
      trustProxy: true,
      connections: { max: 'auto', headersTimeoutMs: 10_000, requestTimeoutMs: 60_000 },
    });
    expect(config.kafka).toEqual({ brokers: ['a:9092', 'b:9093'], clientId: 'plover', topicPrefix: '', partitions: 4 });
    expect(config.postgres.poolSize).toBe(10);
    expect(config.logging.level).toBe('info');
  });

  it('reads the Kafka topic prefix and partition count', () => {
    const config = loadConfig({ ...valid, KAFKA_TOPIC_PREFIX: 'staging.', KAFKA_TOPIC_PARTITIONS: '12' }, distributed);
    expect(config.kafka).toMatchObject({ topicPrefix: 'staging.', partitions: 12 });
  });

  it('reads the connection limits, and refuses a request timeout shorter than the header timeout', () => {
    const config = loadConfig({ ...valid, HTTP_MAX_CONNECTIONS: '500', HTTP_HEADERS_TIMEOUT_MS: '2000', HTTP_REQUEST_TIMEOUT_MS: '3000' }, distributed);
    expect(config.http.connections).toEqual({ max: 500, headersTimeoutMs: 2_000, requestTimeoutMs: 3_000 });
    const error = errorOf(() => loadConfig({ ...valid, HTTP_HEADERS_TIMEOUT_MS: '5000', HTTP_REQUEST_TIMEOUT_MS: '4000' }, distributed));
    expect(error.variable).toBe('HTTP_REQUEST_TIMEOUT_MS');
  });

  it('treats an empty value as unset', () => {
    expect(loadConfig({ ...valid, PORT: '' }, distributed).http.port).toBe(8000);
  });

  it('names a missing required variable', () => {
    const error = errorOf(() => loadConfig({ KAFKA_BROKERS: 'a:1' }, distributed));
    expect(error.variable).toBe('DATABASE_URL');
    expect(error.message).toBe('Invalid configuration: DATABASE_URL is required but not set');
  });

  it.each([
    ['PORT', 'eighty', 'must be integer'],
    ['PORT', '70000', 'must be <= 65535'],
    ['TRUST_PROXY', 'yes', 'must be boolean'],
    ['KAFKA_BROKERS', 'localhost', 'must match pattern'],
    ['KAFKA_TOPIC_PREFIX', 'a/b', 'must match pattern'],
    ['KAFKA_TOPIC_PARTITIONS', '0', 'must be >= 1'],
    ['DATABASE_URL', 'mysql://x', 'must match pattern'],
    ['LOG_LEVEL', 'loud', 'must be equal to one of the allowed values'],
  ])('rejects %s=%s naming the variable and the value', (variable, value, message) => {
    const error = errorOf(() => loadConfig({ ...valid, [variable]: value }, distributed));
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(message);
    expect(error.message).toContain(JSON.stringify(value));
  });

  it('rejects an unknown timezone', () => {
    const error = errorOf(() => loadConfig({ PLOVER_TIMEZONE: 'Mars/Olympus' }, { bootstrap: sections.bootstrap }));
    expect(error.variable).toBe('PLOVER_TIMEZONE');
  });

  it('reads cluster mode from CLICKHOUSE_CLUSTER, replicated unless CLICKHOUSE_REPLICATED=false', () => {
    const clickhouse = { clickhouse: sections.clickhouse };
    const url = { CLICKHOUSE_URL: 'http://127.0.0.1:8123' };
    expect(loadConfig(url, clickhouse).clickhouse.cluster).toBeUndefined();
    expect(loadConfig({ ...url, CLICKHOUSE_CLUSTER: '' }, clickhouse).clickhouse.cluster).toBeUndefined();
    expect(loadConfig({ ...url, CLICKHOUSE_CLUSTER: 'plover' }, clickhouse).clickhouse.cluster).toEqual({ name: 'plover', replicated: true });
    expect(loadConfig({ ...url, CLICKHOUSE_CLUSTER: 'plover', CLICKHOUSE_REPLICATED: 'false' }, clickhouse).clickhouse.cluster).toEqual({
      name: 'plover',
      replicated: false,
    });
    // The name is written into DDL (ON CLUSTER, Distributed's arguments), so it must be a plain identifier.
    expect(errorOf(() => loadConfig({ ...url, CLICKHOUSE_CLUSTER: 'a; DROP' }, clickhouse)).variable).toBe('CLICKHOUSE_CLUSTER');
  });

  it('resolves the data dir to an absolute path', () => {
    expect(loadConfig({ PLOVER_DATA_DIR: 'rel/dir' }, { d: sections.dataDir }).d.dataDir).toBe(`${process.cwd()}/rel/dir`);
  });

  it.each([
    [undefined, 1],
    ['3', 3],
    ['auto', os.availableParallelism()],
  ])('reads DECIDE_WORKERS=%s as %s processes', (value, expected) => {
    expect(loadConfig({ DECIDE_WORKERS: value }, { workers: sections.decideWorkers }).workers).toBe(expected);
    expect(loadConfig({ CAPTURE_WORKERS: value }, { workers: sections.captureWorkers }).workers).toBe(expected);
  });

  it.each(['0', '-1', '1.5', 'all', 'auto2', '1000'])('rejects DECIDE_WORKERS=%s naming it', (value) => {
    const error = errorOf(() => loadConfig({ DECIDE_WORKERS: value }, { workers: sections.decideWorkers }));
    expect(error.variable).toBe('DECIDE_WORKERS');
    expect(error.message).toContain('must match pattern');
  });
});

describe('sectionDefaults', () => {
  it('reads a section with every variable at its schema default', () => {
    expect(sectionDefaults(sections.ingestion)).toEqual(loadConfig({}, { ingestion: sections.ingestion }).ingestion);
    expect(sectionDefaults(sections.decide)).toMatchObject({ lookupTimeoutMs: 200, definitionsPollMs: 500, flagQuotaMonthly: 0, rateLimit: undefined });
  });
});
