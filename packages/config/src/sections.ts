import os from 'node:os';
import path from 'node:path';
import { ConfigError, type Section, type VariableSchema } from './load';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** `auto`: readable text when the log goes to a terminal, JSON lines otherwise. */
export type LogFormat = 'auto' | 'pretty' | 'json';

export interface LoggingConfig {
  level: string;
  format: LogFormat;
}

export const logging: Section<LoggingConfig> = {
  variables: {
    LOG_LEVEL: { description: 'pino log level', type: 'string', enum: LOG_LEVELS, default: 'info' },
    LOG_FORMAT: {
      description: 'Embedded mode: auto (readable text on a terminal, JSON lines otherwise), pretty or json',
      type: 'string',
      enum: ['auto', 'pretty', 'json'],
      default: 'auto',
    },
  },
  read: (v) => ({ level: v.LOG_LEVEL as string, format: v.LOG_FORMAT as LogFormat }),
};

export interface HttpConfig {
  port: number;
  host: string;
  trustProxy: boolean;
  /** What clients may hold of the server (`ConnectionLimits` of @plover/http). */
  connections: { max: number | 'auto'; headersTimeoutMs: number; requestTimeoutMs: number };
}

export function http(defaultPort: number): Section<HttpConfig> {
  return {
    variables: {
      PORT: { description: 'HTTP port to listen on', type: 'integer', minimum: 0, maximum: 65535, default: defaultPort },
      HOST: { description: 'Address to bind', type: 'string', minLength: 1, default: '0.0.0.0' },
      TRUST_PROXY: {
        description: 'Take the client address from X-Forwarded-For (only behind a proxy you run)',
        type: 'boolean',
        default: false,
      },
      HTTP_MAX_CONNECTIONS: {
        description: 'Open connections at most; 0 (auto) keeps a quarter of the file descriptor limit (at least 256) for the stores, and at most 16384',
        type: 'integer',
        minimum: 0,
        maximum: 1_000_000,
        default: 0,
      },
      HTTP_HEADERS_TIMEOUT_MS: {
        description: 'A connection that sends no complete request line and headers within this (also one that sends nothing) is closed with 408',
        type: 'integer',
        minimum: 100,
        maximum: 600_000,
        default: 10_000,
      },
      HTTP_REQUEST_TIMEOUT_MS: {
        description: 'A request whose body has not arrived whole within this is closed with 408; at least HTTP_HEADERS_TIMEOUT_MS',
        type: 'integer',
        minimum: 100,
        maximum: 3_600_000,
        default: 60_000,
      },
    },
    read: (v) => {
      const headersTimeoutMs = v.HTTP_HEADERS_TIMEOUT_MS as number;
      const requestTimeoutMs = v.HTTP_REQUEST_TIMEOUT_MS as number;
      if (requestTimeoutMs < headersTimeoutMs) {
        throw new ConfigError('HTTP_REQUEST_TIMEOUT_MS', `must be at least HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs})`);
      }
      const max = v.HTTP_MAX_CONNECTIONS as number;
      return {
        port: v.PORT as number,
        host: v.HOST as string,
        trustProxy: v.TRUST_PROXY as boolean,
        connections: { max: max === 0 ? 'auto' : max, headersTimeoutMs, requestTimeoutMs },
      };
    },
  };
}

export interface DataDirConfig {
  dataDir: string;
  /** Below this much free space on a store's disk, new writes are refused (bytes). */
  diskMinFreeBytes: number;
}

export const dataDir: Section<DataDirConfig> = {
  variables: {
    PLOVER_DATA_DIR: { description: 'Where embedded mode keeps Postgres, ClickHouse and the bus', type: 'string', minLength: 1, default: './.plover' },
    PLOVER_DISK_MIN_FREE_MB: {
      description: 'Free space (MiB) below which embedded mode refuses new writes, so that what it acknowledged has room to finish',
      type: 'integer',
      minimum: 0,
      default: 300,
    },
  },
  read: (v) => ({ dataDir: path.resolve(v.PLOVER_DATA_DIR as string), diskMinFreeBytes: (v.PLOVER_DISK_MIN_FREE_MB as number) * 1024 * 1024 }),
};

export interface PostgresConfig {
  url: string;
  poolSize: number;
}

export const postgres: Section<PostgresConfig> = {
  variables: {
    DATABASE_URL: { description: 'Postgres connection string (distributed mode)', type: 'string', pattern: '^postgres(ql)?://' },
    DATABASE_POOL_SIZE: { description: 'Postgres connections per process', type: 'integer', minimum: 1, maximum: 200, default: 10 },
  },
  required: ['DATABASE_URL'],
  read: (v) => ({ url: v.DATABASE_URL as string, poolSize: v.DATABASE_POOL_SIZE as number }),
};

export interface ClickHouseConfig {
  url: string;
  database: string;
  username: string;
  password: string;
  /** Cluster mode (docs/clickhouse-cluster.md); undefined for a single server. */
  cluster: { name: string; replicated: boolean } | undefined;
}

export const clickhouse: Section<ClickHouseConfig> = {
  variables: {
    CLICKHOUSE_URL: { description: 'ClickHouse HTTP endpoint (distributed mode)', type: 'string', pattern: '^https?://' },
    CLICKHOUSE_DATABASE: { description: 'ClickHouse database', type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', default: 'default' },
    CLICKHOUSE_USER: { description: 'ClickHouse user', type: 'string', default: 'default' },
    CLICKHOUSE_PASSWORD: { description: 'ClickHouse password', type: 'string', default: '' },
    CLICKHOUSE_CLUSTER: {
      description:
        "Cluster mode: the cluster (in the servers' remote_servers) that tables are sharded over, as local tables plus Distributed ones; unset for one server",
      type: 'string',
      pattern: '^[A-Za-z_][A-Za-z0-9_]*$',
    },
    CLICKHOUSE_REPLICATED: {
      description:
        'With CLICKHOUSE_CLUSTER: the local tables are Replicated*MergeTrees, copied among the replicas of each shard through Keeper; false for one node per shard',
      type: 'boolean',
      default: true,
    },
  },
  required: ['CLICKHOUSE_URL'],
  read: (v) => ({
    url: v.CLICKHOUSE_URL as string,
    database: v.CLICKHOUSE_DATABASE as string,
    username: v.CLICKHOUSE_USER as string,
    password: v.CLICKHOUSE_PASSWORD as string,
    cluster: v.CLICKHOUSE_CLUSTER === undefined ? undefined : { name: v.CLICKHOUSE_CLUSTER as string, replicated: v.CLICKHOUSE_REPLICATED as boolean },
  }),
};

export interface KafkaConfig {
  brokers: string[];
  clientId: string;
  topicPrefix: string;
  partitions: number;
}

export const kafka: Section<KafkaConfig> = {
  variables: {
    KAFKA_BROKERS: {
      description: 'Comma-separated Kafka bootstrap brokers (distributed mode)',
      type: 'string',
      pattern: '^[^,:\\s]+:\\d+(,[^,:\\s]+:\\d+)*$',
    },
    KAFKA_CLIENT_ID: { description: 'Kafka client id', type: 'string', minLength: 1, default: 'plover' },
    KAFKA_TOPIC_PREFIX: {
      description: 'Put before every Kafka topic and consumer group name, so that several installations share one cluster',
      type: 'string',
      // Kafka's legal name characters; the longest topic name is 249 characters.
      pattern: '^[A-Za-z0-9._-]*$',
      maxLength: 200,
      default: '',
    },
    KAFKA_TOPIC_PARTITIONS: {
      description: 'Partitions of the topics Plover creates: the most ingestion processes that share the work',
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      default: 4,
    },
  },
  required: ['KAFKA_BROKERS'],
  read: (v) => ({
    brokers: (v.KAFKA_BROKERS as string).split(','),
    clientId: v.KAFKA_CLIENT_ID as string,
    topicPrefix: v.KAFKA_TOPIC_PREFIX as string,
    partitions: v.KAFKA_TOPIC_PARTITIONS as number,
  }),
};

/** A token bucket per key (capture: project, events per second; decide: token, requests per second); undefined when off. */
export type RateLimitConfig = { perSecond: number; burst: number } | undefined;

/**
 * The two variables of a rate limit: a rate per second (0 turns the limit off) and a burst (0 means
 * `defaultBurst` of the rate).
 */
function rateLimit(
  perSecond: { name: string; description: string },
  burst: { name: string; description: string },
  defaultBurst: (perSecond: number) => number,
): Section<RateLimitConfig> {
  return {
    variables: {
      [perSecond.name]: { description: perSecond.description, type: 'integer', minimum: 0, default: 0 },
      [burst.name]: { description: burst.description, type: 'integer', minimum: 0, default: 0 },
    },
    read: (v) => {
      const rate = v[perSecond.name] as number;
      return rate > 0 ? { perSecond: rate, burst: (v[burst.name] as number) || defaultBurst(rate) } : undefined;
    },
  };
}

/**
 * How many processes serve a distributed HTTP service on its one port (`node:cluster` workers behind a primary
 * that shares their limits and metrics): an integer, or `auto` for one per core (`os.availableParallelism()`).
 */
function workers(variable: string, service: string): Section<number> {
  return {
    variables: {
      [variable]: {
        description: `Processes serving ${service} on its port (node:cluster workers): an integer, or auto for one per core`,
        type: 'string',
        pattern: '^(auto|[1-9][0-9]{0,2})$',
        default: '1',
      },
    },
    read: (v) => (v[variable] === 'auto' ? os.availableParallelism() : Number(v[variable])),
  };
}

export const captureWorkers = workers('CAPTURE_WORKERS', 'capture');
export const decideWorkers = workers('DECIDE_WORKERS', 'decide');

export interface CaptureConfig {
  /** How long capture waits for the bus to acknowledge a request's events before answering 503. */
  produceTimeoutMs: number;
  /** Per-project token bucket of events; undefined when rate limiting is off. */
  rateLimit: RateLimitConfig;
}

const captureRateLimit = rateLimit(
  { name: 'CAPTURE_RATE_LIMIT_EVENTS_PER_SECOND', description: 'Events per second one project may send before capture answers 429; 0 turns the limit off' },
  { name: 'CAPTURE_RATE_LIMIT_BURST', description: 'Events one project may send at once above that rate; 0 means ten seconds worth' },
  (perSecond) => perSecond * 10,
);

export const capture: Section<CaptureConfig> = {
  variables: {
    CAPTURE_PRODUCE_TIMEOUT_MS: {
      description: 'How long capture waits for the bus to acknowledge a request before answering 503 (clients retry)',
      type: 'integer',
      minimum: 100,
      maximum: 120000,
      default: 5000,
    },
    ...captureRateLimit.variables,
  },
  read: (v) => ({ produceTimeoutMs: v.CAPTURE_PRODUCE_TIMEOUT_MS as number, rateLimit: captureRateLimit.read(v) }),
};

export interface DecideConfig {
  lookupTimeoutMs: number;
  definitionsPollMs: number;
  flagQuotaMonthly: number;
  /** Per-token token bucket of flag requests; undefined when off. */
  rateLimit: RateLimitConfig;
  geoip: boolean;
}

const decideRateLimit = rateLimit(
  { name: 'DECIDE_RATE_LIMIT_PER_SECOND', description: 'Flag requests per second one project token may make before decide answers 429; 0 turns the limit off' },
  { name: 'DECIDE_RATE_LIMIT_BURST', description: 'Flag requests one token may make at once above that rate; 0 means 500 (PostHog)' },
  () => 500,
);

export const decide: Section<DecideConfig> = {
  variables: {
    DECIDE_LOOKUP_TIMEOUT_MS: {
      description: 'How long decide waits for stored person/group/cohort data before the flags needing it fail (errorsWhileComputingFlags)',
      type: 'integer',
      minimum: 1,
      maximum: 60000,
      default: 200,
    },
    DECIDE_DEFINITIONS_POLL_MS: {
      description: 'How often decide checks Postgres for flag changes made by other processes',
      type: 'integer',
      minimum: 50,
      maximum: 60000,
      default: 500,
    },
    DECIDE_FLAG_QUOTA_MONTHLY: {
      description: 'Flag requests per project and calendar month before decide answers quotaLimited; 0 turns the quota off',
      type: 'integer',
      minimum: 0,
      default: 0,
    },
    ...decideRateLimit.variables,
    DECIDE_GEOIP: {
      description: 'Add $geoip_* person properties from the bundled GeoLite2 database (about 60 MB of memory)',
      type: 'boolean',
      default: true,
    },
  },
  read: (v) => ({
    lookupTimeoutMs: v.DECIDE_LOOKUP_TIMEOUT_MS as number,
    definitionsPollMs: v.DECIDE_DEFINITIONS_POLL_MS as number,
    flagQuotaMonthly: v.DECIDE_FLAG_QUOTA_MONTHLY as number,
    rateLimit: decideRateLimit.read(v),
    geoip: v.DECIDE_GEOIP as boolean,
  }),
};

export interface IngestionConfig {
  /** Most messages handed to the consumer at once (one partition's); also the largest ClickHouse insert. */
  batchSize: number;
  /** How long a short batch waits for more messages (ConsumeOptions.lingerMs). */
  lingerMs: number;
  /** Distinct ids processed at once within a batch (one person's events stay in order). */
  concurrency: number;
  /** Wait before a batch that failed (Postgres or ClickHouse unreachable) is delivered again. */
  retryBackoffMs: number;
  /** Add `$geoip_*` event and person properties from the bundled GeoLite2 database. */
  geoip: boolean;
  /** Whether ingestion keeps the event and property definitions up to date. */
  definitions: boolean;
  /** Days a stored log record is kept, from its UTC day. */
  logsRetentionDays: number;
}

export const ingestion: Section<IngestionConfig> = {
  variables: {
    INGESTION_BATCH_SIZE: {
      description: 'Most bus messages the ingestion consumer handles (and inserts into ClickHouse) at once',
      type: 'integer',
      minimum: 1,
      maximum: 100000,
      default: 2000,
    },
    INGESTION_BATCH_LINGER_MS: {
      description: 'How long the ingestion consumer lets a short batch wait for more events (fewer, larger batches cost less CPU)',
      type: 'integer',
      minimum: 0,
      maximum: 10000,
      default: 200,
    },
    INGESTION_CONCURRENCY: {
      description: 'Distinct ids the ingestion consumer processes at once (each one in order)',
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      default: 16,
    },
    INGESTION_RETRY_BACKOFF_MS: {
      description: 'Wait before the ingestion consumer retries a batch that failed on an outage',
      type: 'integer',
      minimum: 10,
      maximum: 600000,
      default: 1000,
    },
    INGESTION_GEOIP: {
      description: 'Add $geoip_* event and person properties from the event $ip with the bundled GeoLite2 database (about 60 MB of memory)',
      type: 'boolean',
      default: true,
    },
    INGESTION_DEFINITIONS: {
      description: 'Keep event and property definitions (the names the definitions API lists) up to date while ingesting',
      type: 'boolean',
      default: true,
    },
    LOGS_RETENTION_DAYS: {
      description: 'Days an OpenTelemetry log record (/i/v1/logs) is kept, counted from its UTC day; applies to records stored from then on',
      type: 'integer',
      minimum: 1,
      maximum: 3650,
      default: 30,
    },
  },
  read: (v) => ({
    batchSize: v.INGESTION_BATCH_SIZE as number,
    lingerMs: v.INGESTION_BATCH_LINGER_MS as number,
    concurrency: v.INGESTION_CONCURRENCY as number,
    retryBackoffMs: v.INGESTION_RETRY_BACKOFF_MS as number,
    geoip: v.INGESTION_GEOIP as boolean,
    definitions: v.INGESTION_DEFINITIONS as boolean,
    logsRetentionDays: v.LOGS_RETENTION_DAYS as number,
  }),
};

export interface BootstrapConfig {
  adminEmail: string;
  projectName: string;
  timezone: string;
}

export const bootstrap: Section<BootstrapConfig> = {
  variables: {
    PLOVER_ADMIN_EMAIL: {
      description: 'Email of the admin user created on first start',
      type: 'string',
      pattern: '^[^@\\s]+@[^@\\s]+$',
      default: 'admin@plover.local',
    },
    PLOVER_PROJECT_NAME: {
      description: 'Name of the project created on first start',
      type: 'string',
      minLength: 1,
      maxLength: 200,
      default: 'Default project',
    },
    PLOVER_TIMEZONE: { description: 'IANA timezone of the project created on first start', type: 'string', minLength: 1, default: 'UTC' },
  },
  read: (v) => ({
    adminEmail: v.PLOVER_ADMIN_EMAIL as string,
    projectName: v.PLOVER_PROJECT_NAME as string,
    timezone: ianaTimezone('PLOVER_TIMEZONE', v.PLOVER_TIMEZONE as string),
  }),
};

export interface ManagementConfig {
  /** Cron expression (UTC) of the queued event deletion job. */
  deletionJobSchedule: string;
  /** Where clients reach Plover: the origin of the API's absolute links (`next`, `previous`). */
  siteUrl: string;
}

export const management: Section<ManagementConfig> = {
  variables: {
    DELETION_JOB_SCHEDULE: {
      description: 'When queued person event deletions run: a five-field cron expression in UTC',
      type: 'string',
      pattern: '^\\S+(\\s+\\S+){4}$',
      default: '0 5 * * 0',
    },
    SITE_URL: {
      description: 'The URL clients reach Plover at (scheme, host, port): absolute links the API answers with start with it',
      type: 'string',
      pattern: '^https?://[^/?#]+/?$',
      default: 'http://localhost:8000',
    },
  },
  read: (v) => ({ deletionJobSchedule: v.DELETION_JOB_SCHEDULE as string, siteUrl: (v.SITE_URL as string).replace(/\/$/, '') }),
};

/** Bounds on what one analysis request may make ClickHouse do, the same on a server and on chDB. */
export interface QueryLimits {
  /** `max_execution_time`: seconds a statement may run. */
  maxExecutionSeconds: number;
  /** `max_memory_usage`: bytes one statement may allocate in the engine. */
  maxMemoryBytes: number;
  /** `max_rows_to_read` / `max_bytes_to_read`: what one statement may scan. */
  maxRowsToRead: number;
  maxBytesToRead: number;
  /** `max_result_rows` / `max_result_bytes`: what one statement may hand back to Node. */
  maxResultRows: number;
  maxResultBytes: number;
  /** `max_threads`: the engine's threads per statement; 0 leaves the engine's default (its cores). */
  maxThreads: number;
  /**
   * `os_thread_priority`: the nice value (0–19) the engine gives the threads of a statement while it runs, so that
   * a contended core goes to the request thread first; 0 leaves them at the process's priority. The engine applies
   * it only with the CAP_SYS_NICE capability (it must set the threads back afterwards), else it is a no-op.
   */
  threadNice: number;
  /**
   * Points (series × breakdown values × intervals) one computed insight may answer with; a request that could
   * produce more is refused before any statement runs (`checkPoints`).
   */
  maxPoints: number;
}

export interface AnalysisConfig {
  /** What one analysis statement may make ClickHouse do (`limitedClickHouse` applies them). */
  limits: QueryLimits;
  /** Analysis requests one project may have running at once; more answer 429. */
  concurrencyPerProject: number;
  /** Streamed exports (CSV, JSON lines) running at once in the process; more wait their turn. */
  exportConcurrency: number;
  /** Flattened columns a CSV export may have; the rest go into one `other_properties` JSON column. */
  csvMaxColumns: number;
}

/**
 * Bounds of analysis requests (docs/management.md#analysis-limits). In embedded mode analysis shares two or so
 * cores with capture and ingestion: ANALYSIS_MAX_THREADS defaults to 1 and ANALYSIS_THREAD_NICE to 10 (below the
 * request thread); against a ClickHouse server, to the server's own default and 0.
 */
export function analysis(embedded: boolean): Section<AnalysisConfig> {
  const count = (description: string, defaultValue: number, minimum = 1, maximum = Number.MAX_SAFE_INTEGER): VariableSchema => ({
    description,
    type: 'integer',
    minimum,
    maximum,
    default: defaultValue,
  });
  return {
    variables: {
      ANALYSIS_MAX_EXECUTION_SECONDS: count('Seconds one analysis statement may run (ClickHouse max_execution_time)', 25),
      ANALYSIS_MAX_MEMORY_BYTES: count('Bytes one analysis statement may allocate in ClickHouse (max_memory_usage)', 1_073_741_824),
      ANALYSIS_MAX_ROWS_TO_READ: count('Rows one analysis statement may read (max_rows_to_read)', 1_000_000_000),
      ANALYSIS_MAX_BYTES_TO_READ: count('Bytes one analysis statement may read (max_bytes_to_read)', 100_000_000_000),
      ANALYSIS_MAX_RESULT_ROWS: count('Rows one analysis statement may return (max_result_rows)', 500_000),
      ANALYSIS_MAX_RESULT_BYTES: count('Bytes one analysis statement may return (max_result_bytes)', 134_217_728),
      ANALYSIS_MAX_THREADS: count('ClickHouse threads per analysis statement (max_threads); 0: the engine default', embedded ? 1 : 0, 0),
      ANALYSIS_THREAD_NICE: count(
        "Nice value of an analysis statement's engine threads while it runs (os_thread_priority, needs CAP_SYS_NICE); 0: the process's priority",
        embedded ? 10 : 0,
        0,
        19,
      ),
      ANALYSIS_MAX_POINTS: count('Points (series × breakdown values × intervals) one insight may compute; more is a 400', 500_000),
      ANALYSIS_CONCURRENCY_PER_PROJECT: count('Analysis requests one project may run at once; more wait their turn, then answer 429 with Retry-After', 4),
      EXPORT_CONCURRENCY: count('Streamed exports running at once in a process; more wait in a queue', 2),
      CSV_EXPORT_MAX_COLUMNS: count('Columns a CSV export may have; further properties go into one JSON column', 1000),
    },
    read: (v) => ({
      limits: {
        maxExecutionSeconds: v.ANALYSIS_MAX_EXECUTION_SECONDS as number,
        maxMemoryBytes: v.ANALYSIS_MAX_MEMORY_BYTES as number,
        maxRowsToRead: v.ANALYSIS_MAX_ROWS_TO_READ as number,
        maxBytesToRead: v.ANALYSIS_MAX_BYTES_TO_READ as number,
        maxResultRows: v.ANALYSIS_MAX_RESULT_ROWS as number,
        maxResultBytes: v.ANALYSIS_MAX_RESULT_BYTES as number,
        maxThreads: v.ANALYSIS_MAX_THREADS as number,
        threadNice: v.ANALYSIS_THREAD_NICE as number,
        maxPoints: v.ANALYSIS_MAX_POINTS as number,
      },
      concurrencyPerProject: v.ANALYSIS_CONCURRENCY_PER_PROJECT as number,
      exportConcurrency: v.EXPORT_CONCURRENCY as number,
      csvMaxColumns: v.CSV_EXPORT_MAX_COLUMNS as number,
    }),
  };
}

function ianaTimezone(variable: string, name: string): string {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    throw new ConfigError(variable, `is not an IANA timezone (got ${JSON.stringify(name)})`);
  }
}
