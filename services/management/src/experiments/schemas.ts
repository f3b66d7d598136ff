import { Type } from '@sinclair/typebox';
import { AnyObject, component, Enum, Nullable, Types } from '../shared/schema';
import { UserOrNull } from '../shared/users';

const dateTime = Type.String({ format: 'date-time' });
const NullableDate = Types<string | null>(['string', 'null'], { format: 'date-time' });
const NullableObject = (description: string) => Type.Unsafe<Record<string, unknown> | null>({ type: ['object', 'null'], description });
const Metrics = (description: string) => Type.Array(AnyObject(), { maxItems: 100, description });
const Uuids = Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string' }, maxItems: 200 });
const Conclusion = Enum(['won', 'lost', 'inconclusive', 'stopped_early', 'invalid', null]);
const Status = Enum(['draft', 'running', 'paused', 'stopped']);

/** The fields a create or an update may set (a create needs `name` and `feature_flag_key`). */
const WRITABLE = {
  name: Type.Optional(Type.String({ maxLength: 400 })),
  description: Type.Optional(Nullable(Type.String({ maxLength: 3000 }))),
  start_date: Type.Optional(NullableDate),
  end_date: Type.Optional(NullableDate),
  parameters: Type.Optional(NullableObject('`feature_flag_variants` (key, rollout_percentage or split_percent), `minimum_detectable_effect`, …')),
  secondary_metrics: Type.Optional(Type.Array(AnyObject(), { maxItems: 100 })),
  filters: Type.Optional(AnyObject()),
  archived: Type.Optional(Type.Boolean()),
  deleted: Type.Optional(Type.Boolean({ description: '`true` soft-deletes the experiment' })),
  type: Type.Optional(Enum(['web', 'product'])),
  exposure_criteria: Type.Optional(NullableObject('`exposure_config`, `multiple_variant_handling` (exclude | first_seen), `filterTestAccounts`')),
  metrics: Type.Optional(Metrics('primary ExperimentMetric nodes')),
  metrics_secondary: Type.Optional(Metrics('secondary ExperimentMetric nodes')),
  primary_metrics_ordered_uuids: Type.Optional(Uuids),
  secondary_metrics_ordered_uuids: Type.Optional(Uuids),
  stats_config: Type.Optional(NullableObject('`method`: bayesian (default) or frequentist')),
  scheduling_config: Type.Optional(NullableObject('stored as given')),
  only_count_matured_users: Type.Optional(Type.Boolean()),
  conclusion: Type.Optional(Conclusion),
  conclusion_comment: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
};

export const ExperimentWrite = component(
  'ExperimentWrite',
  Type.Object({
    ...WRITABLE,
    feature_flag_key: Type.Optional(Type.String({ maxLength: 400, description: 'on create: the flag to use, created when no flag has this key' })),
  }),
);

/** The flag fields an experiment shows (PostHog's minimal flag serializer). */
const ExperimentFlag = Type.Object({
  id: Type.Integer(),
  team_id: Type.Integer(),
  name: Type.String(),
  key: Type.String(),
  filters: AnyObject(),
  deleted: Type.Boolean(),
  active: Type.Boolean(),
  ensure_experience_continuity: Type.Boolean(),
  version: Type.Integer(),
});

export const Experiment = component(
  'Experiment',
  Type.Object({
    id: Type.Integer(),
    name: Type.String(),
    description: Type.String(),
    start_date: NullableDate,
    end_date: NullableDate,
    feature_flag_key: Type.String(),
    feature_flag: ExperimentFlag,
    holdout: Type.Null(),
    holdout_id: Type.Null(),
    exposure_cohort: Type.Null(),
    parameters: NullableObject('as written'),
    secondary_metrics: Type.Array(AnyObject()),
    saved_metrics: Type.Tuple([]),
    saved_metrics_ids: Type.Tuple([]),
    filters: AnyObject(),
    archived: Type.Boolean(),
    deleted: Type.Boolean(),
    created_by: UserOrNull,
    created_at: dateTime,
    updated_at: dateTime,
    type: Enum(['web', 'product']),
    exposure_criteria: NullableObject('as written'),
    metrics: Type.Array(AnyObject()),
    metrics_secondary: Type.Array(AnyObject()),
    stats_config: NullableObject('as written'),
    scheduling_config: NullableObject('as written'),
    allow_unknown_events: Type.Boolean(),
    conclusion: Conclusion,
    conclusion_comment: Nullable(Type.String()),
    primary_metrics_ordered_uuids: Uuids,
    secondary_metrics_ordered_uuids: Uuids,
    only_count_matured_users: Type.Boolean(),
    status: Status,
    user_access_level: Type.String(),
  }),
);

export const ExperimentListQuery = Type.Object({
  status: Type.Optional(Enum(['draft', 'running', 'paused', 'stopped', 'complete', 'all'])),
  archived: Type.Optional(Type.Boolean()),
  search: Type.Optional(Type.String()),
  feature_flag_id: Type.Optional(Type.Integer()),
  created_by_id: Type.Optional(Type.Integer()),
  order: Type.Optional(Type.String({ description: 'a field, `-` first for descending: created_at, name, start_date, end_date, status…' })),
});

/** The body of an action that takes no input: launch, pause, resume, reset, archive, unarchive. */
export const ExperimentAction = component('ExperimentAction', Type.Object({}));

export const EndExperiment = component(
  'EndExperiment',
  Type.Object({ conclusion: Type.Optional(Conclusion), conclusion_comment: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))) }),
);

export const ShipVariant = component(
  'ShipVariant',
  Type.Object({
    variant_key: Type.String({ minLength: 1, maxLength: 400 }),
    release_to_everyone: Type.Optional(Type.Boolean({ description: 'also put a 100% release condition first' })),
    conclusion: Type.Optional(Conclusion),
    conclusion_comment: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
  }),
);

export const DuplicateExperiment = component(
  'DuplicateExperiment',
  Type.Object({ feature_flag_key: Type.Optional(Type.String({ maxLength: 400, description: 'another flag for the copy (created when new)' })) }),
);

export const EligibleFlags = component('EligibleFeatureFlags', Type.Object({ results: Type.Array(AnyObject()), count: Type.Integer() }));
