import { Type } from '@sinclair/typebox';
import { component, Enum, Nullable, Types } from '../shared/schema';
import { UserOrNull } from '../shared/users';

const dateTime = Type.String({ format: 'date-time' });
const nullableDateTime = Types<string | null>(['string', 'null'], { format: 'date-time' });
export const SCOPES = ['dashboard_item', 'dashboard', 'project', 'organization', 'recording'] as const;
const Scope = Enum(SCOPES, { description: 'where it shows: one insight, one dashboard, the project, every project of the organization' });
const CreationType = Enum(['USR', 'GIT'], { description: 'USR: made by a user; GIT: by an integration' });

export const AnnotationWrite = component(
  'AnnotationWrite',
  Type.Object({
    content: Type.Optional(Nullable(Type.String({ maxLength: 400 }))),
    date_marker: Type.Optional(nullableDateTime),
    creation_type: Type.Optional(CreationType),
    scope: Type.Optional(Scope),
    dashboard_item: Type.Optional(Nullable(Type.Integer({ description: 'the insight a `dashboard_item` annotation belongs to' }))),
    dashboard_id: Type.Optional(Nullable(Type.Integer({ description: 'the dashboard a `dashboard` annotation belongs to' }))),
    deleted: Type.Optional(Type.Boolean({ description: '`true` soft-deletes the annotation' })),
  }),
);

export const Annotation = component(
  'Annotation',
  Type.Object({
    id: Type.Integer(),
    content: Nullable(Type.String()),
    date_marker: nullableDateTime,
    creation_type: CreationType,
    dashboard_item: Nullable(Type.Integer()),
    dashboard_id: Nullable(Type.Integer()),
    dashboard_name: Nullable(Type.String()),
    insight_short_id: Nullable(Type.String()),
    insight_name: Nullable(Type.String()),
    insight_derived_name: Nullable(Type.String()),
    created_by: UserOrNull,
    created_at: dateTime,
    updated_at: dateTime,
    deleted: Type.Boolean(),
    scope: Scope,
  }),
);
