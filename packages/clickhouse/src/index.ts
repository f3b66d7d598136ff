/**
 * @plover/clickhouse: the ClickHouse port, its HTTP adapter, migrations and the events table.
 * The chDB adapter lives at `@plover/clickhouse/chdb` so that only embedded mode loads the native engine.
 */
export * from './port';
export { HttpClickHouse, type HttpClickHouseOptions } from './http';
export { migrate, type MigrateOptions } from './migrate';
export * from './events';
