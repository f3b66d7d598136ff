import zlib from 'node:zlib';
import type { SchemaElement } from 'hyparquet' with { 'resolution-mode': 'import' };
import { linesOf } from './import/input';
import { UserError } from './errors';

export type ParquetCompression = 'snappy' | 'gzip' | 'brotli' | 'none';
export const PARQUET_COMPRESSIONS: readonly ParquetCompression[] = ['snappy', 'gzip', 'brotli', 'none'];

/**
 * A row group is written, and its bytes passed on, once it holds this many rows or this many bytes of the
 * listing's JSON lines, whichever comes first: memory holds one row group's rows and its encoded bytes.
 */
export const ROW_GROUP_ROWS = 5000;
export const ROW_GROUP_JSON_BYTES = 4 * 1024 * 1024;
/** A listing line longer than this is not a row the server writes: the body is broken. */
const MAX_LINE_BYTES = 64 * 1024 * 1024;

type Row = Record<string, unknown>;
type Compressors = Partial<Record<'GZIP' | 'BROTLI', (input: Uint8Array) => Uint8Array>>;

/** One Parquet column: its schema elements (a group and its children for a list) and its cell of a listing row. */
interface Column {
  schema: SchemaElement[];
  cell(row: Row): unknown;
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : value === null || value === undefined ? null : JSON.stringify(value));

function stringColumn(name: string, cell: (row: Row) => unknown = (row) => text(row[name])): Column {
  return { schema: [{ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' }], cell };
}

/** A JSON object column as text, as PostHog's batch exports write `properties`. */
function jsonTextColumn(name: string): Column {
  return stringColumn(name, (row) => (row[name] === null || row[name] === undefined ? null : JSON.stringify(row[name])));
}

/** A time in UTC with microseconds, as PostHog's batch exports write `timestamp`: from the listing's ISO 8601 text. */
function timestampColumn(name: string): Column {
  return {
    schema: [
      {
        name,
        type: 'INT64',
        converted_type: 'TIMESTAMP_MICROS',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' },
        repetition_type: 'OPTIONAL',
      },
    ],
    cell: (row) => (typeof row[name] === 'string' ? new Date(row[name]) : null),
  };
}

/** The columns of each export: events with a PostHog batch export's names (so `plover import` reads them back); persons as the listing has them. */
const COLUMNS: Record<'events' | 'persons', Array<[string, Column]>> = {
  events: [
    ['uuid', stringColumn('uuid')],
    ['event', stringColumn('event')],
    ['properties', jsonTextColumn('properties')],
    ['distinct_id', stringColumn('distinct_id')],
    ['timestamp', timestampColumn('timestamp')],
    ['person_id', stringColumn('person_id')],
  ],
  persons: [
    [
      'id',
      {
        schema: [{ name: 'id', type: 'INT64', repetition_type: 'OPTIONAL' }],
        cell: (row) => (typeof row.id === 'number' ? BigInt(row.id) : null),
      },
    ],
    ['uuid', stringColumn('uuid')],
    ['name', stringColumn('name')],
    [
      'distinct_ids',
      {
        schema: [
          { name: 'distinct_ids', repetition_type: 'OPTIONAL', converted_type: 'LIST', logical_type: { type: 'LIST' }, num_children: 1 },
          { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
          { name: 'element', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' },
        ],
        cell: (row) => (Array.isArray(row.distinct_ids) ? row.distinct_ids.map(String) : null),
      },
    ],
    ['properties', jsonTextColumn('properties')],
    ['created_at', timestampColumn('created_at')],
    [
      'is_identified',
      {
        schema: [{ name: 'is_identified', type: 'BOOLEAN', repetition_type: 'OPTIONAL' }],
        cell: (row) => (typeof row.is_identified === 'boolean' ? row.is_identified : null),
      },
    ],
  ],
};

/** The codec and, beyond hyparquet-writer's own Snappy, its compressor (Node's zlib). */
function codecOf(compression: ParquetCompression): { codec: 'SNAPPY' | 'GZIP' | 'BROTLI' | 'UNCOMPRESSED'; compressors: Compressors } {
  switch (compression) {
    case 'gzip':
      return { codec: 'GZIP', compressors: { GZIP: (input) => zlib.gzipSync(input) } };
    case 'brotli':
      // Quality 5 of 11: most of brotli's size for a fraction of its highest setting's time.
      return { codec: 'BROTLI', compressors: { BROTLI: (input) => zlib.brotliCompressSync(input, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } }) } };
    case 'none':
      return { codec: 'UNCOMPRESSED', compressors: {} };
    default:
      return { codec: 'SNAPPY', compressors: {} };
  }
}

/** What a Parquet stage wrote: rows and bytes of the file. */
export interface ParquetOutput {
  rows: number;
  bytes: number;
}

/**
 * A pipeline stage from the listing's JSON lines to a Parquet file's bytes, written as the rows arrive: a row
 * group at a time (ROW_GROUP_ROWS rows or ROW_GROUP_JSON_BYTES of JSON, whichever first), its bytes passed on
 * as soon as it is encoded, then the footer. `output` counts what was written.
 */
export async function parquetStage(
  kind: 'events' | 'persons',
  compression: ParquetCompression,
  output: ParquetOutput,
): Promise<(source: AsyncIterable<Buffer>) => AsyncGenerator<Buffer>> {
  const { ByteWriter, ParquetWriter } = await import('hyparquet-writer');
  const columns = COLUMNS[kind];
  const schema: SchemaElement[] = [{ name: 'root', num_children: columns.length }, ...columns.flatMap(([, column]) => column.schema)];
  return async function* (source) {
    const writer = new ByteWriter(1 << 20);
    const parquet = new ParquetWriter({ writer, schema, ...codecOf(compression), createdBy: 'plover export' });
    /** The bytes encoded since the last call, copied out of the writer's reused buffer. */
    const take = (): Buffer => {
      const bytes = Buffer.from(writer.getBytes());
      writer.index = 0;
      output.bytes = writer.offset;
      return bytes;
    };
    let cells: unknown[][] = columns.map(() => []);
    let rows = 0;
    let jsonBytes = 0;
    const rowGroup = (): Buffer => {
      void parquet.write({ columnData: columns.map(([name], i) => ({ name, data: cells[i]! })), rowGroupSize: rows });
      output.rows += rows;
      cells = columns.map(() => []);
      rows = 0;
      jsonBytes = 0;
      return take();
    };
    yield take();
    for await (const line of linesOf({ stream: source, gzip: false }, MAX_LINE_BYTES)) {
      if (line.tooLong) throw new UserError(`row ${output.rows + rows + 1} of the listing is longer than ${MAX_LINE_BYTES} bytes`);
      if (line.bytes.length === 0) continue;
      const row = JSON.parse(line.bytes.toString('utf8')) as Row;
      columns.forEach(([, column], i) => cells[i]!.push(column.cell(row)));
      rows++;
      jsonBytes += line.bytes.length;
      if (rows === ROW_GROUP_ROWS || jsonBytes >= ROW_GROUP_JSON_BYTES) yield rowGroup();
    }
    if (rows > 0) yield rowGroup();
    void parquet.finish();
    yield take();
  };
}
