export * from './load';
export * as sections from './sections';
export type {
  AnalysisConfig,
  BootstrapConfig,
  CaptureConfig,
  ClickHouseConfig,
  DecideConfig,
  DataDirConfig,
  HttpConfig,
  IngestionConfig,
  KafkaConfig,
  LogFormat,
  LoggingConfig,
  PostgresConfig,
  QueryLimits,
} from './sections';
