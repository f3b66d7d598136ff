import { Type } from '@sinclair/typebox';
import { AnyObject, component, Types } from '../shared/schema';

const dateTime = Type.String({ format: 'date-time' });

export const CohortWrite = component(
  'CohortWrite',
  Type.Object({
    name: Type.Optional(Type.String({ maxLength: 400 })),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    filters: Type.Optional(AnyObject()),
    is_static: Type.Optional(Type.Boolean({ description: 'create only' })),
    deleted: Type.Optional(Type.Boolean()),
    distinct_ids: Type.Optional(Type.Array(Types<string | number>(['string', 'integer']), { description: 'members added to a static cohort' })),
    query: Type.Optional(AnyObject({ description: 'create only, static: the persons an ActorsQuery lists become its members' })),
  }),
);

export const Cohort = component(
  'Cohort',
  Type.Object({
    id: Type.Integer(),
    name: Type.String(),
    description: Type.String(),
    filters: AnyObject({ description: '`properties`: nested `{type: AND|OR, values}` groups' }),
    groups: Type.Tuple([]),
    query: Type.Null(),
    is_static: Type.Boolean(),
    deleted: Type.Boolean(),
    version: Type.Integer(),
    is_calculating: Type.Boolean(),
    errors_calculating: Type.Integer({ description: 'failed calculations in a row' }),
    last_calculation: Types<string | null>(['string', 'null'], { format: 'date-time', description: 'when the members were last calculated (dynamic cohorts)' }),
    count: Types<number | null>(['integer', 'null'], { description: 'members: of a static cohort, or of a dynamic one as last calculated (null before)' }),
    created_by: Type.Union([Type.Object({ id: Type.Integer() }), Type.Null()]),
    created_at: dateTime,
  }),
);
