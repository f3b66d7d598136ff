/**
 * A ClickHouse port that runs nothing and records what it is given, answering migrate()'s two queries as a fresh
 * database would: the statements migrate() sends, in order, for golden files and for replaying them elsewhere.
 */
import { withSettings, type ClickHouse, type ClickHouseCluster, type ClickHouseParams, type RowsResult, type StatementSettings } from '@plover/clickhouse';

export interface Recorded {
  kind: 'command' | 'query';
  name: string;
  sql: string;
  params?: ClickHouseParams;
}

export class RecordingClickHouse implements ClickHouse {
  readonly recorded: Recorded[] = [];

  constructor(readonly cluster?: ClickHouseCluster) {}

  command(name: string, sql: string, params?: ClickHouseParams): Promise<void> {
    this.recorded.push({ kind: 'command', name, sql, params });
    return Promise.resolve();
  }

  query<R>(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<R[]> {
    this.recorded.push({ kind: 'query', name, sql: withSettings(sql, settings), params });
    return Promise.resolve((name === 'migrate.currentDatabase' ? [{ database: 'default' }] : []) as R[]);
  }

  queryRows(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<RowsResult> {
    this.recorded.push({ kind: 'query', name, sql: withSettings(sql, settings), params });
    return Promise.resolve({ columns: [], rows: [] });
  }

  queryRaw(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): Promise<Buffer> {
    this.recorded.push({ kind: 'query', name, sql: withSettings(sql, settings), params });
    return Promise.resolve(Buffer.alloc(0));
  }

  queryRawStream(name: string, sql: string, params?: ClickHouseParams, settings?: StatementSettings): AsyncIterable<Uint8Array> {
    this.recorded.push({ kind: 'query', name, sql: withSettings(sql, settings), params });
    return (async function* () {})();
  }

  insert(table: string): Promise<void> {
    return Promise.reject(new Error(`unexpected insert into ${table}`));
  }

  async ping(): Promise<void> {}
  async close(): Promise<void> {}
}

/** A golden file's text: each statement after a comment line naming it (and its parameters), ending in `;`. */
export function formatRecorded(recorded: readonly Recorded[]): string {
  const blocks = recorded.map(
    ({ kind, name, sql, params }) => `-- ${kind === 'query' ? 'query ' : ''}${name}${params ? ` ${JSON.stringify(params)}` : ''}\n${sql}`,
  );
  return `${blocks.join(';\n\n')};\n`;
}
