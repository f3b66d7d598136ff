import { Type } from '@sinclair/typebox';
import { Insight } from '../shared/insight-record';
import { AnyObject, component, Enum, Nullable, Types } from '../shared/schema';
import { UserOrNull } from '../shared/users';

const dateTime = Type.String({ format: 'date-time' });
const nullableDateTime = Types<string | null>(['string', 'null'], { format: 'date-time' });

/** PostHog's DashboardFilter: what a dashboard imposes on every tile's query. */
export const DashboardFilters = component(
  'DashboardFilters',
  Type.Object(
    {
      date_from: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
      date_to: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
      explicitDate: Type.Optional(Nullable(Type.Boolean())),
      properties: Type.Optional(Types<unknown[] | null>(['array', 'null'], { maxItems: 100, description: 'property filters AND-ed with each tile’s own' })),
      breakdown_filter: Type.Optional(Types<Record<string, unknown> | null>(['object', 'null'], { description: 'replaces each tile’s breakdownFilter' })),
      interval: Type.Optional(Enum(['minute', 'hour', 'day', 'week', 'month', null])),
      filterTestAccounts: Type.Optional(Nullable(Type.Boolean())),
    },
    { description: 'date range, properties, breakdown, interval and test-account filter applied to every tile' },
  ),
);

/** react-grid-layout items per breakpoint (`sm`: 12 columns, `xs`: one). */
const Layouts = Type.Record(
  Type.String({ maxLength: 20 }),
  Type.Object({
    x: Type.Optional(Type.Number()),
    y: Type.Optional(Type.Number()),
    w: Type.Optional(Type.Number()),
    h: Type.Optional(Type.Number()),
    minW: Type.Optional(Type.Number()),
    minH: Type.Optional(Type.Number()),
  }),
  { maxProperties: 10 },
);

export const TileWrite = Type.Object({
  id: Type.Optional(Type.Integer({ description: 'an existing tile of this dashboard; absent: a new text card' })),
  text: Type.Optional(Type.Object({ body: Type.String({ maxLength: 4000 }) })),
  color: Type.Optional(Nullable(Type.String({ maxLength: 400 }))),
  layouts: Type.Optional(Layouts),
  filters_overrides: Type.Optional(
    Types<Record<string, unknown> | null>(['object', 'null'], { description: 'replaces the dashboard’s filters for this tile' }),
  ),
  show_description: Type.Optional(Nullable(Type.Boolean())),
  transparent_background: Type.Optional(Nullable(Type.Boolean())),
  deleted: Type.Optional(Type.Boolean()),
});

export const DashboardWrite = component(
  'DashboardWrite',
  Type.Object({
    name: Type.Optional(Nullable(Type.String({ maxLength: 400 }))),
    description: Type.Optional(Type.String({ maxLength: 10_000 })),
    pinned: Type.Optional(Type.Boolean()),
    filters: Type.Optional(DashboardFilters),
    variables: Type.Optional(AnyObject({ maxProperties: 100 })),
    breakdown_colors: Type.Optional(Types<unknown>(['array', 'object'], { maxItems: 1000, maxProperties: 1000 })),
    data_color_theme_id: Type.Optional(Nullable(Type.Integer())),
    tags: Type.Optional(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 100 })),
    restriction_level: Type.Optional(
      Type.Unsafe<21 | 37>({ enum: [21, 37], description: '21: everyone in the project can edit; 37: only its creator and admins' }),
    ),
    deleted: Type.Optional(Type.Boolean({ description: '`true` soft-deletes the dashboard and its tiles, `false` restores them' })),
    delete_insights: Type.Optional(Type.Boolean({ description: 'with `deleted: true`: also soft-delete its insights that are on no other dashboard' })),
    use_dashboard: Type.Optional(Type.Integer({ description: 'create: copy this dashboard’s filters and tiles' })),
    duplicate_tiles: Type.Optional(Type.Boolean({ description: 'with `use_dashboard`: copy its insights too instead of showing the same ones' })),
    tiles: Type.Optional(Type.Array(TileWrite, { maxItems: 100, description: 'tiles to update (by `id`) or text cards to add' })),
  }),
);

const TextCard = Type.Object({
  id: Type.Integer(),
  body: Type.String(),
  created_by: UserOrNull,
  last_modified_at: dateTime,
  last_modified_by: UserOrNull,
  team: Type.Integer(),
});

export const DashboardTile = component(
  'DashboardTile',
  Type.Object({
    id: Type.Integer(),
    insight: Type.Union([Insight, Type.Null()]),
    text: Type.Union([TextCard, Type.Null()]),
    button_tile: Type.Null(),
    color: Nullable(Type.String()),
    layouts: AnyObject(),
    filters_overrides: AnyObject(),
    show_description: Nullable(Type.Boolean()),
    transparent_background: Nullable(Type.Boolean()),
    order: Type.Integer(),
    last_refresh: nullableDateTime,
    is_cached: Type.Boolean(),
    error: Types<{ type: string; detail: string } | null>(['object', 'null'], { description: 'why its insight could not be computed' }),
  }),
);

/** The listing's fields (PostHog's DashboardBasicSerializer). */
export const DashboardBasic = component(
  'DashboardBasic',
  Type.Object({
    id: Type.Integer(),
    name: Nullable(Type.String()),
    description: Type.String(),
    pinned: Type.Boolean(),
    created_at: dateTime,
    created_by: UserOrNull,
    last_accessed_at: nullableDateTime,
    last_viewed_at: nullableDateTime,
    is_shared: Type.Boolean(),
    deleted: Type.Boolean(),
    creation_mode: Enum(['default', 'template', 'duplicate', 'unlisted']),
    tags: Type.Array(Type.String()),
    restriction_level: Type.Integer(),
    effective_restriction_level: Type.Integer(),
    effective_privilege_level: Type.Integer(),
    user_access_level: Enum(['viewer', 'editor']),
    access_control_version: Enum(['v1', 'v2']),
    last_refresh: nullableDateTime,
    team_id: Type.Integer(),
  }),
);

export const Dashboard = component(
  'Dashboard',
  Type.Object({
    ...DashboardBasic.properties,
    tiles: Type.Array(DashboardTile),
    filters: AnyObject({ description: 'the filters in effect: the stored ones with `filters_override` over them' }),
    variables: AnyObject(),
    breakdown_colors: Types<unknown>(['array', 'object']),
    data_color_theme_id: Nullable(Type.Integer()),
    persisted_filters: AnyObject(),
    persisted_variables: AnyObject(),
    quick_filter_ids: Type.Array(Type.Integer()),
  }),
);

export const SharingWrite = component(
  'SharingWrite',
  Type.Object({
    enabled: Type.Optional(Type.Boolean()),
    settings: Type.Optional(
      AnyObject({ maxProperties: 20, description: 'display settings of the shared page (`whitelabel`, `noHeader`, `legend`, `detailed`, …)' }),
    ),
  }),
);

export const Sharing = component(
  'Sharing',
  Type.Object({
    created_at: dateTime,
    enabled: Type.Boolean(),
    access_token: Type.String(),
    settings: AnyObject(),
    password_required: Type.Boolean(),
    share_passwords: Type.Tuple([]),
  }),
);

/** What a public link shows: the one shared dashboard (with its tiles' results) or insight, nothing else. */
export const SharedPage = component(
  'SharedPage',
  Type.Object({
    type: Type.Literal('scene'),
    accessToken: Type.String(),
    dashboard: Type.Optional(Dashboard),
    insight: Type.Optional(Insight),
    settings: AnyObject(),
  }),
);
