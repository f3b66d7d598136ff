import { Type } from '@sinclair/typebox';
import { component, Nullable } from '../shared/schema';

const dateTime = Type.String({ format: 'date-time' });

export const EarlyAccessFeatureWrite = component(
  'EarlyAccessFeatureWrite',
  Type.Object({
    name: Type.Optional(Type.String({ maxLength: 200, description: 'required on create' })),
    description: Type.Optional(Type.String()),
    stage: Type.Optional(Type.String()),
    documentation_url: Type.Optional(Type.String({ maxLength: 800 })),
    feature_flag_id: Type.Optional(Type.Integer({ description: 'create only: an existing flag instead of a new one' })),
    feature_flag_key: Type.Optional(Type.String({ maxLength: 400, description: "create only: the new flag's key" })),
    deleted: Type.Optional(Type.Boolean()),
  }),
);

export const EarlyAccessFeature = component(
  'EarlyAccessFeature',
  Type.Object({
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    description: Type.String(),
    stage: Type.String({ enum: ['draft', 'concept', 'alpha', 'beta', 'general-availability', 'archived'] }),
    documentation_url: Type.String(),
    created_at: dateTime,
    feature_flag: Type.Union([Type.Object({ id: Type.Integer(), key: Nullable(Type.String()), filters: Type.Unknown() }), Type.Null()], {
      description: '`{id, key, filters}`',
    }),
  }),
);

/** An update that soft-deleted the object answers only its id. */
export const FeatureUpdated = Type.Union([EarlyAccessFeature, Type.Object({ id: Type.String({ format: 'uuid' }), deleted: Type.Literal(true) })]);
