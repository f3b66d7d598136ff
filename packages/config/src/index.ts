export * from './load';
export * as sections from './sections';
export type { BootstrapConfig, CaptureConfig, ClickHouseConfig, DataDirConfig, HttpConfig, KafkaConfig, LoggingConfig, PostgresConfig } from './sections';
