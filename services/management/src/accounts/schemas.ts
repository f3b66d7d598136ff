import { Type } from '@sinclair/typebox';
import { sessionReplaySettingsSchema } from '@plover/accounts';
import { component, Types } from '../shared/schema';
import { UserBasic } from '../shared/users';

/** The session replay settings of a project, each optional (a PATCH names some; a listing's project has none). */
const replaySettings = Object.fromEntries(
  Object.entries(sessionReplaySettingsSchema.properties).map(([name, schema]) => [name, Type.Optional(Type.Unsafe<unknown>({ ...schema }))]),
);

export const PersonalApiKeyCreate = component(
  'PersonalApiKeyCreate',
  Type.Object({
    label: Type.String({ minLength: 1, maxLength: 40 }),
    scopes: Type.Array(Type.String(), { minItems: 1, description: '`*` or `<object>:read|write`' }),
    scoped_teams: Type.Optional(Types<number[] | null>(['array', 'null'], { items: { type: 'integer', minimum: 1, maximum: 2147483647 } })),
    scoped_organizations: Type.Optional(Types<string[] | null>(['array', 'null'], { items: { type: 'string', format: 'uuid' } })),
  }),
);

export const ProjectCreate = component(
  'ProjectCreate',
  Type.Object({
    name: Type.String({ minLength: 1, maxLength: 200 }),
    timezone: Type.Optional(Type.String({ description: 'IANA timezone; default UTC' })),
    organization: Type.Optional(Type.String({ format: 'uuid' })),
  }),
);

export const ProjectUpdate = component(
  'ProjectUpdate',
  Type.Object(
    {
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
      timezone: Type.Optional(Type.String({ description: 'IANA timezone' })),
      anonymize_ips: Type.Optional(Type.Boolean({ description: 'store events without `$ip` (GeoIP still locates it first)' })),
      ...replaySettings,
    },
    { description: 'Any subset of the fields; fields the API does not change (id, api_token, ...) are ignored' },
  ),
);

export const Project = component(
  'Project',
  Type.Object({
    id: Type.Integer(),
    uuid: Type.String({ format: 'uuid' }),
    organization: Type.String({ format: 'uuid' }),
    name: Type.String(),
    api_token: Type.String(),
    timezone: Type.String(),
    ingested_event: Type.Boolean(),
    anonymize_ips: Type.Boolean(),
    is_demo: Type.Boolean(),
    access_control: Type.Boolean(),
    created_at: Type.String({ format: 'date-time' }),
    ...replaySettings,
  }),
);

export const PersonalApiKey = component(
  'PersonalApiKey',
  Type.Object({
    id: Type.String(),
    label: Type.String(),
    value: Types<string | null>(['string', 'null'], { description: 'the key, on create only' }),
    mask_value: Type.String(),
    scopes: Type.Array(Type.String()),
    scoped_teams: Type.Array(Type.Integer()),
    scoped_organizations: Type.Array(Type.String()),
    created_at: Type.String({ format: 'date-time' }),
    last_used_at: Types<string | null>(['string', 'null'], { format: 'date-time' }),
    last_rolled_at: Types<string | null>(['string', 'null'], { format: 'date-time' }),
  }),
);

const organization = Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String() });

/** The caller (`/users/@me`): the user, their current project and their organizations. */
export const User = component(
  'User',
  Type.Object({
    ...UserBasic.properties,
    is_staff: Type.Boolean(),
    date_joined: Type.String({ format: 'date-time' }),
    team: Type.Union([Project, Type.Null()]),
    organization: Type.Union([Type.Object({ ...organization.properties, level: Type.String() }), Type.Null()]),
    organizations: Type.Array(Type.Object({ ...organization.properties, membership_level: Type.String() })),
  }),
);
