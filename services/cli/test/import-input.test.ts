import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { IMPORT_NAMESPACE, toEvent } from '../src/import/event';
import { InputError, invalidUtf8At, linesOf, openInput } from '../src/import/input';
import { formatOfName, openRecords, type SourceRecord } from '../src/import/records';
import { readState, statePath, writeState, type ImportState } from '../src/import/state';
import { uuidv5 } from '@plover/core';

/** The pieces of `plover import` that need no server: reading files, records to events, the resume state. */

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-cli-input-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string | Buffer): string {
  const at = path.join(dir, name);
  fs.writeFileSync(at, content);
  return at;
}

async function records(at: string, skipThrough = 0): Promise<SourceRecord[]> {
  const out: SourceRecord[] = [];
  for await (const record of openRecords(at, formatOfName(at), skipThrough).records) out.push(record);
  return out;
}

describe('invalidUtf8At', () => {
  it.each([
    ['ascii and multibyte text', Buffer.from('a é € 😀'), -1],
    ['a lone continuation byte', Buffer.from([0x61, 0x80]), 1],
    ['an overlong slash', Buffer.from([0x61, 0xc0, 0xaf]), 1],
    ['a surrogate', Buffer.from([0xed, 0xa0, 0x80]), 0],
    ['a sequence cut at the end', Buffer.from([0x61, 0x62, 0xe2, 0x82]), 2],
    ['past U+10FFFF', Buffer.from([0xf4, 0x90, 0x80, 0x80]), 0],
  ])('%s', (_name, bytes, at) => {
    expect(invalidUtf8At(bytes)).toBe(at);
  });
});

describe('linesOf', () => {
  it('splits LF and CRLF lines across chunks, numbers them from 1, keeps the last line without a break, cuts a long one', async () => {
    const at = file('lines.txt', `a\r\nbb\n\n${'x'.repeat(100)}\nlast`);
    const seen = [];
    for await (const line of linesOf(openInput(at), 50)) seen.push([line.number, line.bytes.length, line.tooLong ?? false]);
    expect(seen).toEqual([
      [1, 1, false],
      [2, 2, false],
      [3, 0, false],
      [4, 50, true],
      [5, 4, false],
    ]);
  });

  it('reads gzip by its magic bytes, and a truncated gzip ends in an InputError after the lines it held', async () => {
    const text = Array.from({ length: 5000 }, (_, i) => `line ${i}`).join('\n');
    const gz = zlib.gzipSync(text);
    const whole = file('whole.gz', gz);
    let count = 0;
    for await (const _line of linesOf(openInput(whole), 1000)) count++;
    expect(count).toBe(5000);

    const cut = file('cut.gz', gz.subarray(0, gz.length - 20));
    let read = 0;
    const failure = await (async () => {
      for await (const _line of linesOf(openInput(cut), 1000)) read++;
    })().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(InputError);
    expect((failure as Error).message).toBe('the gzip data ends early (truncated file)');
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(5000);
  });
});

describe('JSON lines records', () => {
  it('names the line and field of a non-UTF-8 value, and the line of text that is not JSON or not an object', async () => {
    const bad = Buffer.concat([Buffer.from('{"event":"e","properties":{"name":"'), Buffer.from([0xff]), Buffer.from('"}}\n')]);
    const at = file('bad.jsonl', Buffer.concat([Buffer.from('{"event":"ok"}\n\n'), bad, Buffer.from('nope\n[1]\n')]));
    const read = await records(at);
    expect(read.map((r) => [r.index, r.problem ?? 'ok'])).toEqual([
      [1, 'ok'],
      [3, { field: 'properties.name', reason: 'not valid UTF-8 (byte 0xff at byte 36 of the line)' }],
      [4, { reason: expect.stringMatching(/^not JSON \(/) as string }],
      [5, { reason: 'not a JSON object' }],
    ]);
    expect((await records(at, 3)).map((r) => r.index)).toEqual([4, 5]);
  });
});

describe('CSV records', () => {
  it('maps rows by the header, keeps quoted line breaks, names the column of a non-UTF-8 cell and a row of the wrong width', async () => {
    const at = file(
      'rows.csv',
      Buffer.concat([
        Buffer.from('\ufeffevent,distinct_id,properties.note\r\nsignup,u1,"two\nlines, quoted"\r\n'),
        Buffer.from('signup,'),
        Buffer.from([0xe9]),
        Buffer.from(',x\r\nshort,row\r\nlast,u3,\r\n'),
      ]),
    );
    const read = await records(at);
    expect(read.map((r) => [r.index, r.fields ?? r.problem])).toEqual([
      [1, { event: 'signup', distinct_id: 'u1', 'properties.note': 'two\nlines, quoted' }],
      [2, { field: 'distinct_id', reason: 'not valid UTF-8 (byte 0xe9 at byte 1 of the cell)' }],
      [3, { reason: 'has 2 cells; the header has 3' }],
      [4, { event: 'last', distinct_id: 'u3' }],
    ]);
  });

  it('stops at an unclosed quote with the row it is in', async () => {
    const at = file('open.csv', 'event,distinct_id\nok,u1\nbad,"never closed\n');
    const read: SourceRecord[] = [];
    const failure = await (async () => {
      for await (const record of openRecords(at, 'csv', 0).records) read.push(record);
    })().catch((error: unknown) => error);
    expect(read.map((r) => r.index)).toEqual([1]);
    expect(failure).toBeInstanceOf(InputError);
    expect((failure as Error).message).toMatch(/^row 2: /);
  });
});

describe('toEvent', () => {
  const place = { file: 'export.jsonl', index: 7, raw: '{…}' };

  it('turns a PostHog batch-export row into the event an SDK sends: JSON text columns parsed, set/set_once as $set/$set_once', () => {
    const made = toEvent(
      {
        uuid: '0190a6c1-aaaa-4bbb-8ccc-dddddddddddd',
        event: '$identify',
        distinct_id: 'u1',
        timestamp: '2024-05-01 12:00:00.000000',
        properties: '{"$browser":"Firefox"}',
        set: '{"plan":"pro"}',
        set_once: { first: 'yes' },
        elements_chain: 'a:nth-child="1"',
        team_id: 2,
        person_id: '00000000-0000-0000-0000-000000000000',
        created_at: '2024-05-01 12:00:01',
      },
      place,
    );
    expect('json' in made && JSON.parse(made.json)).toEqual({
      uuid: '0190a6c1-aaaa-4bbb-8ccc-dddddddddddd',
      event: '$identify',
      distinct_id: 'u1',
      timestamp: '2024-05-01 12:00:00.000000',
      properties: { $browser: 'Firefox', $elements_chain: 'a:nth-child="1"' },
      $set: { plan: 'pro' },
      $set_once: { first: 'yes' },
    });
  });

  it('gives a record without a uuid the UUIDv5 of its file name, number and text, the same on every run', () => {
    const made = toEvent({ event: 'e', distinct_id: 'u', 'properties.plan': 'pro' }, place);
    expect('json' in made && JSON.parse(made.json)).toEqual({
      event: 'e',
      distinct_id: 'u',
      properties: { plan: 'pro' },
      uuid: uuidv5('export.jsonl\n7\n{…}', IMPORT_NAMESPACE),
    });
  });

  it.each([
    [{ distinct_id: 'u' }, { field: 'event', reason: 'is missing' }],
    [{ event: 'e' }, { field: 'distinct_id', reason: 'is missing' }],
    [
      { event: 5, distinct_id: 'u' },
      { field: 'event', reason: 'must be text, not 5' },
    ],
    [
      { event: 'e', distinct_id: 'u', properties: '[1]' },
      { field: 'properties', reason: 'must be a JSON object' },
    ],
    [
      { event: 'e', distinct_id: 'u', set: 'nope' },
      { field: 'set', reason: 'must be a JSON object' },
    ],
    [
      { event: 'e', distinct_id: 'u', uuid: 'not-a-uuid' },
      { field: 'uuid', reason: expect.any(String) as string },
    ],
    [{ event: 'e', distinct_id: 'u', properties: { big: 'x'.repeat(1_000_001) } }, { reason: 'larger than 1000000 bytes as JSON' }],
  ])('refuses %j naming the field', (fields, problem) => {
    expect(toEvent(fields, place)).toEqual({ problem });
  });
});

describe('the resume state', () => {
  const identity = { file: '/data/a.jsonl', size: 10, mtimeMs: 5, host: 'http://localhost:8000', project: 1 };
  const state: ImportState = { version: 1, ...identity, through: 40, accepted: 39, rejected: 1, complete: false };

  it('lives beside the input, or in --state-dir under a name made of the input’s path', () => {
    expect(statePath('/data/a.jsonl', undefined)).toBe('/data/a.jsonl.plover-import.json');
    expect(statePath('/data/a.jsonl', '/state')).toBe('/state/_data_a.jsonl.plover-import.json');
  });

  it('is read back for the same file, host and project, and refused with a reason otherwise', () => {
    const at = path.join(dir, 'a.state.json');
    expect(readState(at, identity)).toBeUndefined();
    writeState(at, state);
    expect(readState(at, identity)).toEqual(state);
    expect(() => readState(at, { ...identity, size: 11 })).toThrow(/the file changed since; remove it to import from the start/);
    expect(() => readState(at, { ...identity, project: 2 })).toThrow(/it is for project 1 on http:\/\/localhost:8000/);
  });

  it('that cannot be written is one line saying where to put it instead', () => {
    expect(() => writeState(path.join(dir, 'missing', 'a.state.json'), state)).toThrow(
      `cannot write the import state ${path.join(dir, 'missing', 'a.state.json')} (ENOENT); pass --state-dir DIR`,
    );
  });
});
