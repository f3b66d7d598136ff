import type { Request } from 'express';
import type { Static } from '@sinclair/typebox';
import type { ManagementDeps } from '../http/deps';
import { callerOf } from '../http/access';
import { found, pageOf } from '../http/resource-routes';
import { route, updates, type Route } from '../http/route-table';
import { errors } from '../shared/errors';
import { NamesStore, type EventDefinitionRow, type EventOrdering, type PropertyDefinitionRow, type PropertyListing } from './names-store';
import { EventDefinition, EventDefinitionQuery, EventDefinitionUpdate, PropertyDefinition, PropertyDefinitionQuery, PropertyDefinitionUpdate } from './schemas';

const EVENTS = '/event_definitions';
const PROPERTIES = '/property_definitions';

/**
 * Keys PostHog never lists as event properties: identity and person or group instructions that ingestion reads
 * rather than stores as data (`posthog/api/property_definition.py`'s hidden list).
 */
const HIDDEN_EVENT_PROPERTIES = [
  'distinct_id',
  '$set',
  '$set_once',
  '$initial_referrer',
  '$initial_referring_domain',
  '$groups',
  '$group_type',
  '$group_key',
  '$group_set',
  '$group_0',
  '$group_1',
  '$group_2',
  '$group_3',
  '$group_4',
];

const TYPES = { event: 1, person: 2, group: 3 } as const;

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

function described(row: EventDefinitionRow | PropertyDefinitionRow) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    tags: row.tags,
    verified: row.verified,
    verified_at: iso(row.verified_at),
    verified_by: row.verified_by,
    hidden: row.hidden,
    updated_at: iso(row.updated_at),
    updated_by: row.updated_by,
  };
}

function eventBody(row: EventDefinitionRow): Static<typeof EventDefinition> {
  const times = [row.last_seen_at, row.updated_at].filter((date): date is Date => date !== null).map((date) => date.getTime());
  return {
    ...described(row),
    created_at: iso(row.created_at),
    last_seen_at: iso(row.last_seen_at),
    // The later of when ingestion last saw the event and when someone last edited its definition.
    last_updated_at: times.length > 0 ? new Date(Math.max(...times)).toISOString() : null,
    owner: null,
    is_action: false,
    action_id: null,
    is_calculating: false,
    last_calculated_at: null,
    created_by: null,
    post_to_slack: false,
    default_columns: [],
    volume_30_day: null,
    query_usage_30_day: null,
  };
}

function propertyBody(row: PropertyDefinitionRow): Static<typeof PropertyDefinition> {
  return { ...described(row), property_type: row.property_type, is_numerical: row.is_numerical, is_seen_on_filtered_events: row.is_seen_on_filtered_events };
}

/** A parameter holding a JSON array of strings; anything else is a 400 naming it. */
function nameList(value: string | undefined, attr: string): string[] | undefined {
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw errors.validation('Must be a JSON array of strings.', attr);
  }
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string')) throw errors.validation('Must be a JSON array of strings.', attr);
  return parsed;
}

function ordering(value: Static<typeof EventDefinitionQuery>['ordering']): { field: EventOrdering; descending: boolean } | undefined {
  if (value === undefined) return undefined;
  const descending = value.startsWith('-');
  return { field: (descending ? value.slice(1) : value) as EventOrdering, descending };
}

const idOf = (req: Request): string => String(req.params.id);

/**
 * `/event_definitions/` and `/property_definitions/` under a project: the names ingestion keeps (docs/definitions.md),
 * listed with PostHog's filters, described (PATCH) and deleted.
 */
export function definitionRoutes({ sql }: Pick<ManagementDeps, 'sql'>): Route[] {
  const store = new NamesStore(sql);
  return [
    route({
      method: 'get',
      path: EVENTS,
      scope: 'event_definition:read',
      summary: 'List event definitions, by default the most recently seen first',
      query: EventDefinitionQuery,
      paginated: 'envelope',
      csv: { file: 'event_definitions' },
      response: { status: 200, schema: EventDefinition },
      async handler(req, { query, page }) {
        const { rows, count } = await store.listEvents(
          callerOf(req).projectId,
          {
            search: query.search,
            origin: query.event_type === 'event_custom' ? 'custom' : query.event_type === 'event_posthog' ? 'posthog' : undefined,
            excluded: nameList(query.excluded_properties, 'excluded_properties'),
            excludeHidden: query.exclude_hidden,
            ordering: ordering(query.ordering),
          },
          page,
        );
        return pageOf(rows.map(eventBody), count, page.offset, page.limit);
      },
    }),
    route({
      method: 'get',
      path: `${EVENTS}/:id`,
      scope: 'event_definition:read',
      summary: 'Retrieve an event definition',
      csv: { file: 'event_definition' },
      response: { status: 200, schema: EventDefinition },
      handler: async (req) => eventBody(found(await store.event(callerOf(req).projectId, idOf(req)))),
    }),
    ...updates({
      path: `${EVENTS}/:id`,
      scope: 'event_definition:write',
      summary: "Describe an event definition: description, tags, verified, hidden (its name and times are ingestion's)",
      body: EventDefinitionUpdate,
      csv: { file: 'event_definition' },
      response: { status: 200, schema: EventDefinition },
      async handler(req, { body }) {
        const caller = callerOf(req);
        if (!(await store.describe('event_definitions', caller.projectId, idOf(req), caller.userId, body))) throw errors.notFound();
        return eventBody(found(await store.event(caller.projectId, idOf(req))));
      },
    }),
    route({
      method: 'delete',
      path: `${EVENTS}/:id`,
      scope: 'event_definition:write',
      summary: 'Delete an event definition (ingestion records it again when the event comes back)',
      response: { status: 204 },
      async handler(req) {
        if (!(await store.delete('event_definitions', callerOf(req).projectId, idOf(req)))) throw errors.notFound();
      },
    }),
    route({
      method: 'get',
      path: PROPERTIES,
      scope: 'property_definition:read',
      summary: 'List property definitions of events (default), persons or a group type',
      query: PropertyDefinitionQuery,
      paginated: 'envelope',
      csv: { file: 'property_definitions' },
      response: { status: 200, schema: PropertyDefinition },
      async handler(req, { query, page }) {
        const type = query.type ?? 'event';
        if (type === 'group' && query.group_type_index === undefined)
          throw errors.validation('This field is required when type is group.', 'group_type_index', 'required');
        if (type !== 'group' && query.group_type_index !== undefined) throw errors.validation('Only valid when type is group.', 'group_type_index');
        // Session properties are computed by queries, not ingested: there are no stored definitions of them.
        if (type === 'session') return pageOf([], 0, page.offset, page.limit);
        const excluded = nameList(query.excluded_properties, 'excluded_properties') ?? [];
        const listing: PropertyListing = {
          type: TYPES[type],
          groupTypeIndex: query.group_type_index,
          search: query.search,
          names: query.properties
            ?.split(',')
            .map((name) => name.trim())
            .filter((name) => name !== ''),
          excluded: type === 'event' ? [...excluded, ...HIDDEN_EVENT_PROPERTIES] : excluded,
          isNumerical: query.is_numerical,
          isFeatureFlag: query.is_feature_flag,
          eventNames: nameList(query.event_names, 'event_names'),
          onlySeenOnEvents: query.filter_by_event_names,
          excludeCore: query.exclude_core_properties,
          excludeHidden: query.exclude_hidden,
        };
        const { rows, count } = await store.listProperties(callerOf(req).projectId, listing, page);
        return pageOf(rows.map(propertyBody), count, page.offset, page.limit);
      },
    }),
    route({
      method: 'get',
      path: `${PROPERTIES}/:id`,
      scope: 'property_definition:read',
      summary: 'Retrieve a property definition',
      csv: { file: 'property_definition' },
      response: { status: 200, schema: PropertyDefinition },
      handler: async (req) => propertyBody(found(await store.property(callerOf(req).projectId, idOf(req)))),
    }),
    ...updates({
      path: `${PROPERTIES}/:id`,
      scope: 'property_definition:write',
      summary: 'Describe a property definition: description, tags, verified, hidden, and its property_type (which sets is_numerical)',
      body: PropertyDefinitionUpdate,
      csv: { file: 'property_definition' },
      response: { status: 200, schema: PropertyDefinition },
      async handler(req, { body }) {
        const caller = callerOf(req);
        const { property_type: propertyType, ...fields } = body;
        const changed = await store.describe('property_definitions', caller.projectId, idOf(req), caller.userId, {
          ...fields,
          ...(propertyType === undefined ? {} : { propertyType }),
        });
        if (!changed) throw errors.notFound();
        return propertyBody(found(await store.property(caller.projectId, idOf(req))));
      },
    }),
    route({
      method: 'delete',
      path: `${PROPERTIES}/:id`,
      scope: 'property_definition:write',
      summary: 'Delete a property definition (ingestion records it again when a process that has not stored it sees it)',
      response: { status: 204 },
      async handler(req) {
        if (!(await store.delete('property_definitions', callerOf(req).projectId, idOf(req)))) throw errors.notFound();
      },
    }),
  ];
}
