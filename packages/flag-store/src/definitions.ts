import { EventEmitter } from 'node:events';
import type { Sql, SqlExecutor } from '@plover/postgres';

/**
 * In-process change signal, so that in embedded mode a flag written through the management API is served by
 * the very next decide call: decide in this process drops its cached definitions at once.
 */
const channel = new EventEmitter();
channel.setMaxListeners(0);

/**
 * Runs a write to a project's flags, cohorts or early access features and surveys (`fn`) in one transaction
 * that also bumps `flag_definition_versions`, which every decide process polls; once committed, signals
 * decide in this process (`onDefinitionsChanged`).
 */
export async function writeDefinitions<T>(sql: Sql, projectId: number, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
  const result = await sql.transaction(async (tx) => {
    const value = await fn(tx);
    await tx.query(
      'flags.bumpDefinitionsVersion',
      `INSERT INTO flag_definition_versions (project_id) VALUES ($1)
       ON CONFLICT (project_id) DO UPDATE SET version = flag_definition_versions.version + 1, updated_at = now()`,
      [projectId],
    );
    return value;
  });
  channel.emit('changed', projectId);
  return result;
}

/** Calls `listener` after every `writeDefinitions` in this process; returns the unsubscribe function. */
export function onDefinitionsChanged(listener: (projectId: number) => void): () => void {
  channel.on('changed', listener);
  return () => channel.off('changed', listener);
}
