/**
 * @plover/clickhouse: the ClickHouse port, its HTTP adapter, migrations, and the tables ingestion writes (events,
 * ingestion warnings, person overrides).
 * The chDB adapter lives at `@plover/clickhouse/chdb` so that only embedded mode loads the native engine.
 */
export * from './port';
export { HttpClickHouse, type HttpClickHouseOptions } from './http';
export { migrate, type MigrateOptions } from './migrate';
export * from './events';
export * from './warnings';
export * from './person-overrides';
