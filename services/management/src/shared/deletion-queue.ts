import type { SqlExecutor } from '@plover/postgres';

/** `async_deletions.deletion_type` of a person's events (PostHog's DeletionType.Person). */
export const DELETION_TYPE_PERSON = 1;

/** Queues the deletion of a person's events for the deletion job (idempotent per person). */
export async function queueEventDeletion(db: SqlExecutor, projectId: number, personUuid: string, userId: number): Promise<void> {
  await db.query(
    'management.queueDeletion',
    `INSERT INTO async_deletions (project_id, deletion_type, key, created_by) VALUES ($1, $2, $3, $4)
     ON CONFLICT (project_id, deletion_type, key) DO NOTHING`,
    [projectId, DELETION_TYPE_PERSON, personUuid, userId],
  );
}

/** Removes a queued deletion that was added for a person that turned out to be gone already. */
export async function unqueueEventDeletion(db: SqlExecutor, projectId: number, personUuid: string): Promise<void> {
  await db.query(
    'management.unqueueDeletion',
    'DELETE FROM async_deletions WHERE project_id = $1 AND deletion_type = $2 AND key = $3 AND delete_verified_at IS NULL',
    [projectId, DELETION_TYPE_PERSON, personUuid],
  );
}
