import { isUuid } from '@plover/core';
import type { Person, PersonListFilter } from '@plover/persons';
import type { ManagementDeps } from '../http/deps';
import { principalOf, projectOf } from '../http/auth';
import { errors } from '../shared/errors';
import { Type } from '@sinclair/typebox';
import { pageFrom, Q, route, updates, type Route } from '../http/route-table';
import { RecordingsStore } from '../shared/recordings-store';
import { Person as PersonSchema, personBody } from '../shared/person-body';
import { PersonsStore, type PersonRef } from './persons-store';
import { PersonBulkDelete, PersonPatch } from './schemas';

const BULK_MAX = 1000;
const PERSON = '/persons/:id';

const CREATE_HINT =
  'Creating persons via this API is not allowed. Please create persons by sending an $identify event. See https://posthog.com/docs/product-analytics/identify for details.';
const ID_HINT = 'The ID provided does not look like a personID. If you are using a distinctId, please use /persons?distinct_id=<value> instead.';

/** The person a path `:id` names: an integer id or a uuid; anything else (a distinct id) is a 400 with a hint. */
function personRef(raw: string): number | string {
  if (/^[0-9]{1,15}$/.test(raw)) return Number(raw);
  if (isUuid(raw)) return raw.toLowerCase();
  throw errors.validation(ID_HINT);
}

/** The persons `bulk_delete` names: distinct ids, else person ids or uuids; at most 1000. */
function bulkRefs(distinctIds: string[] | null | undefined, ids: Array<string | number> | null | undefined): PersonRef[] {
  if (Array.isArray(distinctIds)) {
    if (distinctIds.length > BULK_MAX) throw errors.validation(`You can only pass ${BULK_MAX} distinct_ids in one call`, 'distinct_ids');
    return distinctIds.map((distinctId) => ({ distinctId }));
  }
  if (!Array.isArray(ids)) throw errors.validation('You need to specify either distinct_ids or ids');
  if (ids.length > BULK_MAX) throw errors.validation(`You can only pass ${BULK_MAX} ids in one call`, 'ids');
  return ids.map((id, index) => {
    if (typeof id === 'number' && Number.isInteger(id) && id > 0) return { ref: id };
    if (typeof id === 'string' && isUuid(id)) return { ref: id.toLowerCase() };
    throw errors.validation('Must be a person uuid or integer id.', `ids__${index}`, 'invalid');
  });
}

/** `/persons` under a project: the listing (and its streamed CSV), one person, its properties and deletion. */
export function personRoutes({ sql, clickhouse }: ManagementDeps): Route[] {
  const store = new PersonsStore(sql);
  const recordings = new RecordingsStore(sql, clickhouse);

  /**
   * Deletes a person, with its recordings first when asked (while its distinct ids still name them), and queues
   * its events' deletion when `queueEventsBy` is given. Whether the person was deleted.
   */
  async function remove(projectId: number, person: Person, options: { recordings: boolean; queueEventsBy: number | undefined }): Promise<boolean> {
    if (options.recordings) await recordings.deleteOfDistinctIds(projectId, person.distinctIds);
    return store.delete(projectId, person, options.queueEventsBy);
  }

  return [
    route({
      method: 'get',
      path: '/persons',
      scope: 'person:read',
      summary: 'List persons, newest first',
      paginated: 'envelope',
      query: Type.Object({ distinct_id: Q.string, email: Q.string, search: Q.string, properties: Q.string, include_total: Q.boolean }),
      csv: { file: 'persons', rows: 'export' },
      jsonl: true,
      response: { status: 200, schema: PersonSchema },
      async handler(req, { page, query, format }) {
        const projectId = projectOf(req).id;
        const filter: PersonListFilter = {
          distinctId: query.distinct_id,
          email: query.email,
          search: query.search,
          properties: query.properties,
        };
        if (format !== 'json') return store.export(projectId, filter, page.offset);
        const paged = pageFrom(await store.list(projectId, filter, page), page, personBody);
        // A page that is not full tells the count without another query.
        const told = !paged.hasMore && (paged.results.length > 0 || page.offset === 0);
        return { ...paged, count: told ? page.offset + paged.results.length : await store.count(projectId, filter, query.include_total === true) };
      },
    }),
    route({
      method: 'post',
      path: '/persons',
      scope: 'person:write',
      summary: 'Creating persons is not allowed (they come from `$identify` events): 405',
      response: { status: 405 },
      handler() {
        throw errors.methodNotAllowed('POST', CREATE_HINT);
      },
    }),
    route({
      method: 'post',
      path: '/persons/bulk_delete',
      scope: 'person:write',
      summary: 'Delete up to 1000 persons; `delete_events` queues their events for deletion, `delete_recordings` deletes their recordings',
      body: PersonBulkDelete,
      response: { status: 202 },
      async handler(req, { body }) {
        const projectId = projectOf(req).id;
        const refs = bulkRefs(body.distinct_ids, body.ids);
        const options = { recordings: body.delete_recordings === true, queueEventsBy: body.delete_events === true ? principalOf(req).user.id : undefined };
        for (const ref of refs) {
          const person = await store.get(projectId, ref);
          if (person) await remove(projectId, person, options);
        }
      },
    }),
    route({
      method: 'get',
      path: PERSON,
      scope: 'person:read',
      summary: 'A person by integer id or uuid',
      csv: { file: 'person' },
      response: { status: 200, schema: PersonSchema },
      async handler(req) {
        const person = await store.get(projectOf(req).id, { ref: personRef(String(req.params.id)) });
        if (!person) throw errors.notFound();
        return personBody(person);
      },
    }),
    ...updates({
      path: PERSON,
      scope: 'person:write',
      summary: 'Merge properties into a person ($set)',
      body: PersonPatch,
      csv: { file: 'person' },
      response: { status: 200, schema: PersonSchema },
      async handler(req, { body }) {
        const ref = personRef(String(req.params.id));
        const result = await store.updateProperties(projectOf(req).id, ref, body.properties);
        if (!result) throw errors.notFound();
        if (result.outcome === 'too_large') {
          throw errors.validation('Person properties would exceed the size limit; nothing was written.', 'properties', 'too_large');
        }
        return personBody(result.person);
      },
    }),
    route({
      method: 'delete',
      path: PERSON,
      scope: 'person:write',
      summary: 'Delete a person; `delete_events=true` queues deletion of its events, `delete_recordings=true` deletes its recordings',
      query: Type.Object({ delete_events: Q.boolean, delete_recordings: Q.boolean }),
      response: { status: 204 },
      async handler(req, { query }) {
        const projectId = projectOf(req).id;
        const person = await store.get(projectId, { ref: personRef(String(req.params.id)) });
        if (!person) throw errors.notFound();
        const options = { recordings: query.delete_recordings === true, queueEventsBy: query.delete_events === true ? principalOf(req).user.id : undefined };
        if (!(await remove(projectId, person, options))) throw errors.notFound();
      },
    }),
  ];
}
