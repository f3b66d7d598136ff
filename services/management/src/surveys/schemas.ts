import { Type } from '@sinclair/typebox';
import { AnyObject, component, Nullable, Types } from '../shared/schema';

const dateTime = Type.String({ format: 'date-time' });

export const SurveyWrite = component(
  'SurveyWrite',
  Type.Object({
    name: Type.Optional(Type.String({ maxLength: 400, description: 'required on create' })),
    description: Type.Optional(Type.String()),
    type: Type.Optional(Type.String({ description: 'create only' })),
    questions: Type.Optional(Type.Array(AnyObject())),
    appearance: Type.Optional(Types<Record<string, unknown> | null>(['object', 'null'], { additionalProperties: true })),
    conditions: Type.Optional(Types<Record<string, unknown> | null>(['object', 'null'], { additionalProperties: true })),
    targeting_flag_filters: Type.Optional(
      Types<Record<string, unknown> | null>(['object', 'null'], { additionalProperties: true, description: 'create only' }),
    ),
    linked_flag_id: Type.Optional(Types<number | null>(['integer', 'null'], { description: 'create only' })),
    start_date: Type.Optional(Types<string | null>(['string', 'null'], { format: 'date-time' })),
    end_date: Type.Optional(Types<string | null>(['string', 'null'], { format: 'date-time' })),
    archived: Type.Optional(Type.Boolean()),
    deleted: Type.Optional(Type.Boolean()),
  }),
);

const flagRef = Type.Object({ id: Type.Integer(), key: Nullable(Type.String()) });

export const Survey = component(
  'Survey',
  Type.Object(
    {
      id: Type.String({ format: 'uuid' }),
      name: Type.String(),
      description: Type.String(),
      type: Type.String({ enum: ['popover', 'widget', 'api', 'external_survey'] }),
      questions: Type.Array(AnyObject()),
      appearance: Types<Record<string, unknown> | null>(['object', 'null']),
      conditions: Types<Record<string, unknown> | null>(['object', 'null']),
      start_date: Types<string | null>(['string', 'null'], { format: 'date-time' }),
      end_date: Types<string | null>(['string', 'null'], { format: 'date-time' }),
      archived: Type.Boolean(),
      created_at: dateTime,
      linked_flag: Type.Union([flagRef, Type.Null()], { description: '`{id, key}`' }),
      linked_flag_id: Types<number | null>(['integer', 'null']),
      targeting_flag: Type.Union([Type.Object({ ...flagRef.properties, filters: Type.Unknown() }), Type.Null()], { description: '`{id, key, filters}`' }),
    },
    { additionalProperties: true },
  ),
);

/** An update that soft-deleted the object answers only its id. */
export const SurveyUpdated = Type.Union([Survey, Type.Object({ id: Type.String({ format: 'uuid' }), deleted: Type.Literal(true) })]);
