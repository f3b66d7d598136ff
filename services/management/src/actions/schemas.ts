import { Type } from '@sinclair/typebox';
import { component, Enum, Nullable, Types } from '../shared/schema';
import { UserOrNull } from '../shared/users';

const dateTime = Type.String({ format: 'date-time' });
const Matching = Enum(['exact', 'contains', 'regex', null]);
const text = (maxLength: number) => Type.Optional(Nullable(Type.String({ maxLength })));

/** PostHog's ActionStepJSON: every condition optional; the ones set are AND-ed. */
const STEP_FIELDS = {
  event: text(400),
  url: text(65_535),
  url_matching: Type.Optional(Matching),
  selector: text(65_535),
  tag_name: text(400),
  text: text(65_535),
  text_matching: Type.Optional(Matching),
  href: text(65_535),
  href_matching: Type.Optional(Matching),
  properties: Type.Optional(Types<unknown[] | null>(['array', 'null'], { maxItems: 100, description: 'property filters, as in insights' })),
};
const ActionStep = Type.Object(STEP_FIELDS);

const ActionStepRead = Type.Object({ ...STEP_FIELDS, selector_regex: Nullable(Type.String({ description: 'the regex the selector is matched with' })) });

export const ActionWrite = component(
  'ActionWrite',
  Type.Object({
    name: Type.Optional(Nullable(Type.String({ maxLength: 400 }))),
    description: Type.Optional(Type.String({ maxLength: 10_000 })),
    tags: Type.Optional(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 100 })),
    post_to_slack: Type.Optional(Type.Boolean()),
    slack_message_format: Type.Optional(Type.String({ maxLength: 1200 })),
    steps: Type.Optional(Type.Array(ActionStep, { maxItems: 100, description: 'an event matches the action when it matches any step' })),
    pinned_at: Type.Optional(Types<string | null>(['string', 'null'], { format: 'date-time' })),
    deleted: Type.Optional(Type.Boolean({ description: '`true` soft-deletes the action, `false` restores it' })),
  }),
);

export const Action = component(
  'Action',
  Type.Object({
    id: Type.Integer(),
    name: Nullable(Type.String()),
    description: Type.String(),
    tags: Type.Array(Type.String()),
    post_to_slack: Type.Boolean(),
    slack_message_format: Type.String(),
    steps: Type.Array(ActionStepRead),
    created_at: dateTime,
    created_by: UserOrNull,
    deleted: Type.Boolean(),
    is_calculating: Type.Boolean(),
    last_calculated_at: dateTime,
    team_id: Type.Integer(),
    is_action: Type.Literal(true),
    bytecode_error: Type.Null(),
    pinned_at: Types<string | null>(['string', 'null'], { format: 'date-time' }),
    creation_context: Type.Null(),
    user_access_level: Type.String(),
  }),
);

export const ActionList = Type.Object({ results: Type.Array(Action) });

export const ActionCount = component('ActionCount', Type.Object({ count: Type.Integer({ description: 'matching events of the last 30 days' }) }));
