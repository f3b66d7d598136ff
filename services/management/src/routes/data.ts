import { Router, type Request } from 'express';
import { Params, parsePropertyFilters, propertiesCondition } from '@plover/insights';
import type { ClickHouse, ClickHouseParams } from '@plover/clickhouse';
import { isUuid } from '@plover/core';
import { GroupStore, PersonStore } from '@plover/persons';
import type { Sql } from '@plover/postgres';
import { projectOf, requireScope } from '../http/auth';
import { errors } from '../http/errors';
import { envelope, formatOf, pageOf, queryValue, send, streamCsv } from '../http/render';
import { insightContext } from '../insights/compute';
import { containsPattern } from '../http/like';

function dateParam(req: Request, name: string): Date | undefined {
  const raw = queryValue(req, name);
  if (raw === undefined || raw === '') return undefined;
  const date = new Date(raw);
  if (Number.isNaN(date.getTime())) throw errors.validation('A valid date-time is required.', name, 'invalid');
  return date;
}

function chDate(value: string): string {
  return new Date(`${value.replace(' ', 'T')}Z`).toISOString();
}

interface EventRow {
  uuid_text: string;
  event: string;
  distinct_id: string;
  properties: string;
  ts: string;
  person_id_text: string;
}

function eventBody(row: EventRow): Record<string, unknown> {
  return {
    id: row.uuid_text,
    uuid: row.uuid_text,
    event: row.event,
    distinct_id: row.distinct_id,
    properties: JSON.parse(row.properties) as unknown,
    timestamp: chDate(row.ts),
    person_id: row.person_id_text,
  };
}

/** Group types, groups, events and ingestion warnings of a project: read-only listings. */
export function dataRoutes(sql: Sql, clickhouse: ClickHouse): Router {
  const router = Router({ mergeParams: true });
  const groups = new GroupStore(sql);
  const persons = new PersonStore(sql);

  router.get('/groups_types', async (req, res) => {
    requireScope(req, 'group:read');
    const types = await groups.listGroupTypes(projectOf(req).id);
    send(
      req,
      res,
      200,
      types.map((t) => ({ group_type: t.groupType, group_type_index: t.groupTypeIndex, name_singular: t.nameSingular, name_plural: t.namePlural })),
      'groups_types',
    );
  });

  router.get('/groups', async (req, res) => {
    requireScope(req, 'group:read');
    const page = pageOf(req);
    const index = queryValue(req, 'group_type_index');
    if (index === undefined || index === '') throw errors.required('group_type_index');
    if (!/^[0-4]$/.test(index)) throw errors.validation('Ensure this value is between 0 and 4.', 'group_type_index', 'invalid');
    const params: unknown[] = [projectOf(req).id, Number(index)];
    let where = 'project_id = $1 AND group_type_index = $2';
    const search = queryValue(req, 'search');
    if (search !== undefined && search !== '') {
      params.push(containsPattern(search));
      where += ` AND (group_key ILIKE $3 OR (group_properties ->> 'name') ILIKE $3)`;
    }
    const rows = await sql.query<{ group_type_index: number; group_key: string; group_properties: Record<string, unknown>; created_at: Date }>(
      'management.listGroups',
      `SELECT group_type_index, group_key, group_properties, created_at FROM groups WHERE ${where}
        ORDER BY created_at DESC, id DESC LIMIT ${page.limit + 1} OFFSET ${page.offset}`,
      params,
    );
    const count = await sql.query<{ n: number }>('management.countGroups', `SELECT count(*)::int AS n FROM groups WHERE ${where}`, params);
    const results = rows.rows.slice(0, page.limit).map((row) => ({ ...row, created_at: row.created_at.toISOString() }));
    send(req, res, 200, envelope(req, page, results, count.rows[0]?.n ?? 0, rows.rows.length > page.limit), 'groups');
  });

  /**
   * Events matching `condition`, newest first: `size` of them after `offset`, or after the event `after` (the
   * keyset a CSV export pages with; `ts` keeps the microseconds).
   */
  async function eventRows(condition: string, params: ClickHouseParams, size: number, offset: number, after?: EventRow): Promise<EventRow[]> {
    const keyset = after ? " AND (timestamp, uuid) < ({after_ts:DateTime64(6, 'UTC')}, {after_uuid:UUID})" : '';
    // Aliases differ from column names: ClickHouse substitutes SELECT aliases in WHERE and ORDER BY.
    return clickhouse.query<EventRow>(
      'management.listEvents',
      `SELECT toString(uuid) AS uuid_text, event, distinct_id, properties, toString(timestamp) AS ts, toString(person_id) AS person_id_text
         FROM events FINAL WHERE ${condition}${keyset}
        ORDER BY timestamp DESC, uuid DESC LIMIT ${size} OFFSET ${after ? 0 : offset}`,
      after ? { ...params, after_ts: after.ts, after_uuid: after.uuid_text } : params,
    );
  }

  router.get('/events', async (req, res) => {
    requireScope(req, 'query:read');
    const project = projectOf(req);
    const page = pageOf(req);
    const params: ClickHouseParams = { team: project.id };
    const where = ['team_id = {team:Int64}'];
    const event = queryValue(req, 'event');
    if (event !== undefined && event !== '') {
      params.event = event;
      where.push('event = {event:String}');
    }
    const distinctIds: string[] = [];
    const distinctId = queryValue(req, 'distinct_id');
    if (distinctId !== undefined && distinctId !== '') distinctIds.push(distinctId);
    const personId = queryValue(req, 'person_id');
    if (personId !== undefined && personId !== '') {
      const ref = /^[0-9]{1,15}$/.test(personId) ? Number(personId) : isUuid(personId) ? personId.toLowerCase() : undefined;
      if (ref === undefined) throw errors.validation('A valid person id or uuid is required.', 'person_id', 'invalid');
      const person = await persons.getPerson(project.id, ref);
      params.person_ids = person?.distinctIds ?? [];
      where.push('distinct_id IN {person_ids:Array(String)}');
    }
    if (distinctIds.length > 0) {
      params.distinct_ids = distinctIds;
      where.push('distinct_id IN {distinct_ids:Array(String)}');
    }
    const after = dateParam(req, 'after');
    if (after) {
      params.after = after;
      where.push("timestamp > {after:DateTime64(3, 'UTC')}");
    }
    const before = dateParam(req, 'before');
    if (before) {
      params.before = before;
      where.push("timestamp < {before:DateTime64(3, 'UTC')}");
    }
    // Property filters as insights read them (event, person, group and cohort filters; every operator).
    const filters = parsePropertyFilters(queryValue(req, 'properties'), 'properties');
    if (filters !== null) {
      const bound = new Params();
      where.push(await propertiesCondition(filters, bound, { personId: 'person_id', ctx: insightContext(sql, req) }));
      Object.assign(params, bound.values);
    }
    const condition = where.join(' AND ');
    if (formatOf(req) === 'csv') {
      await streamCsv<EventRow>(req, res, 'events', async (after, size) =>
        (await eventRows(condition, params, size, page.offset, after)).map((row) => ({ row: eventBody(row), cursor: row })),
      );
      return;
    }
    const rows = await eventRows(condition, params, page.limit + 1, page.offset);
    const hasMore = rows.length > page.limit;
    const results = rows.slice(0, page.limit).map(eventBody);
    let count = page.offset + results.length;
    if (hasMore || (results.length === 0 && page.offset > 0)) {
      const counted = await clickhouse.query<{ n: string }>('management.countEvents', `SELECT count() AS n FROM events FINAL WHERE ${condition}`, params);
      count = Number(counted[0]?.n ?? 0);
    }
    send(req, res, 200, envelope(req, page, results, count, hasMore), 'events');
  });

  router.get('/ingestion_warnings', async (req, res) => {
    requireScope(req, 'project:read');
    const project = projectOf(req);
    const page = pageOf(req);
    const params: ClickHouseParams = { team: project.id };
    const rows = await clickhouse.query<{ type: string; details: string; ts: string; event_uuid_text: string }>(
      'management.listIngestionWarnings',
      `SELECT type, details, toString(timestamp) AS ts, toString(event_uuid) AS event_uuid_text FROM ingestion_warnings FINAL
        WHERE team_id = {team:Int64} ORDER BY timestamp DESC, type, event_uuid LIMIT ${page.limit + 1} OFFSET ${page.offset}`,
      params,
    );
    const counted = await clickhouse.query<{ n: string }>(
      'management.countIngestionWarnings',
      'SELECT count() AS n FROM ingestion_warnings FINAL WHERE team_id = {team:Int64}',
      params,
    );
    const results = rows.slice(0, page.limit).map((row) => ({
      type: row.type,
      details: JSON.parse(row.details) as unknown,
      timestamp: chDate(row.ts),
      event_uuid: row.event_uuid_text,
    }));
    send(req, res, 200, envelope(req, page, results, Number(counted[0]?.n ?? 0), rows.length > page.limit), 'ingestion_warnings');
  });

  return router;
}
