// PGliteSql is deliberately not exported here but from the `@plover/postgres/pglite` subpath, so services
// talking to a real server never load the WASM build.
export type { QueryResult, Sql, SqlExecutor } from './sql';
export { SqlBuilder, containsPattern } from './sql-builder';
export { PgSql, type PgSqlOptions } from './pg';
export { isUniqueViolation } from './errors';
export { migrate, type MigrateOptions } from './migrate';
export { WritesRefusedWhen, readOnly } from './read-only';
