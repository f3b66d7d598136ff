import { containsPattern, SqlBuilder, type Sql } from '@plover/postgres';
import type { Properties } from './json';
import { MAX_GROUP_TYPES, applyGroupSet, eventGroupsOf, groupIdentifyOf } from './rules/groups';
import { isPersonless } from './rules/identity';
import { LostRaceError, transactionWithReplays } from './transactions';

export interface GroupTypeMapping {
  groupType: string;
  groupTypeIndex: number;
  nameSingular: string | null;
  namePlural: string | null;
}

export interface Group {
  groupTypeIndex: number;
  groupKey: string;
  properties: Properties;
  createdAt: Date;
  version: number;
}

/** One of the event's groups, for the `$group_<index>`, `group<index>_properties` and `_created_at` columns. */
export interface EventGroup {
  groupTypeIndex: number;
  groupKey: string;
  /** Undefined when the group was never identified (no `$groupidentify` yet): no properties, no created_at. */
  group: Group | undefined;
}

export interface GroupEvent {
  event: string;
  timestamp: Date;
  properties: Properties;
}

const GROUP_COLUMNS = `group_type_index AS "groupTypeIndex", group_key AS "groupKey", group_properties AS properties, created_at AS "createdAt", version`;

/**
 * Group types and groups in Postgres (docs/ingestion.md#groups). A group type's index never changes
 * once assigned, so indices are cached per store without invalidation.
 */
export class GroupStore {
  private readonly indices = new Map<number, Map<string, number>>();

  constructor(private readonly sql: Sql) {}

  /**
   * For one event: a `$groupidentify` upserts its group, then the event's `$groups` are resolved to type
   * indices (creating types as needed) with their groups' current rows. Personless events are in no group
   * (PostHog removes their `$group_N` properties too).
   */
  async processEvent(projectId: number, event: GroupEvent): Promise<EventGroup[]> {
    const identify = groupIdentifyOf(event.event, event.properties);
    if (identify) {
      const index = await this.groupTypeIndex(projectId, identify.groupType);
      if (index !== undefined) await this.identifyGroup(projectId, index, identify.groupKey, identify.set, event.timestamp);
    }
    if (isPersonless(event.properties)) return [];

    const resolved = await Promise.all(
      eventGroupsOf(event.properties).map(async ({ groupType, groupKey }) => ({ groupTypeIndex: await this.groupTypeIndex(projectId, groupType), groupKey })),
    );
    const refs = resolved.filter((ref): ref is { groupTypeIndex: number; groupKey: string } => ref.groupTypeIndex !== undefined);
    const groups = await this.getGroups(projectId, refs);
    return refs.map((ref) => ({
      ...ref,
      group: groups.find((group) => group.groupTypeIndex === ref.groupTypeIndex && group.groupKey === ref.groupKey),
    }));
  }

  /**
   * The index of a group type, assigned on first use: the lowest free one of 0–4, first come first served.
   * Undefined once the project has five other types. Concurrent first uses (other consumers, other types)
   * are settled by the table's unique constraints; the loser of a race re-reads and tries the next index.
   */
  async groupTypeIndex(projectId: number, groupType: string): Promise<number | undefined> {
    const cached = this.indices.get(projectId)?.get(groupType);
    if (cached !== undefined) return cached;
    // Each lost race means another type took an index, so there are at most MAX_GROUP_TYPES of them.
    for (let attempt = 0; attempt <= MAX_GROUP_TYPES; attempt += 1) {
      const result = await this.sql.query<{ index: number | null }>(
        'groups.assignTypeIndex',
        `WITH existing AS (
           SELECT group_type_index FROM group_type_mappings WHERE project_id = $1 AND group_type = $2
         ), free AS (
           SELECT i FROM generate_series(0, $3::int - 1) AS i
            WHERE NOT EXISTS (SELECT 1 FROM existing)
              AND i NOT IN (SELECT group_type_index FROM group_type_mappings WHERE project_id = $1)
            ORDER BY i LIMIT 1
         ), inserted AS (
           INSERT INTO group_type_mappings (project_id, group_type, group_type_index)
           SELECT $1, $2, i FROM free
           ON CONFLICT DO NOTHING
           RETURNING group_type_index
         )
         SELECT group_type_index AS index FROM existing
         UNION ALL SELECT group_type_index FROM inserted
         UNION ALL SELECT NULL WHERE NOT EXISTS (SELECT 1 FROM existing) AND NOT EXISTS (SELECT 1 FROM free)`,
        [projectId, groupType, MAX_GROUP_TYPES],
      );
      const row = result.rows[0];
      if (!row) continue;
      if (row.index === null) return undefined;
      const projectIndices = this.indices.get(projectId) ?? new Map<string, number>();
      this.indices.set(projectId, projectIndices.set(groupType, row.index));
      return row.index;
    }
    throw new LostRaceError(`group type ${groupType} assignment`);
  }

  async listGroupTypes(projectId: number): Promise<GroupTypeMapping[]> {
    const result = await this.sql.query<GroupTypeMapping>(
      'groups.listTypes',
      `SELECT group_type AS "groupType", group_type_index AS "groupTypeIndex", name_singular AS "nameSingular", name_plural AS "namePlural"
         FROM group_type_mappings WHERE project_id = $1 ORDER BY group_type_index`,
      [projectId],
    );
    return result.rows;
  }

  /**
   * `$groupidentify`: creates the group (created_at = the event's timestamp, version 0) or writes the keys
   * of `set` that are missing or differ, version + 1 per write. Setting equal values writes nothing, so a
   * replayed event does not bump the version.
   */
  async identifyGroup(projectId: number, groupTypeIndex: number, groupKey: string, set: Properties, timestamp: Date): Promise<Group> {
    return transactionWithReplays(this.sql, async (tx) => {
      const inserted = await tx.query<Group>(
        'groups.insert',
        `INSERT INTO groups (project_id, group_type_index, group_key, group_properties, created_at)
         VALUES ($1, $2, $3, $4::jsonb, $5)
         ON CONFLICT (project_id, group_type_index, group_key) DO NOTHING
         RETURNING ${GROUP_COLUMNS}`,
        [projectId, groupTypeIndex, groupKey, JSON.stringify(set), timestamp],
      );
      if (inserted.rows[0]) return inserted.rows[0];

      const locked = await tx.query<Group & { id: number }>(
        'groups.lock',
        `SELECT id, ${GROUP_COLUMNS} FROM groups WHERE project_id = $1 AND group_type_index = $2 AND group_key = $3 FOR UPDATE`,
        [projectId, groupTypeIndex, groupKey],
      );
      const row = locked.rows[0];
      if (!row) throw new LostRaceError('group deleted while being identified');
      const { id, ...current } = row;
      const applied = applyGroupSet(current.properties, set);
      if (!applied.changed) return current;
      await tx.query('groups.update', 'UPDATE groups SET group_properties = $2::jsonb, version = $3 WHERE id = $1', [
        id,
        JSON.stringify(applied.properties),
        current.version + 1,
      ]);
      return { ...current, properties: applied.properties, version: current.version + 1 };
    });
  }

  /** The stored groups among `refs` (one query; missing groups are absent). */
  async getGroups(projectId: number, refs: ReadonlyArray<{ groupTypeIndex: number; groupKey: string }>): Promise<Group[]> {
    if (refs.length === 0) return [];
    const result = await this.sql.query<Group>(
      'groups.select',
      `SELECT ${GROUP_COLUMNS} FROM groups
        WHERE project_id = $1
          AND (group_type_index, group_key) IN (SELECT * FROM unnest($2::smallint[], $3::text[]))`,
      [projectId, refs.map((ref) => ref.groupTypeIndex), refs.map((ref) => ref.groupKey)],
    );
    return result.rows;
  }

  /** One page (and one row more) of the groups of a type, newest first, key or name containing `search`; with their count. */
  async list(
    projectId: number,
    typeIndex: number,
    search: string | undefined,
    page: { limit: number; offset: number },
  ): Promise<{ rows: GroupListRow[]; count: number }> {
    const params = new SqlBuilder([projectId, typeIndex]);
    let where = 'project_id = $1 AND group_type_index = $2';
    if (search !== undefined) {
      const pattern = params.bind(containsPattern(search));
      where += ` AND (group_key ILIKE ${pattern} OR (group_properties ->> 'name') ILIKE ${pattern})`;
    }
    const rows = await this.sql.query<GroupListRow>(
      'groups.list',
      `SELECT group_type_index, group_key, group_properties, created_at FROM groups WHERE ${where}
        ORDER BY created_at DESC, id DESC LIMIT ${page.limit + 1} OFFSET ${page.offset}`,
      params.params,
    );
    const count = await this.sql.query<{ n: number }>('groups.count', `SELECT count(*)::int AS n FROM groups WHERE ${where}`, params.params);
    return { rows: rows.rows, count: count.rows[0]?.n ?? 0 };
  }
}

/** A group as a listing shows it. */
export interface GroupListRow {
  group_type_index: number;
  group_key: string;
  group_properties: Record<string, unknown>;
  created_at: Date;
}
