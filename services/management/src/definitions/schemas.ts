import { Type } from '@sinclair/typebox';
import { UserOrNull } from '../shared/users';
import { component, Enum, Nullable } from '../shared/schema';
import { Q } from '../http/route-table';

const dateTime = Type.String({ format: 'date-time' });
const Tags = Type.Array(Type.String({ maxLength: 255 }), { maxItems: 100 });

/** What the API adds to a definition ingestion keeps (PostHog's taxonomy fields). */
const described = {
  description: Type.String(),
  tags: Type.Array(Type.String()),
  verified: Type.Boolean(),
  verified_at: Nullable(dateTime),
  verified_by: UserOrNull,
  hidden: Type.Boolean(),
  updated_at: Nullable(dateTime),
  updated_by: UserOrNull,
};

export const EventDefinition = component(
  'EventDefinition',
  Type.Object({
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    created_at: Nullable(dateTime),
    last_seen_at: Nullable(dateTime),
    last_updated_at: Nullable(dateTime),
    ...described,
    owner: Type.Null(),
    is_action: Type.Literal(false),
    action_id: Type.Null(),
    is_calculating: Type.Literal(false),
    last_calculated_at: Type.Null(),
    created_by: Type.Null(),
    post_to_slack: Type.Literal(false),
    default_columns: Type.Array(Type.String()),
    volume_30_day: Type.Null({ description: 'deprecated; always null, as in PostHog' }),
    query_usage_30_day: Type.Null({ description: 'deprecated; always null, as in PostHog' }),
  }),
);

export const PropertyDefinition = component(
  'PropertyDefinition',
  Type.Object({
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    property_type: Nullable(Type.String({ enum: ['DateTime', 'String', 'Numeric', 'Boolean', 'Duration'] })),
    is_numerical: Type.Boolean(),
    is_seen_on_filtered_events: Nullable(Type.Boolean({ description: 'null unless the listing named `event_names`' })),
    ...described,
  }),
);

const descriptionWrite = {
  description: Type.Optional(Type.String({ maxLength: 4000 })),
  tags: Type.Optional(Tags),
  verified: Type.Optional(Type.Boolean()),
  hidden: Type.Optional(Type.Boolean()),
};

export const EventDefinitionUpdate = component('EventDefinitionUpdate', Type.Object(descriptionWrite));

export const PropertyDefinitionUpdate = component(
  'PropertyDefinitionUpdate',
  Type.Object({
    ...descriptionWrite,
    property_type: Type.Optional(Enum(['DateTime', 'String', 'Numeric', 'Boolean', 'Duration', null], { description: 'sets `is_numerical` too' })),
  }),
);

const jsonList = (description: string) => Type.Optional(Type.String({ description: `a JSON array of names: ${description}` }));

export const EventDefinitionQuery = Type.Object({
  search: Type.Optional(Type.String({ description: 'every word must occur in the name, in any case' })),
  event_type: Type.Optional(Enum(['event', 'event_custom', 'event_posthog', 'action_event', 'all'])),
  ordering: Type.Optional(Enum(['name', '-name', 'last_seen_at', '-last_seen_at', 'last_seen_at::date', '-last_seen_at::date'])),
  excluded_properties: jsonList('events to leave out'),
  exclude_hidden: Q.boolean,
});

export const PropertyDefinitionQuery = Type.Object({
  search: Type.Optional(Type.String({ description: 'every word must occur in the name, in any case' })),
  type: Type.Optional(Enum(['event', 'person', 'group', 'session'])),
  group_type_index: Type.Optional(Type.Integer({ minimum: 0, maximum: 4, description: 'required with type=group, refused otherwise' })),
  properties: Type.Optional(Type.String({ description: 'comma-separated names: only these' })),
  excluded_properties: jsonList('properties to leave out'),
  event_names: jsonList('events whose properties come first, with is_seen_on_filtered_events'),
  filter_by_event_names: Q.boolean,
  is_numerical: Q.boolean,
  is_feature_flag: Q.boolean,
  exclude_core_properties: Q.boolean,
  exclude_hidden: Q.boolean,
});
