/**
 * What one `$snapshot` message's rrweb events add to their session's summary (docs/replay.md, "Summary"), and the
 * JSONL block they are stored as. Pure: the same events always give the same block and counts, so a redelivered
 * message stores exactly what its first delivery did.
 *
 * Events compressed by posthog-js (`cv: "2024-10"`) are counted without decompressing them: the compression only
 * replaces a FullSnapshot's whole `data`, and a Mutation's or StyleSheetRule's `texts`, `attributes`, `adds` and
 * `removes`, none of which a count reads; `type` and `data.source` stay plain. They are stored as sent.
 */
import type { ReplayActivity } from '@plover/clickhouse';

/** rrweb's event types (`EventType`) that the summary reads. */
const INCREMENTAL_SNAPSHOT = 3;
const PLUGIN = 6;

/** rrweb's incremental sources (`IncrementalSource`). */
const MOUSE_MOVE = 1;
const MOUSE_INTERACTION = 2;
const INPUT = 5;
const TOUCH_MOVE = 6;
/** The sources that mean someone is using the page. */
const ACTIVE_SOURCES = new Set([
  MOUSE_MOVE,
  MOUSE_INTERACTION,
  3 /* Scroll */,
  4 /* ViewportResize */,
  INPUT,
  TOUCH_MOVE,
  7 /* MediaInteraction */,
  12 /* Drag */,
]);
const MOUSE_ACTIVITY_SOURCES = new Set([MOUSE_MOVE, MOUSE_INTERACTION, TOUCH_MOVE]);
/** rrweb's MouseInteractions that count as a click: Click, ContextMenu, DblClick, TouchEnd. */
const CLICK_TYPES = new Set([2, 3, 4, 9]);

/** Activity more than this long after the last active event starts a new segment. */
export const ACTIVITY_GAP_MS = 5000;

const CONSOLE_PLUGIN = 'rrweb/console@1';
/** Console methods counted as warnings and as errors; every other level (log, info, debug, …) counts as a log. */
const WARN_LEVELS = new Set(['warn', 'countReset']);
const ERROR_LEVELS = new Set(['error', 'assert']);

export const MAX_URLS = 25;
export const MAX_URL_LENGTH = 4096;

export interface BlockSummary extends ReplayActivity {
  /** Earliest and latest event time, milliseconds since the epoch. */
  first_timestamp: number;
  last_timestamp: number;
  /** The usable events as JSONL lines `["<window_id>", <event>]`, in the order the SDK sent them. */
  data: string;
}

type Event = Record<string, unknown> & { timestamp: number };

/**
 * The block and counts of a message's events, or null when none is usable. An event is usable when it has a
 * positive, finite numeric `timestamp`; the others are left out of the block and the counts.
 */
export function summarizeEvents(windowId: string, events: readonly Record<string, unknown>[]): BlockSummary | null {
  const usable = events.filter((event): event is Event => typeof event.timestamp === 'number' && Number.isFinite(event.timestamp) && event.timestamp > 0);
  const [head] = usable;
  if (!head) return null;
  const summary: BlockSummary = {
    first_timestamp: head.timestamp,
    last_timestamp: head.timestamp,
    data: '',
    click_count: 0,
    keypress_count: 0,
    mouse_activity_count: 0,
    active_milliseconds: activeMilliseconds(usable),
    console_log_count: 0,
    console_warn_count: 0,
    console_error_count: 0,
    event_count: usable.length,
    first_url: null,
    urls: [],
  };
  const lines: string[] = [];
  for (const event of usable) {
    lines.push(`${JSON.stringify([windowId, event])}\n`);
    summary.first_timestamp = Math.min(summary.first_timestamp, event.timestamp);
    summary.last_timestamp = Math.max(summary.last_timestamp, event.timestamp);
    const data = objectOrUndefined(event.data);
    const url = hrefOf(data);
    if (url !== undefined) {
      summary.first_url ??= url;
      if (summary.urls.length < MAX_URLS && !summary.urls.includes(url)) summary.urls.push(url);
    }
    if (event.type === INCREMENTAL_SNAPSHOT) {
      if (data?.source === MOUSE_INTERACTION && CLICK_TYPES.has(data.type as number)) summary.click_count++;
      if (data?.source === INPUT) summary.keypress_count++;
      if (MOUSE_ACTIVITY_SOURCES.has(data?.source as number)) summary.mouse_activity_count++;
    } else if (event.type === PLUGIN && data?.plugin === CONSOLE_PLUGIN) {
      const level = objectOrUndefined(data.payload)?.level;
      if (WARN_LEVELS.has(level as string)) summary.console_warn_count++;
      else if (ERROR_LEVELS.has(level as string)) summary.console_error_count++;
      else summary.console_log_count++;
    }
  }
  summary.data = lines.join('');
  return summary;
}

function objectOrUndefined(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** A page address: `data.href` (Meta events) or `data.payload.href` (the `$pageview` custom event), trimmed, cut to MAX_URL_LENGTH. */
function hrefOf(data: Record<string, unknown> | undefined): string | undefined {
  const href = [data?.href, objectOrUndefined(data?.payload)?.href]
    .map((value) => (typeof value === 'string' ? value.trim() : ''))
    .find((value) => value !== '');
  return href === undefined ? undefined : href.slice(0, MAX_URL_LENGTH);
}

/**
 * Time spent active: the events in time order are cut into segments. A segment starts at the first event, at an
 * active event while the current segment is inactive, and at any event more than ACTIVITY_GAP_MS after the last
 * active event of an active segment; otherwise the event extends the current segment. The active segments'
 * lengths are summed, each at least 1 ms (a lone active event counts), and the total floored.
 */
function activeMilliseconds(events: readonly Event[]): number {
  const sorted = events.map((event) => ({ at: event.timestamp, active: isActive(event) })).sort((a, b) => a.at - b.at);
  let total = 0;
  let segment: { start: number; end: number; active: boolean } | undefined;
  let lastActive = 0;
  for (const event of sorted) {
    const starts = !segment || (event.active && !segment.active) || (segment.active && lastActive + ACTIVITY_GAP_MS < event.at);
    if (event.active) lastActive = event.at;
    if (starts) {
      if (segment?.active) total += Math.max(1, segment.end - segment.start);
      segment = { start: event.at, end: event.at, active: event.active };
    } else if (segment) {
      segment.end = event.at;
    }
  }
  if (segment?.active) total += Math.max(1, segment.end - segment.start);
  return Math.floor(total);
}

function isActive(event: Event): boolean {
  return event.type === INCREMENTAL_SNAPSHOT && ACTIVE_SOURCES.has(objectOrUndefined(event.data)?.source as number);
}
