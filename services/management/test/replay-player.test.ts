/**
 * The replay player: the recording logic of its page (decompression, windows), the routes that serve it, and
 * the page itself in Chromium against a stand-in API, so the page is checked apart from ingestion.
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import express from 'express';
import request from 'supertest';
import { readBuiltPlayer, writePlayer, type PlayerAssets } from '../src/replay-player/assets';
import { decompressEvent, parseSnapshotLines, playableWindows, type RrwebEvent } from '../src/replay-player/browser/recording';
import { replayPlayerRoutes } from '../src/replay-player';
import { artifactPath, describeWithBrowser, launchBrowser } from '../../../test/support/browser';

/** What posthog-js does to a value it compresses: gzip of the UTF-8 JSON, carried one character per byte. */
function compress(value: unknown): string {
  return zlib.gzipSync(Buffer.from(JSON.stringify(value), 'utf8')).toString('latin1');
}

/** A line as it travels: JSON text parsed back, as the page gets it. */
function line(windowId: string, event: RrwebEvent): string {
  return JSON.stringify([windowId, event]);
}

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** rrweb's serialized DOM: a document whose body holds `text`. */
function documentWith(text: string): object {
  return {
    node: {
      type: 0,
      id: 1,
      childNodes: [
        { type: 1, id: 2, name: 'html', publicId: '', systemId: '' },
        {
          type: 2,
          id: 3,
          tagName: 'html',
          attributes: {},
          childNodes: [
            { type: 2, id: 4, tagName: 'head', attributes: {}, childNodes: [] },
            {
              type: 2,
              id: 5,
              tagName: 'body',
              attributes: {},
              childNodes: [{ type: 2, id: 6, tagName: 'h1', attributes: {}, childNodes: [{ type: 3, id: 7, textContent: text }] }],
            },
          ],
        },
      ],
    },
    initialOffset: { left: 0, top: 0 },
  };
}

function meta(timestamp: number): RrwebEvent {
  return { type: 4, timestamp, data: { href: 'https://shop.example/', width: 800, height: 500 } };
}

function fullSnapshot(timestamp: number, text: string): RrwebEvent {
  return { type: 2, timestamp, data: compress(documentWith(text)), cv: '2024-10' };
}

function click(timestamp: number): RrwebEvent {
  return { type: 3, timestamp, data: { source: 2, type: 2, id: 6, x: 10, y: 10 } };
}

describe('the recording logic of the page', () => {
  it('restores a compressed FullSnapshot whose text is not ASCII, after the JSON round trip', async () => {
    const data = documentWith('Grüße — ✓ 数据');
    const [[, event]] = parseSnapshotLines(line('w', { type: 2, timestamp: T0, data: compress(data), cv: '2024-10' })) as [[string, RrwebEvent]];
    expect(await decompressEvent(event)).toEqual({ type: 2, timestamp: T0, data, cv: '2024-10' });
  });

  it('restores the four compressed fields of a mutation and the present fields of a style sheet rule', async () => {
    const mutation = { source: 0, adds: [{ parentId: 5, nextId: null, node: { type: 3, id: 9, textContent: 'é' } }], removes: [], texts: [], attributes: [] };
    const compressedMutation = { source: 0, adds: compress(mutation.adds), removes: compress([]), texts: compress([]), attributes: compress([]) };
    expect(await decompressEvent({ type: 3, timestamp: T0, data: compressedMutation, cv: '2024-10' })).toEqual({
      type: 3,
      timestamp: T0,
      data: mutation,
      cv: '2024-10',
    });
    const rule = { source: 8, id: 3, adds: [{ rule: 'h1 { color: red }', index: 0 }] };
    const restored = await decompressEvent({ type: 3, timestamp: T0, data: { source: 8, id: 3, adds: compress(rule.adds) }, cv: '2024-10' });
    expect(restored.data).toEqual(rule);
  });

  it('leaves plain events and events of another compression version as they are', async () => {
    const unknownVersion = { type: 2, timestamp: T0, data: 'opaque', cv: '2099-01' };
    expect(await decompressEvent(unknownVersion)).toBe(unknownVersion);
    const plain = click(T0);
    expect(await decompressEvent(plain)).toBe(plain);
  });

  it('skips blank lines and lines of another shape', () => {
    const body = ['', line('w', click(T0)), 'not json', '{"window_id":"w","data":[]}', '["w", {"type": 3}]', '  ', line('v', meta(T0))].join('\n');
    expect(parseSnapshotLines(body)).toEqual([
      ['w', click(T0)],
      ['v', meta(T0)],
    ]);
  });

  it('gives each window its events in time order from the Meta before its FullSnapshot, without repeats', async () => {
    const lines = parseSnapshotLines(
      [
        // Window b starts later; its lines arrive first and out of order, one of them twice.
        line('b', click(T0 + 5_000)),
        line('b', fullSnapshot(T0 + 3_001, 'two')),
        line('b', meta(T0 + 3_000)),
        line('b', click(T0 + 5_000)),
        // Window a: an event before its Meta cannot be replayed and is dropped.
        line('a', click(T0 - 1_000)),
        line('a', meta(T0)),
        line('a', fullSnapshot(T0, 'one')),
        line('a', click(T0 + 2_000)),
        // Window c never got a FullSnapshot.
        line('c', meta(T0 + 100)),
        line('c', click(T0 + 200)),
      ].join('\n'),
    );
    const windows = await playableWindows(lines);
    expect(windows.map((window) => [window.id, window.start, window.end, window.events.map((event) => event.type)])).toEqual([
      ['a', T0, T0 + 2_000, [4, 2, 3]],
      ['b', T0 + 3_000, T0 + 5_000, [4, 2, 3]],
    ]);
    expect(windows[0]!.events[1]!.data).toEqual(documentWith('one'));
  });
});

const FAKE_ASSETS: PlayerAssets = new Map([
  ['player.js', Buffer.from('/* js */')],
  ['player.css', Buffer.from('/* css */')],
]);

describe('the player routes', () => {
  const app = express().use(replayPlayerRoutes(() => Promise.resolve(FAKE_ASSETS)));

  it('serves the page for a session id, with a policy that allows scripts and API calls from this origin only', async () => {
    const response = await request(app).get('/replay/0198c0dd-7a3e-7c1b-9a52-0b6f2d3f1e11').expect(200);
    expect(response.type).toBe('text/html');
    expect(response.text).toContain('<script src="assets/player.js" defer></script>');
    const policy = String(response.headers['content-security-policy']);
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(response.headers['referrer-policy']).toBe('no-referrer');
  });

  it('serves no page for a path segment that is not a session id', async () => {
    await request(app).get('/replay/not.a.session').expect(404);
    await request(app)
      .get(`/replay/${'a'.repeat(71)}`)
      .expect(404);
  });

  it('serves the bundle with its content types and nothing else under assets/', async () => {
    const script = await request(app).get('/replay/assets/player.js').expect(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.text).toBe('/* js */');
    const styles = await request(app).get('/replay/assets/player.css').expect(200);
    expect(styles.headers['content-type']).toBe('text/css; charset=utf-8');
    await request(app).get('/replay/assets/index.ts').expect(404);
  });

  it('tries to load the bundle again after a failed load', async () => {
    let calls = 0;
    const flaky = express().use(
      replayPlayerRoutes(() => (++calls === 1 ? Promise.reject(new Error('build failed')) : Promise.resolve(FAKE_ASSETS))),
      ((_error, _req, res, _next) => void res.status(500).end()) as express.ErrorRequestHandler,
    );
    await request(flaky).get('/replay/assets/player.js').expect(500);
    await request(flaky).get('/replay/assets/player.js').expect(200);
    await request(flaky).get('/replay/assets/player.css').expect(200);
    expect(calls).toBe(2);
  });

  it('reads the bundle the build step wrote, and finds none where nothing was built', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-player-'));
    try {
      expect(await readBuiltPlayer(dir)).toBeUndefined();
      await writePlayer(dir);
      const built = await readBuiltPlayer(dir);
      expect([...built!.keys()]).toEqual(['player.js', 'player.css']);
      expect(Buffer.from(built!.get('player.js')!).toString()).toContain('plover.apiKey');
      expect(Buffer.from(built!.get('player.css')!).toString()).toContain('.rr-player');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

const SESSION = '0198c0dd-7a3e-7c1b-9a52-0b6f2d3f1e11';
const KEY = 'phx_stand_in_key';

/** The two blocks the stand-in API serves: window one, then window two, as compressed as posthog-js sends them. */
const BLOCKS = [
  [line('w1', meta(T0)), line('w1', fullSnapshot(T0 + 1, 'Hello from window one')), line('w1', click(T0 + 4_000))].join('\n'),
  [line('w2', meta(T0 + 6_000)), line('w2', fullSnapshot(T0 + 6_001, 'Hello from window two')), line('w2', click(T0 + 9_000))].join('\n'),
];

/** The management API as far as the page calls it, for one recording in the key's current project. */
function standInApi(seen: { authorization: Array<string | undefined>; cookies: number }): express.Router {
  const api = express.Router();
  api.use((req, res, next) => {
    seen.authorization.push(req.headers.authorization);
    if (req.headers.cookie) seen.cookies++;
    if (req.headers.authorization === `Bearer ${KEY}`) return next();
    res.status(401).json({ type: 'authentication_error', code: 'authentication_failed', detail: 'Personal API key found in request is invalid.', attr: null });
  });
  const recording = `/projects/:project_id/session_recordings/${SESSION}`;
  api.use(recording, (req, res, next) => (req.params.project_id === '@current' ? next() : res.status(404).json({})));
  api.get(recording, (_req, res) => {
    res.json({
      id: SESSION,
      distinct_id: 'user-42',
      start_time: new Date(T0).toISOString(),
      recording_duration: 9,
      active_seconds: 2,
      click_count: 2,
      keypress_count: 0,
      console_error_count: 1,
      start_url: 'https://shop.example/',
      person: { name: 'ada@shop.example', distinct_ids: ['user-42'], properties: { email: 'ada@shop.example' } },
    });
  });
  api.get(`${recording}/snapshots`, (req, res) => {
    if (req.query.source === undefined) {
      res.json({ sources: BLOCKS.map((_, index) => ({ source: 'blob_v2', blob_key: String(index), start_timestamp: null, end_timestamp: null })) });
      return;
    }
    const [start, end] = [Number(req.query.start_blob_key), Number(req.query.end_blob_key)];
    res.type('application/jsonl').send(BLOCKS.slice(start, end + 1).join('\n'));
  });
  return api;
}

describeWithBrowser()('the player page in Chromium', () => {
  const seen = { authorization: [] as Array<string | undefined>, cookies: 0 };
  let server: ReturnType<express.Express['listen']>;
  let base: string;

  beforeAll(async () => {
    const app = express().use(replayPlayerRoutes()).use('/api', standInApi(seen));
    server = await new Promise<typeof server>((resolve) => {
      const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('asks for a key, refuses a wrong one, then shows the metadata and replays each window', async () => {
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.context().addCookies([{ name: 'session', value: 'never-sent', url: base }]);
      await page.goto(`${base}/replay/${SESSION}`);

      await page.fill('#key-input', 'phx_wrong');
      await page.click('#key-form button');
      await page.waitForSelector('#key-form:not([hidden])');
      expect(await page.textContent('#status')).toBe('The key was refused: Personal API key found in request is invalid.');
      expect(await page.evaluate("sessionStorage.getItem('plover.apiKey')")).toBeNull();

      await page.fill('#key-input', KEY);
      await page.click('#key-form button');
      const frame = page.frameLocator('.replayer-wrapper iframe');
      await frame.locator('h1', { hasText: 'Hello from window one' }).waitFor();
      const field = (name: string) => page.textContent(`#metadata [data-field="${name}"]`);
      expect(await field('person')).toBe('ada@shop.example');
      expect(await field('distinct_id')).toBe('user-42');
      expect(await field('start_url')).toBe('https://shop.example/');
      expect(await field('recording_duration')).toBe('9s');
      expect(await field('click_count')).toBe('2');
      expect(await field('console_error_count')).toBe('1');
      await page.screenshot({ path: artifactPath('replay-player-stand-in.png') });

      expect(await page.locator('#window-select option').allTextContents()).toEqual([
        expect.stringMatching(/^Window 1: /),
        expect.stringMatching(/^Window 2: /),
      ]);
      await page.selectOption('#window-select', '1');
      await frame.locator('h1', { hasText: 'Hello from window two' }).waitFor();

      // A reload in the same tab keeps the key (sessionStorage) and asks for nothing.
      await page.reload();
      await frame.locator('h1', { hasText: 'Hello from window one' }).waitFor();
      expect(await page.isHidden('#key-form')).toBe(true);

      expect(errors).toEqual([]);
      expect(seen.cookies).toBe(0);
      expect(new Set(seen.authorization)).toEqual(new Set(['Bearer phx_wrong', `Bearer ${KEY}`]));
    } finally {
      await browser.close();
    }
  });
});
