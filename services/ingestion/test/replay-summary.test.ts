import { gzipSync } from 'node:zlib';
import { MAX_URL_LENGTH, MAX_URLS, summarizeEvents } from '../src/replay/summary';

const BASE = 1_767_225_600_000;

/** What posthog-js sends for a compressed field: gzip of the JSON as a latin1 string (one char per byte). */
const compressed = (value: unknown) => gzipSync(JSON.stringify(value)).toString('latin1');

const incremental = (at: number, source: number, extra: Record<string, unknown> = {}) => ({ type: 3, data: { source, ...extra }, timestamp: BASE + at });
const consoleEvent = (at: number, level: unknown) => ({
  type: 6,
  data: { plugin: 'rrweb/console@1', payload: { level, payload: ['"message"'], trace: [] } },
  timestamp: BASE + at,
});

/**
 * A hand-built recording of 27 usable events (and two unusable ones). Counted by hand:
 * - clicks 4: Click (200), DblClick (300), ContextMenu (400), TouchEnd (500); MouseUp (600) is not a click;
 * - keypresses 2: the two Inputs (700, 800);
 * - mouse activity 7: MouseMove (100), the five MouseInteractions (200–600), TouchMove (900);
 * - console: logs 3 (log, info, an unknown level), warnings 2 (warn, countReset), errors 2 (error, assert); the
 *   network plugin event counts as nothing;
 * - urls: the Meta href (trimmed), then the `$pageview` href; the second Meta repeats the first;
 * - active time: segment 100–1900 (active from the MouseMove; the inactive events up to 1900 fall within 5 s of
 *   the last active event at 900, so they extend it) = 1800 ms; then a 6 s idle gap; the Scroll at 7900 comes
 *   more than 5 s after 900 and starts segment 7900–12500 (the Drag at 12000 is 3.6 s after the resize at
 *   8400) = 4600 ms; total 6400 ms.
 * The compressed FullSnapshot, Mutation and StyleSheetRule are inactive and count as events only.
 */
const recording: Record<string, unknown>[] = [
  { type: 4, data: { href: '  https://a.example/start  ', width: 1280, height: 800 }, timestamp: BASE },
  { type: 2, data: compressed({ node: { type: 0, childNodes: [] }, initialOffset: { top: 0, left: 0 } }), cv: '2024-10', timestamp: BASE + 5 },
  incremental(100, 1, { positions: [{ x: 1, y: 2, id: 3, timeOffset: 0 }] }),
  incremental(200, 2, { type: 2, id: 5, x: 1, y: 1 }),
  incremental(300, 2, { type: 4, id: 5 }),
  incremental(400, 2, { type: 3, id: 5 }),
  incremental(500, 2, { type: 9, id: 5 }),
  incremental(600, 2, { type: 0, id: 5 }),
  incremental(700, 5, { text: 'a', isChecked: false, id: 7 }),
  incremental(800, 5, { text: 'ab', isChecked: false, id: 7 }),
  incremental(900, 6, { positions: [] }),
  {
    type: 3,
    data: { source: 0, texts: compressed([]), attributes: compressed([]), removes: compressed([]), adds: compressed([{ parentId: 1 }]) },
    cv: '2024-10',
    timestamp: BASE + 1000,
  },
  consoleEvent(1100, 'log'),
  consoleEvent(1200, 'info'),
  consoleEvent(1300, 'warn'),
  consoleEvent(1400, 'countReset'),
  consoleEvent(1500, 'error'),
  consoleEvent(1600, 'assert'),
  consoleEvent(1700, 'weird'),
  { type: 6, data: { plugin: 'rrweb/network@1', payload: { requests: [] } }, timestamp: BASE + 1800 },
  { type: 5, data: { tag: '$pageview', payload: { href: 'https://a.example/second' } }, timestamp: BASE + 1900 },
  { type: 5, data: { tag: 'no timestamp' } },
  incremental(7900, 3, { id: 1, x: 0, y: 400 }),
  incremental(8400, 4, { width: 1000, height: 700 }),
  { type: 3, data: { source: 8, id: 9, adds: compressed([{ rule: 'a{}' }]) }, cv: '2024-10', timestamp: BASE + 8500 },
  { type: 4, data: { href: 'https://a.example/start', width: 1000, height: 700 }, timestamp: BASE + 9000 },
  // Out of order, as a flush can send them: active time is computed in time order.
  incremental(12500, 7, { type: 0, id: 11 }),
  incremental(12000, 12, { positions: [] }),
  { type: 3, data: { source: 1 }, timestamp: 0 },
];

describe('replay summary of a message', () => {
  it('counts a hand-built recording as PostHog does', () => {
    const summary = summarizeEvents('window-1', recording);
    expect(summary).toEqual({
      first_timestamp: BASE,
      last_timestamp: BASE + 12500,
      data: expect.any(String),
      click_count: 4,
      keypress_count: 2,
      mouse_activity_count: 7,
      active_milliseconds: 6400,
      console_log_count: 3,
      console_warn_count: 2,
      console_error_count: 2,
      event_count: 27,
      first_url: 'https://a.example/start',
      urls: ['https://a.example/start', 'https://a.example/second'],
    });
  });

  it('stores the usable events as sent, compressed ones too, one `[window, event]` line each in the order sent', () => {
    const lines = summarizeEvents('window-1', recording)!.data.split('\n');
    const usable = recording.filter((event) => typeof event.timestamp === 'number' && event.timestamp > 0);
    expect(lines.pop()).toBe('');
    expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual(usable.map((event) => ['window-1', event]));
  });

  it('counts compressed events as their plain forms', () => {
    const plain = [
      { type: 2, data: { node: { type: 0, childNodes: [] }, initialOffset: { top: 0, left: 0 } }, timestamp: BASE },
      { type: 3, data: { source: 0, texts: [], attributes: [], removes: [], adds: [] }, timestamp: BASE + 10 },
      incremental(20, 2, { type: 2, id: 1 }),
    ];
    const squeezed = [
      { ...plain[0], data: compressed(plain[0]!.data), cv: '2024-10' },
      {
        type: 3,
        data: { source: 0, texts: compressed([]), attributes: compressed([]), removes: compressed([]), adds: compressed([]) },
        cv: '2024-10',
        timestamp: BASE + 10,
      },
      plain[2]!,
    ];
    const { data: _plainData, ...plainCounts } = summarizeEvents('w', plain)!;
    const { data: _squeezedData, ...squeezedCounts } = summarizeEvents('w', squeezed)!;
    expect(squeezedCounts).toEqual(plainCounts);
  });

  it('gives a lone active event 1 ms and an inactive recording none', () => {
    expect(summarizeEvents('w', [incremental(0, 1)])?.active_milliseconds).toBe(1);
    expect(summarizeEvents('w', [incremental(0, 0), { type: 4, data: {}, timestamp: BASE + 10_000 }])?.active_milliseconds).toBe(0);
  });

  it('keeps at most 25 distinct urls, each cut to 4096 characters, and ignores blank ones', () => {
    const pages = Array.from({ length: 30 }, (_, i) => ({ type: 4, data: { href: `https://a.example/${i}` }, timestamp: BASE + i }));
    const long = { type: 4, data: { href: `https://a.example/${'x'.repeat(5000)}` }, timestamp: BASE };
    const blank = { type: 5, data: { href: '   ', payload: { href: 42 } }, timestamp: BASE };
    expect(summarizeEvents('w', pages)?.urls).toEqual(pages.slice(0, MAX_URLS).map((page) => page.data.href));
    expect(summarizeEvents('w', [blank, long])).toMatchObject({
      first_url: long.data.href.slice(0, MAX_URL_LENGTH),
      urls: [long.data.href.slice(0, MAX_URL_LENGTH)],
    });
    expect(summarizeEvents('w', [blank])).toMatchObject({ first_url: null, urls: [] });
  });

  it('is null when no event has a usable timestamp', () => {
    expect(
      summarizeEvents('w', [{ type: 4 }, { type: 4, timestamp: '2026-01-01' }, { type: 4, timestamp: -5 }, { type: 4, timestamp: Number.NaN }]),
    ).toBeNull();
  });
});
