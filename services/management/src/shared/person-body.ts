import { Type, type Static } from '@sinclair/typebox';
import { component } from './schema';

/** A person as the API shows it (PostHog's PersonSerializer): persons, and the person of a recording. */
export const Person = component(
  'Person',
  Type.Object({
    id: Type.Integer(),
    name: Type.String(),
    distinct_ids: Type.Array(Type.String()),
    properties: Type.Unsafe<Record<string, unknown>>({ type: ['object', 'null'], additionalProperties: true }),
    created_at: Type.String({ format: 'date-time' }),
    uuid: Type.String({ format: 'uuid' }),
    is_identified: Type.Boolean(),
  }),
);
export type PersonBody = Static<typeof Person>;

/** PostHog's default display-name properties, in order (`get_person_name_helper`). */
const NAME_PROPERTIES = ['email', 'Email', '$email', 'name', 'Name', 'username', 'Username', 'UserName'];
const ANONYMOUS = /^([a-z0-9]+-){4}([a-z0-9]+)$/;

/** Non-anonymous distinct ids first (stable otherwise), as PostHog sorts them. */
function sortDistinctIds(ids: readonly string[]): string[] {
  return [...ids].sort((a, b) => Number(ANONYMOUS.test(a)) - Number(ANONYMOUS.test(b)));
}

function personName(id: number, properties: Record<string, unknown>, distinctIds: readonly string[]): string {
  for (const key of NAME_PROPERTIES) {
    const value = properties[key];
    if (typeof value === 'string' && value !== '') return value;
    if (typeof value === 'number') return String(value);
  }
  return distinctIds[0] ?? String(id);
}

export function personBody(row: {
  id: number;
  uuid: string;
  properties: Record<string, unknown>;
  createdAt: Date;
  isIdentified: boolean;
  distinctIds: readonly string[];
}): PersonBody {
  const distinctIds = sortDistinctIds(row.distinctIds);
  return {
    id: row.id,
    name: personName(row.id, row.properties, distinctIds),
    distinct_ids: distinctIds,
    properties: row.properties,
    created_at: row.createdAt.toISOString(),
    uuid: row.uuid,
    is_identified: row.isIdentified,
  };
}
