import { containsPattern, SqlBuilder, type Sql } from '@plover/postgres';
import { USER_JSON, type UserBasic } from '../shared/users';
import type { Page } from '../http/render';

/** The rows ingestion keeps (docs/definitions.md), with what the API adds to them. */
interface Described {
  id: string;
  name: string;
  description: string;
  tags: string[];
  verified: boolean;
  verified_at: Date | null;
  verified_by: UserBasic | null;
  hidden: boolean;
  updated_at: Date | null;
  updated_by: UserBasic | null;
}

export interface EventDefinitionRow extends Described {
  created_at: Date | null;
  last_seen_at: Date | null;
}

export interface PropertyDefinitionRow extends Described {
  property_type: string | null;
  is_numerical: boolean;
  /** Null unless the listing named events. */
  is_seen_on_filtered_events: boolean | null;
}

export type EventOrdering = 'name' | 'last_seen_at' | 'last_seen_at::date';

export interface EventListing {
  search?: string;
  /** `custom`: names not starting `$`; `posthog`: names starting `$`. */
  origin?: 'custom' | 'posthog';
  excluded?: string[];
  excludeHidden?: boolean;
  ordering?: { field: EventOrdering; descending: boolean };
}

export interface PropertyListing {
  type: 1 | 2 | 3;
  groupTypeIndex?: number;
  search?: string;
  names?: string[];
  excluded?: string[];
  isNumerical?: boolean;
  isFeatureFlag?: boolean;
  eventNames?: string[];
  onlySeenOnEvents?: boolean;
  excludeCore?: boolean;
  excludeHidden?: boolean;
}

export interface DescriptionFields {
  description?: string;
  tags?: string[];
  verified?: boolean;
  hidden?: boolean;
}

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const DESCRIBED = (alias: string) => `${alias}.id, ${alias}.name, ${alias}.description, ${alias}.tags, ${alias}.verified, ${alias}.verified_at,
  ${USER_JSON('vu')} AS verified_by, ${alias}.hidden, ${alias}.updated_at, ${USER_JSON('uu')} AS updated_by`;
const USERS = (alias: string) => `LEFT JOIN users vu ON vu.id = ${alias}.verified_by_id LEFT JOIN users uu ON uu.id = ${alias}.updated_by_id`;

/** Every whitespace-separated word of a search must occur in the name, in any case. */
function searchConditions(builder: SqlBuilder, search: string | undefined): string[] {
  return (search ?? '')
    .split(/\s+/)
    .filter((word) => word !== '')
    .map((word) => `d.name ILIKE ${builder.bind(containsPattern(word))}`);
}

/** Whether the property was seen on one of the listing's events (null when it names none). */
function seenOnEvents(builder: SqlBuilder, listing: PropertyListing): string {
  if (!listing.eventNames) return 'NULL::boolean';
  return `EXISTS (SELECT 1 FROM event_properties ep WHERE ep.project_id = d.project_id AND ep.property = d.name
    AND ep.event = ANY(${builder.bind(listing.eventNames)}::text[]))`;
}

/** The listing's conditions on `property_definitions d`; a builder binds each value it uses, so the list and its count each get their own. */
function propertyFilter(builder: SqlBuilder, projectId: number, listing: PropertyListing): string {
  const where = [`d.project_id = ${builder.bind(projectId)}`, `d.type = ${builder.bind(listing.type)}`, ...searchConditions(builder, listing.search)];
  if (listing.groupTypeIndex !== undefined) where.push(`d.group_type_index = ${builder.bind(listing.groupTypeIndex)}`);
  if (listing.names) where.push(`d.name = ANY(${builder.bind(listing.names)}::text[])`);
  if (listing.excluded?.length) where.push(`NOT (d.name = ANY(${builder.bind(listing.excluded)}::text[]))`);
  if (listing.isNumerical) where.push('d.is_numerical');
  if (listing.isFeatureFlag !== undefined) where.push(`${listing.isFeatureFlag ? '' : 'NOT '}starts_with(d.name, '$feature/')`);
  if (listing.excludeCore) where.push(`left(d.name, 1) <> '$'`);
  if (listing.excludeHidden) where.push('NOT d.hidden');
  if (listing.onlySeenOnEvents && listing.eventNames) where.push(seenOnEvents(builder, listing));
  return where.join(' AND ');
}

/** Reads and writes of `event_definitions`, `property_definitions` and `event_properties` for the definitions API. */
export class NamesStore {
  constructor(private readonly sql: Sql) {}

  async listEvents(projectId: number, listing: EventListing, page: Page): Promise<{ rows: EventDefinitionRow[]; count: number }> {
    const builder = new SqlBuilder([projectId]);
    const where = ['d.project_id = $1', ...searchConditions(builder, listing.search)];
    if (listing.origin === 'custom') where.push(`left(d.name, 1) <> '$'`);
    if (listing.origin === 'posthog') where.push(`left(d.name, 1) = '$'`);
    if (listing.excluded?.length) where.push(`NOT (d.name = ANY(${builder.bind(listing.excluded)}::text[]))`);
    if (listing.excludeHidden) where.push('NOT d.hidden');
    const ordering = listing.ordering ?? { field: 'last_seen_at::date', descending: true };
    const direction = ordering.descending ? 'DESC NULLS LAST' : 'ASC NULLS FIRST';
    const order =
      ordering.field === 'name'
        ? `d.name ${ordering.descending ? 'DESC' : 'ASC'}`
        : `${ordering.field === 'last_seen_at' ? 'd.last_seen_at' : "(d.last_seen_at AT TIME ZONE 'UTC')::date"} ${direction}, d.name ASC`;
    const filter = where.join(' AND ');
    const [rows, count] = await Promise.all([
      this.sql.query<EventDefinitionRow>(
        'definitions.listEvents',
        `SELECT ${DESCRIBED('d')}, d.created_at, d.last_seen_at FROM event_definitions d ${USERS('d')}
          WHERE ${filter} ORDER BY ${order} LIMIT ${builder.bind(page.limit)} OFFSET ${builder.bind(page.offset)}`,
        builder.params,
      ),
      this.sql.query<{ count: number }>(
        'definitions.countEvents',
        `SELECT count(*)::int AS count FROM event_definitions d WHERE ${filter}`,
        builder.params.slice(0, -2),
      ),
    ]);
    return { rows: rows.rows, count: count.rows[0]?.count ?? 0 };
  }

  async event(projectId: number, id: string): Promise<EventDefinitionRow | undefined> {
    if (!UUID_TEXT.test(id)) return undefined;
    const result = await this.sql.query<EventDefinitionRow>(
      'definitions.event',
      `SELECT ${DESCRIBED('d')}, d.created_at, d.last_seen_at FROM event_definitions d ${USERS('d')} WHERE d.project_id = $1 AND d.id = $2`,
      [projectId, id],
    );
    return result.rows[0];
  }

  async listProperties(projectId: number, listing: PropertyListing, page: Page): Promise<{ rows: PropertyDefinitionRow[]; count: number }> {
    const list = new SqlBuilder();
    const count = new SqlBuilder();
    const seen = seenOnEvents(list, listing);
    const [rows, counted] = await Promise.all([
      this.sql.query<PropertyDefinitionRow>(
        'definitions.listProperties',
        `SELECT ${DESCRIBED('d')}, d.property_type, d.is_numerical, ${seen} AS is_seen_on_filtered_events
           FROM property_definitions d ${USERS('d')}
          WHERE ${propertyFilter(list, projectId, listing)}
          ORDER BY is_seen_on_filtered_events DESC NULLS LAST, d.verified DESC, d.name ASC
          LIMIT ${list.bind(page.limit)} OFFSET ${list.bind(page.offset)}`,
        list.params,
      ),
      this.sql.query<{ count: number }>(
        'definitions.countProperties',
        `SELECT count(*)::int AS count FROM property_definitions d WHERE ${propertyFilter(count, projectId, listing)}`,
        count.params,
      ),
    ]);
    return { rows: rows.rows, count: counted.rows[0]?.count ?? 0 };
  }

  async property(projectId: number, id: string): Promise<PropertyDefinitionRow | undefined> {
    if (!UUID_TEXT.test(id)) return undefined;
    const result = await this.sql.query<PropertyDefinitionRow>(
      'definitions.property',
      `SELECT ${DESCRIBED('d')}, d.property_type, d.is_numerical, NULL::boolean AS is_seen_on_filtered_events
         FROM property_definitions d ${USERS('d')} WHERE d.project_id = $1 AND d.id = $2`,
      [projectId, id],
    );
    return result.rows[0];
  }

  /** Writes the given fields; false when no such definition. `verified` records who verified and when (cleared on false). */
  async describe(
    table: 'event_definitions' | 'property_definitions',
    projectId: number,
    id: string,
    userId: number,
    fields: DescriptionFields & { propertyType?: string | null },
  ): Promise<boolean> {
    if (!UUID_TEXT.test(id)) return false;
    const builder = new SqlBuilder([projectId, id, userId]);
    const sets = ['updated_at = now()', 'updated_by_id = $3'];
    if (fields.description !== undefined) sets.push(`description = ${builder.bind(fields.description)}`);
    if (fields.tags !== undefined) sets.push(`tags = ${builder.bind([...new Set(fields.tags)])}::text[]`);
    if (fields.hidden !== undefined) sets.push(`hidden = ${builder.bind(fields.hidden)}`);
    if (fields.verified !== undefined) {
      const verified = builder.bind(fields.verified);
      // Verifying again keeps the first verification's author and time, as PostHog does.
      sets.push(
        `verified_at = CASE WHEN NOT ${verified}::boolean THEN NULL WHEN verified THEN verified_at ELSE now() END`,
        `verified_by_id = CASE WHEN NOT ${verified}::boolean THEN NULL WHEN verified THEN verified_by_id ELSE $3 END`,
        `verified = ${verified}`,
      );
    }
    if (fields.propertyType !== undefined) {
      const type = builder.bind(fields.propertyType);
      sets.push(`property_type = ${type}`, `is_numerical = COALESCE(${type}::text = 'Numeric', false)`);
    }
    const result = await this.sql.query(
      'definitions.describe',
      `UPDATE ${table} SET ${sets.join(', ')} WHERE project_id = $1 AND id = $2::uuid RETURNING id`,
      builder.params,
    );
    return result.rows.length > 0;
  }

  async delete(table: 'event_definitions' | 'property_definitions', projectId: number, id: string): Promise<boolean> {
    if (!UUID_TEXT.test(id)) return false;
    const result = await this.sql.query('definitions.delete', `DELETE FROM ${table} WHERE project_id = $1 AND id = $2::uuid RETURNING id`, [projectId, id]);
    return result.rows.length > 0;
  }
}
