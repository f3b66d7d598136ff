/**
 * @plover/clickhouse: the ClickHouse port, its HTTP adapter, migrations, and the tables ingestion writes (events,
 * ingestion warnings, person overrides, session replay), on one server or sharded over a cluster (cluster.ts).
 * The chDB adapter is the package `@plover/chdb`, so that only embedded mode installs and loads the native engine.
 */
export * from './port';
export { HttpClickHouse, type HttpClickHouseOptions } from './http';
export { migrate, type MigrateOptions } from './migrate';
export { CLUSTER_SETTINGS, clusterStatements, localTable, mutationTarget, SHARDING_KEYS } from './cluster';
export * from './events';
export * from './warnings';
export * from './person-overrides';
export * from './replay';
export * from './logs';
// What an adapter outside this package (chDB) shares with the HTTP one: error classification and the wire rules.
export { clickHouseFailure, closedFailure, unclassifiedFailure } from './errors';
export { assertTableName, compactRows, normalizeParams, SESSION_SETTINGS, withSettings, type CompactResult } from './wire';
export { checkPoints, limitedClickHouse, limitExceeded, limitSettings } from './limits';
