import { uuidv5 } from '@plover/core';
import { exceedsJsonDepth, MAX_JSON_DEPTH, validateRawEvent } from '@plover/contracts';
import type { Problem } from './records';

/** Namespace of the uuids given to records without one (UUIDv5 of the file name, record number and text). */
export const IMPORT_NAMESPACE = '5b0f3c35-6f3e-4a4c-9d7b-2f0e6c1d8a41';

/** Capture refuses an event whose bus message passes 1,000,000 bytes; the event's JSON alone above that cannot pass. */
const MAX_EVENT_BYTES = 1_000_000;

/** Columns of a PostHog batch export that hold JSON objects, and the event fields they become. */
const OBJECT_COLUMNS: Record<string, 'properties' | '$set' | '$set_once'> = {
  properties: 'properties',
  set: '$set',
  $set: '$set',
  set_once: '$set_once',
  $set_once: '$set_once',
};

/** Scalar fields sent as they are. */
const TEXT_FIELDS = ['event', 'uuid', 'timestamp'] as const;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An object column's value: an object, or the JSON text of one (PostHog's exports, CSV and Parquet cells); null when not set. */
function objectOf(value: unknown): Record<string, unknown> | null | undefined {
  if (value === undefined || value === null || value === '') return null;
  if (isObject(value)) return value;
  if (typeof value !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(value);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Where a record is, for the uuid of a record that has none. */
export interface RecordPlace {
  file: string;
  index: number;
  raw: string;
}

/**
 * One record (a PostHog batch-export row or an SDK-shaped event, whatever file it came from) as the JSON of the
 * event a client sends to `/batch/`, or the problem that keeps it from being one. Known columns with the wrong type are
 * problems naming the column; unknown columns, and an export's `team_id`, `person_id`, `created_at` and the like,
 * are left out (the target project, persons and storage times are the importing server's). `properties.X`
 * columns (CSV) are properties; capture then validates and normalizes the event as it does an SDK's.
 */
export function toEvent(fields: Record<string, unknown>, place: RecordPlace): { json: string } | { problem: Problem } {
  const event: Record<string, unknown> = {};
  for (const name of TEXT_FIELDS) {
    const value = fields[name];
    if (value === undefined || value === null || value === '') continue;
    if (name === 'timestamp' && typeof value === 'number') event.timestamp = String(value);
    else if (typeof value === 'string') event[name] = value;
    else return { problem: { field: name, reason: `must be text, not ${JSON.stringify(value)}` } };
  }
  for (const [column, target] of Object.entries(OBJECT_COLUMNS)) {
    const value = objectOf(fields[column]);
    if (value === undefined) return { problem: { field: column, reason: 'must be a JSON object' } };
    if (value) event[target] = { ...(event[target] as object | undefined), ...value };
  }
  const properties = { ...(event.properties as Record<string, unknown> | undefined) };
  for (const [column, value] of Object.entries(fields)) {
    if (column.startsWith('properties.') && column.length > 'properties.'.length) properties[column.slice('properties.'.length)] = value;
  }
  if (typeof fields.elements_chain === 'string' && fields.elements_chain !== '' && properties.$elements_chain === undefined) {
    properties.$elements_chain = fields.elements_chain;
  }
  event.properties = properties;
  const distinctId = fields.distinct_id ?? fields.$distinct_id ?? properties.distinct_id;
  if (distinctId === undefined || distinctId === null || distinctId === '') return { problem: { field: 'distinct_id', reason: 'is missing' } };
  event.distinct_id = distinctId;
  if (typeof event.event !== 'string') return { problem: { field: 'event', reason: 'is missing' } };
  event.uuid ??= uuidv5(`${place.file}\n${place.index}\n${place.raw}`, IMPORT_NAMESPACE);
  const checked = validateRawEvent(event);
  if (!checked.ok) return { problem: { field: checked.violation.attr ?? undefined, reason: checked.violation.detail } };
  if (exceedsJsonDepth(event)) return { problem: { reason: `nested deeper than ${MAX_JSON_DEPTH} levels` } };
  const json = JSON.stringify(checked.value);
  if (Buffer.byteLength(json) > MAX_EVENT_BYTES) return { problem: { reason: `larger than ${MAX_EVENT_BYTES} bytes as JSON` } };
  return { json };
}
