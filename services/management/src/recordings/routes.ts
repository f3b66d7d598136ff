import type { Request, Response } from 'express';
import type { ManagementDeps } from '../http/deps';
import { callerOf } from '../http/access';
import { projectOf } from '../http/auth';
import { errors } from '../shared/errors';
import { Type } from '@sinclair/typebox';
import { Q, route, Written, type Route } from '../http/route-table';
import { Enum, Success } from '../shared/schema';
import { LIST_QUERY, listQuery } from './list-query';
import { RecordingsStore } from '../shared/recordings-store';
import { recordingsOf, SessionRecording, type Recording } from '../shared/recordings';
import { SessionRecordingUpdate, SnapshotSources } from './schemas';

const RECORDING = '/session_recordings/:session_recording_id';
/** The recordings listing's envelope version (PostHog's). */
const LIST_VERSION = 4;
/** Blob keys one snapshots request may ask for beyond the first, as PostHog allows personal API keys. */
const MAX_BLOB_KEY_SPAN = 20;
/**
 * What one ClickHouse read while streaming may hold: up to this many bytes of lines (a block is up to about a
 * megabyte), and at most MAX_BLOCKS_PER_READ blocks. Each read costs a query's fixed overhead (about 10 ms on
 * chDB), so reading by bytes rather than by a small count keeps a long recording to a few queries.
 */
const BYTES_PER_READ = 8 * 1024 * 1024;
const MAX_BLOCKS_PER_READ = 1000;

const notFound = () => errors.notFound('Recording not found');

/** How many blocks from `from` one read takes: at least one, then as many as fit BYTES_PER_READ and MAX_BLOCKS_PER_READ. */
function runFrom(blocks: ReadonlyArray<{ size: number }>, from: number): number {
  let count = 1;
  let bytes = blocks[from]!.size;
  while (from + count < blocks.length && count < MAX_BLOCKS_PER_READ && bytes + blocks[from + count]!.size <= BYTES_PER_READ) {
    bytes += blocks[from + count]!.size;
    count++;
  }
  return count;
}

/**
 * Writes `blocks` (the listing's entries `offset`…, in order) as JSONL without the final newline, reading runs of
 * them sized by their listed bytes so a long recording never sits in memory whole.
 */
async function streamBlocks(
  res: Response,
  read: (offset: number, limit: number) => Promise<Array<{ data: string }>>,
  blocks: ReadonlyArray<{ size: number }>,
  offset: number,
): Promise<void> {
  res.status(200).type('application/jsonl').set('Cache-Control', 'no-store').set('Content-Disposition', 'inline');
  let separator = '';
  for (let next = 0; next < blocks.length;) {
    const count = runFrom(blocks, next);
    const got = await read(offset + next, count);
    for (const block of got) {
      const lines = block.data.endsWith('\n') ? block.data.slice(0, -1) : block.data;
      if (!res.write(separator + lines)) await new Promise((resolve) => res.once('drain', resolve));
      separator = '\n';
    }
    next += count;
    // The listing came first: a block deleted since ends the stream instead of shifting what follows.
    if (got.length < count) break;
  }
  res.end();
}

/** `/session_recordings`: the recordings of a project, one recording, its snapshots; viewing marks it watched. */
export function recordingRoutes({ sql, clickhouse }: ManagementDeps): Route[] {
  const store = new RecordingsStore(sql, clickhouse);
  const sessionOf = (req: Request) => String(req.params.session_recording_id);

  async function one(req: Request): Promise<Recording> {
    const summary = await store.get(projectOf(req).id, sessionOf(req));
    if (!summary) throw notFound();
    const [recording] = await recordingsOf(store, callerOf(req), [summary]);
    return recording!;
  }

  return [
    route({
      method: 'get',
      path: '/session_recordings',
      scope: 'session_recording:read',
      summary: 'List recordings, newest first by default',
      query: LIST_QUERY,
      paginated: 'has_next',
      csv: { file: 'session_recordings' },
      response: { status: 200, schema: SessionRecording },
      async handler(req, { page, query }) {
        const project = projectOf(req);
        const listing = await listQuery(query, {
          now: new Date(),
          timezone: project.timezone,
          distinctIdsOfPerson: (uuid) => store.distinctIdsOfPerson(project.id, uuid),
        });
        const summaries = listing ? await store.list(project.id, { ...listing, limit: page.limit + 1, offset: page.offset }) : [];
        return {
          results: await recordingsOf(store, callerOf(req), summaries.slice(0, page.limit)),
          hasMore: summaries.length > page.limit,
          fields: { version: LIST_VERSION },
        };
      },
    }),
    route({
      method: 'get',
      path: RECORDING,
      scope: 'session_recording:read',
      summary: 'A recording; marks it watched by the caller',
      csv: { file: 'session_recording' },
      response: { status: 200, schema: SessionRecording },
      async handler(req) {
        const recording = await one(req);
        await store.markViewed(callerOf(req), recording.id);
        return { ...recording, viewed: true };
      },
    }),
    route({
      method: 'patch',
      path: RECORDING,
      scope: 'session_recording:write',
      summary: 'Mark a recording watched (`viewed: true`)',
      body: SessionRecordingUpdate,
      response: { status: 200, schema: Success },
      async handler(req, { body }) {
        if (body.viewed !== true) throw errors.validation('Only viewed: true can be set.', 'viewed');
        const caller = callerOf(req);
        if (!(await store.get(caller.projectId, sessionOf(req)))) throw notFound();
        await store.markViewed(caller, sessionOf(req));
        return { success: true };
      },
    }),
    route({
      method: 'delete',
      path: RECORDING,
      scope: 'session_recording:write',
      summary: 'Delete a recording: its snapshots and summary',
      response: { status: 204 },
      async handler(req) {
        if (!(await store.delete(projectOf(req).id, sessionOf(req)))) throw notFound();
      },
    }),
    route({
      method: 'get',
      path: `${RECORDING}/snapshots`,
      scope: 'session_recording:read',
      summary: 'Without `source`: the blocks (`blob_v2` sources). With `source=blob_v2`: their events as JSONL `[window_id, event]` lines',
      query: Type.Object({
        source: Type.Optional(Enum(['blob_v2'])),
        start_blob_key: Type.Optional(Type.Integer({ minimum: 0 })),
        end_blob_key: Type.Optional(Type.Integer({ minimum: 0 })),
        decompress: Q.boolean,
      }),
      response: { status: 200, schema: SnapshotSources },
      async handler(req, { query }) {
        const projectId = projectOf(req).id;
        const sessionId = sessionOf(req);
        const blocks = await store.blocks(projectId, sessionId);
        if (blocks.length === 0) throw notFound();
        if (query.source === undefined) {
          return {
            sources: blocks.map((block, index) => ({
              source: 'blob_v2' as const,
              start_timestamp: block.first_timestamp,
              end_timestamp: block.last_timestamp,
              blob_key: String(index),
            })),
          };
        }
        if (query.decompress === false) throw errors.validation('Only decompressed (JSONL) snapshots are served.', 'decompress');
        const read = (offset: number, limit: number) => store.readBlocks(projectId, sessionId, offset, limit);
        const [start, end] = [query.start_blob_key, query.end_blob_key];
        if (start === undefined && end === undefined) return new Written((res) => streamBlocks(res, read, blocks, 0));
        if (start === undefined || end === undefined) throw errors.validation('Must provide both start blob key and end blob key');
        if (end < start) throw errors.validation('The end blob key must not be before the start blob key.', 'end_blob_key');
        if (end - start > MAX_BLOB_KEY_SPAN) throw errors.validation(`Cannot request more than ${MAX_BLOB_KEY_SPAN} blob keys at once`);
        if (end >= blocks.length) throw errors.notFound('Block index out of range');
        return new Written((res) => streamBlocks(res, read, blocks.slice(start, end + 1), start));
      },
    }),
  ];
}
