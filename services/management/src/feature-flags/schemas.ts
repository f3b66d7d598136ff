import { Type } from '@sinclair/typebox';
import { AnyObject, component, Nullable, Types } from '../shared/schema';

const dateTime = Type.String({ format: 'date-time' });

export const FeatureFlagWrite = component(
  'FeatureFlagWrite',
  Type.Object({
    key: Type.Optional(Type.String({ maxLength: 400, description: 'letters, digits, `-` and `_`; required on create' })),
    name: Type.Optional(Nullable(Type.String())),
    filters: Type.Optional(AnyObject()),
    active: Type.Optional(Type.Boolean()),
    deleted: Type.Optional(Type.Boolean()),
    ensure_experience_continuity: Type.Optional(Type.Boolean()),
    is_remote_configuration: Type.Optional(Type.Boolean()),
    rollout_percentage: Type.Optional(Types<number | null>(['number', 'null'], { minimum: 0, maximum: 100 })),
  }),
);

export const FeatureFlag = component(
  'FeatureFlag',
  Type.Object({
    id: Type.Integer(),
    name: Type.String(),
    key: Type.String(),
    filters: AnyObject({ description: '`groups`, `multivariate`, `payloads`, `super_groups`, `aggregation_group_type_index`' }),
    deleted: Type.Boolean(),
    active: Type.Boolean(),
    created_by: Type.Union([
      Type.Object({
        id: Type.Integer(),
        uuid: Nullable(Type.String()),
        distinct_id: Nullable(Type.String()),
        first_name: Type.String(),
        email: Nullable(Type.String()),
      }),
      Type.Null(),
    ]),
    created_at: dateTime,
    updated_at: dateTime,
    version: Type.Integer(),
    is_simple_flag: Type.Boolean(),
    rollout_percentage: Types<number | null>(['number', 'null']),
    ensure_experience_continuity: Type.Boolean(),
    is_remote_configuration: Type.Boolean(),
    has_encrypted_payloads: Type.Boolean(),
    experiment_set: Type.Array(Type.Integer(), { description: 'the live experiments running on the flag' }),
    surveys: Type.Tuple([]),
    features: Type.Tuple([]),
    rollback_conditions: Type.Null(),
    performed_rollback: Type.Boolean(),
    tags: Type.Tuple([]),
    can_edit: Type.Boolean(),
    status: Type.Union([Type.Literal('ACTIVE'), Type.Literal('DELETED')]),
    user_access_level: Type.Union([Type.Literal('none'), Type.Literal('viewer'), Type.Literal('editor')]),
  }),
);

/** A remote-configuration flag's `true` payload, JSON-encoded (null without one). */
export const RemoteConfigPayload = Type.Unsafe<unknown>({ description: 'the stored payload, JSON-encoded once more, or null' });
