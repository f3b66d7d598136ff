/**
 * ClickHouse writes and reads of the consumer beyond the plain inserts: event inserts that survive a bad row,
 * and the lookup that recognises events an earlier, uncommitted delivery already stored.
 */
import { insertEvents, type ClickHouse, type EventRow } from '@plover/clickhouse';
import { StorageError } from '@plover/core';
import type { CapturedInput } from './message';
import { storableText } from '@plover/persons';

/**
 * ClickHouse error codes that blame the inserted values (ErrorCodes.cpp): the same rows fail again however
 * often they are retried, while the other rows of the insert are fine.
 */
const ROW_DATA_CODES = new Set([
  '6', // CANNOT_PARSE_TEXT
  '26', // CANNOT_PARSE_QUOTED_STRING
  '27', // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  '38', // CANNOT_PARSE_DATE
  '41', // CANNOT_PARSE_DATETIME
  '53', // TYPE_MISMATCH
  '69', // ARGUMENT_OUT_OF_BOUND
  '70', // CANNOT_CONVERT_TYPE
  '72', // CANNOT_PARSE_NUMBER
  '117', // INCORRECT_DATA
  '131', // TOO_LARGE_STRING_SIZE
  '321', // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
  '376', // CANNOT_PARSE_UUID
]);

/**
 * ClickHouse refuses an insert that touches more than `max_partitions_per_insert_block` (100) partitions, with
 * TOO_MANY_PARTS, which the adapters classify as retriable: a historical import spanning years would be
 * redelivered forever. Rows are therefore inserted in groups of at most this many months.
 */
const MAX_MONTHS_PER_INSERT = 100;

export interface Refused<T> {
  item: T;
  error: StorageError;
}

/**
 * Inserts the events rows of `items`, returning the items ClickHouse refused as invalid data. Those are found by
 * halving the insert until the bad rows are alone: each half that succeeds is stored once and for all. Any
 * other failure is thrown (the batch is redelivered; rows stored meanwhile collapse with their copies).
 */
export async function insertEventRows<T>(ch: ClickHouse, items: readonly T[], rowOf: (item: T) => EventRow): Promise<Refused<T>[]> {
  const refused: Refused<T>[] = [];
  for (const group of byMonthGroups(items, rowOf)) refused.push(...(await insertOrHalve(ch, group, rowOf)));
  return refused;
}

async function insertOrHalve<T>(ch: ClickHouse, items: readonly T[], rowOf: (item: T) => EventRow): Promise<Refused<T>[]> {
  try {
    await insertEvents(ch, items.map(rowOf));
    return [];
  } catch (error) {
    if (!(error instanceof StorageError) || error.retriable || error.code === undefined || !ROW_DATA_CODES.has(error.code)) throw error;
    if (items.length === 1) return [{ item: items[0] as T, error }];
    const middle = Math.ceil(items.length / 2);
    return [...(await insertOrHalve(ch, items.slice(0, middle), rowOf)), ...(await insertOrHalve(ch, items.slice(middle), rowOf))];
  }
}

function byMonthGroups<T>(items: readonly T[], rowOf: (item: T) => EventRow): T[][] {
  const months = new Map<string, T[]>();
  for (const item of items) {
    // `YYYY-MM` of the ClickHouse timestamp text: the events table's partition.
    const month = rowOf(item).timestamp.slice(0, 7);
    const list = months.get(month);
    if (list) list.push(item);
    else months.set(month, [item]);
  }
  if (months.size <= MAX_MONTHS_PER_INSERT) return [[...items]];
  const groups: T[][] = [];
  const lists = [...months.values()];
  for (let start = 0; start < lists.length; start += MAX_MONTHS_PER_INSERT) groups.push(lists.slice(start, start + MAX_MONTHS_PER_INSERT).flat());
  return groups;
}

/**
 * Events looked up per query: bound parameters travel in the URL over HTTP, which servers cap (ClickHouse's
 * http_max_uri_size is 1 MiB, Node's header limit 16 KiB); 100 uuids and distinct ids stay far below both.
 */
const LOOKUP_CHUNK = 100;
/** Lookups in flight at once: a batch of thousands is checked in a few round trips without flooding the server. */
const LOOKUP_PARALLELISM = 4;

/**
 * The uuids among `inputs` whose events are stored already. Narrowed by every column of the table's sorting key
 * that the inputs determine, so ClickHouse reads only the granules those events could be in.
 */
export async function storedEventUuids(ch: ClickHouse, inputs: readonly CapturedInput[]): Promise<Set<string>> {
  const chunks: CapturedInput[][] = [];
  for (let start = 0; start < inputs.length; start += LOOKUP_CHUNK) chunks.push(inputs.slice(start, start + LOOKUP_CHUNK));
  const stored = new Set<string>();
  let next = 0;
  const lookUp = async (): Promise<void> => {
    for (let chunk = chunks[next++]; chunk; chunk = chunks[next++]) {
      for (const uuid of await storedAmong(ch, chunk)) stored.add(uuid);
    }
  };
  await Promise.all(Array.from({ length: Math.min(LOOKUP_PARALLELISM, chunks.length) }, lookUp));
  return stored;
}

async function storedAmong(ch: ClickHouse, inputs: readonly CapturedInput[]): Promise<string[]> {
  const distinct = <T>(values: T[]) => [...new Set(values)];
  const rows = await ch.query<{ uuid: string }>(
    'ingestion.storedEventUuids',
    `SELECT DISTINCT uuid FROM events
      WHERE team_id IN {projectIds:Array(Int64)}
        AND toDate(timestamp) IN {days:Array(Date)}
        AND event IN {events:Array(String)}
        AND cityHash64(distinct_id) IN (SELECT cityHash64(arrayJoin({distinctIds:Array(String)})))
        AND uuid IN {uuids:Array(UUID)}`,
    {
      projectIds: distinct(inputs.map((input) => input.projectId)),
      days: distinct(inputs.map((input) => input.timestamp.toISOString().slice(0, 10))),
      events: distinct(inputs.map((input) => storableText(input.event))),
      distinctIds: distinct(inputs.map((input) => storableText(input.distinctId))),
      uuids: inputs.map((input) => input.uuid),
    },
  );
  return rows.map((row) => row.uuid);
}
