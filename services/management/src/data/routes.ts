import type { Request } from 'express';
import { isUuid } from '@plover/core';
import { Params, parsePropertyFilters, propertiesCondition } from '@plover/insights';
import type { ManagementDeps } from '../http/deps';
import { projectOf } from '../http/auth';
import { errors } from '../shared/errors';
import { Type, type Static } from '@sinclair/typebox';
import { linesStream, pageFrom, Q, route, type Route } from '../http/route-table';
import { lineRange, type JsonlSource } from '../http/render';
import { clickHouseTime } from '../shared/times';
import { insightContext } from '../shared/insight-context';
import { DataStore, EXPORT_WINDOW_ROWS, type EventRow, type EventsCondition, type IngestionWarningRow } from './data-store';
import { Event, Group, GroupType, IngestionWarning } from './schemas';

function dateParam(value: string | undefined, name: string): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw errors.validation('A valid date-time is required.', name, 'invalid');
  return date;
}

function eventBody(row: EventRow): Static<typeof Event> {
  return {
    id: row.uuid_text,
    uuid: row.uuid_text,
    event: row.event,
    distinct_id: row.distinct_id,
    properties: JSON.parse(row.properties) as Record<string, unknown>,
    timestamp: clickHouseTime(row.ts).toISOString(),
    person_id: row.person_id_text,
  };
}

/**
 * An events export (JSON lines, and CSV made from them), from the request's `offset`: the days holding matching events cut into windows
 * of whole consecutive days, newest first, each of at most EXPORT_WINDOW_ROWS events (a busier day is a window of
 * its own), then one streamed statement per window (DataStore.eventLines). ClickHouse sorts one window at a time,
 * so neither its memory nor the server's grows with the export. Days are listed when the export starts: events of
 * a later day are not in it.
 */
function eventsJsonl(store: DataStore, condition: EventsCondition, offset: number): JsonlSource {
  async function* windows(): AsyncGenerator<Uint8Array> {
    const days = await store.eventDays(condition);
    for (let first = 0; first < days.length;) {
      let last = first;
      let rows = days[first]!.n;
      while (last + 1 < days.length && rows + days[last + 1]!.n <= EXPORT_WINDOW_ROWS) rows += days[++last]!.n;
      yield* store.eventLines(condition, days[last]!.day, days[first]!.day);
      first = last + 1;
    }
  }
  return () => lineRange(windows(), offset);
}

const EVENTS_QUERY = Type.Object({ event: Q.string, distinct_id: Q.string, person_id: Q.string, properties: Q.string, after: Q.string, before: Q.string });

/** Group types, groups, events and ingestion warnings of a project: read-only listings. */
export function dataRoutes({ sql, clickhouse }: ManagementDeps): Route[] {
  const store = new DataStore(sql, clickhouse);

  /** The events listing's condition from its query parameters. */
  async function eventsCondition(req: Request, query: Static<typeof EVENTS_QUERY>): Promise<EventsCondition> {
    const project = projectOf(req);
    const params: EventsCondition['params'] = { projectId: project.id };
    const where = ['team_id = {projectId:Int64}'];
    if (query.event !== undefined) {
      params.event = query.event;
      where.push('event = {event:String}');
    }
    const personId = query.person_id;
    if (personId !== undefined) {
      const ref = /^[0-9]{1,15}$/.test(personId) ? Number(personId) : isUuid(personId) ? personId.toLowerCase() : undefined;
      if (ref === undefined) throw errors.validation('A valid person id or uuid is required.', 'person_id', 'invalid');
      params.person_ids = (await store.person(project.id, ref))?.distinctIds ?? [];
      where.push('distinct_id IN {person_ids:Array(String)}');
    }
    if (query.distinct_id !== undefined) {
      params.distinct_ids = [query.distinct_id];
      where.push('distinct_id IN {distinct_ids:Array(String)}');
    }
    const after = dateParam(query.after, 'after');
    if (after) {
      params.after = after;
      where.push("timestamp > {after:DateTime64(3, 'UTC')}");
    }
    const before = dateParam(query.before, 'before');
    if (before) {
      params.before = before;
      where.push("timestamp < {before:DateTime64(3, 'UTC')}");
    }
    // Property filters as insights read them (event, person, group and cohort filters; every operator).
    const filters = parsePropertyFilters(query.properties, 'properties');
    if (filters !== null) {
      const bound = new Params();
      where.push(await propertiesCondition(filters, bound, { personId: 'person_id', ctx: insightContext(sql, project) }));
      Object.assign(params, bound.values);
    }
    return { where: where.join(' AND '), params };
  }

  return [
    route({
      method: 'get',
      path: '/groups_types',
      scope: 'group:read',
      summary: 'Group types',
      csv: { file: 'groups_types' },
      response: { status: 200, schema: Type.Array(GroupType) },
      async handler(req) {
        const types = await store.groupTypes.listGroupTypes(projectOf(req).id);
        return types.map((t) => ({ group_type: t.groupType, group_type_index: t.groupTypeIndex, name_singular: t.nameSingular, name_plural: t.namePlural }));
      },
    }),
    route({
      method: 'get',
      path: '/groups',
      scope: 'group:read',
      summary: 'Groups of one type',
      paginated: 'envelope',
      query: Type.Object({ group_type_index: Type.Integer({ minimum: 0, maximum: 4 }), search: Q.string }),
      csv: { file: 'groups' },
      response: { status: 200, schema: Group },
      async handler(req, { page, query }) {
        const { rows, count } = await store.groups(projectOf(req).id, query.group_type_index, query.search, page);
        return pageFrom(rows, page, (row) => ({ ...row, created_at: row.created_at.toISOString() }), count);
      },
    }),
    route({
      method: 'get',
      path: '/events',
      scope: 'query:read',
      summary: 'Events, newest first',
      paginated: 'envelope',
      query: EVENTS_QUERY,
      csv: { file: 'events', rows: 'export' },
      jsonl: true,
      response: { status: 200, schema: Event },
      async handler(req, { page, query, format }) {
        const condition = await eventsCondition(req, query);
        if (format !== 'json') {
          return linesStream(eventsJsonl(store, condition, page.offset));
        }
        const paged = pageFrom(await store.events(condition, page.limit + 1, page.offset), page, eventBody);
        const counted = paged.hasMore || (paged.results.length === 0 && page.offset > 0);
        return { ...paged, count: counted ? await store.countEvents(condition) : page.offset + paged.results.length };
      },
    }),
    route({
      method: 'get',
      path: '/ingestion_warnings',
      scope: 'project:read',
      summary: 'Ingestion warnings, newest first',
      paginated: 'envelope',
      csv: { file: 'ingestion_warnings' },
      response: { status: 200, schema: IngestionWarning },
      async handler(req, { page }) {
        const { rows, count } = await store.ingestionWarnings(projectOf(req).id, page);
        const warning = (row: IngestionWarningRow) => ({
          type: row.type,
          details: JSON.parse(row.details) as Record<string, unknown>,
          timestamp: clickHouseTime(row.ts).toISOString(),
          event_uuid: row.event_uuid_text,
        });
        return pageFrom(rows, page, warning, count);
      },
    }),
  ];
}
