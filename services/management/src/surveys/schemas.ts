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

const eventStats = Type.Object({
  total_count: Type.Integer(),
  unique_persons: Type.Integer(),
  first_seen: Types<string | null>(['string', 'null'], { format: 'date-time' }),
  last_seen: Types<string | null>(['string', 'null'], { format: 'date-time' }),
  unique_persons_only_seen: Type.Integer({ description: 'shown only: shown − dismissed − sent persons, at least 0' }),
  total_count_only_seen: Type.Integer({ description: 'shown only: the same on totals' }),
});

const SurveyRatesSchema = Type.Object({
  response_rate: Type.Number(),
  dismissal_rate: Type.Number(),
  unique_users_response_rate: Type.Number(),
  unique_users_dismissal_rate: Type.Number(),
});

const statsObject = Type.Object({ 'survey shown': eventStats, 'survey dismissed': eventStats, 'survey sent': eventStats });

/** One survey's counts: shown, dismissed, sent, and the rates over shown. */
export const SurveyStatsResult = component(
  'SurveyStats',
  Type.Object({
    survey_id: Type.String({ format: 'uuid' }),
    start_date: dateTime,
    end_date: Types<string | null>(['string', 'null'], { format: 'date-time' }),
    stats: statsObject,
    rates: SurveyRatesSchema,
  }),
);

/** All unarchived surveys' counts together; `stats` is `{}` when the project has none. */
export const SurveysStatsResult = component(
  'SurveysStats',
  Type.Object({ stats: Type.Union([statsObject, Type.Object({}, { additionalProperties: false })]), rates: SurveyRatesSchema }),
);

export const SurveyStatsQuery = Type.Object({
  date_from: Type.Optional(Type.String({ description: 'ISO 8601 with a time zone' })),
  date_to: Type.Optional(Type.String({ description: 'ISO 8601 with a time zone' })),
  exclude_archived: Type.Optional(Type.Boolean({ description: 'leave out archived responses (one survey only)' })),
});

export const ResponsesCountQuery = Type.Object({
  survey_ids: Type.Optional(Type.String({ description: 'comma-separated survey ids; all live surveys when absent' })),
  exclude_archived: Type.Optional(Type.Boolean()),
});

export const ResponsesCount = component(
  'SurveyResponsesCount',
  Type.Record(Type.String(), Type.Integer(), { description: 'submissions per survey id (surveys with none are absent)' }),
);

export const ResponseArchived = Type.Object({ response_uuid: Type.String({ format: 'uuid' }), archived: Type.Boolean() });

export const SurveyResultsQuery = SurveyStatsQuery;

export const SurveyResponse = component(
  'SurveyResponse',
  Type.Object({
    uuid: Type.String({ format: 'uuid', description: "the submission's latest `survey sent` event (what archiving names)" }),
    submission_id: Types<string | null>(['string', 'null']),
    timestamp: dateTime,
    distinct_id: Type.String(),
    person_id: Type.String(),
    answers: Type.Record(Type.String(), Type.Unknown(), { description: 'by question id; null when unanswered' }),
  }),
);

export const SurveyQuestionResults = component(
  'SurveyQuestionResults',
  Type.Object({
    survey_id: Type.String({ format: 'uuid' }),
    submissions: Type.Integer(),
    questions: Type.Array(
      Type.Object({
        id: Type.String(),
        index: Type.Integer(),
        question: Type.String(),
        type: Type.String(),
        response_count: Type.Integer(),
        distribution: Type.Optional(Type.Record(Type.String(), Type.Integer())),
        average: Type.Optional(Types<number | null>(['number', 'null'])),
        answers: Type.Optional(Type.Array(Type.Object({ value: Type.String(), timestamp: dateTime, distinct_id: Type.String() }))),
      }),
    ),
  }),
);
