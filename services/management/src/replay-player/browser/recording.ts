/**
 * From the snapshots API's JSONL to what rrweb's player can replay: parse the `[window_id, event]` lines,
 * decompress the events posthog-js compressed (`cv: "2024-10"`), and split them into one ordered stream per
 * window starting at a Meta event followed by a FullSnapshot. Uses only what both browsers and Node offer,
 * so the same code runs in the page and in its unit tests.
 */

/** rrweb event types the player cares about. */
export const EventType = { FullSnapshot: 2, IncrementalSnapshot: 3, Meta: 4 } as const;
/** rrweb incremental snapshot sources whose payload posthog-js compresses. */
const Source = { Mutation: 0, StyleSheetRule: 8 } as const;

/** The compression version posthog-js marks its compressed events with. */
const COMPRESSION_VERSION = '2024-10';

export interface RrwebEvent {
  type: number;
  timestamp: number;
  data: unknown;
  cv?: unknown;
  [key: string]: unknown;
}

export interface RecordingWindow {
  id: string;
  /** Ordered by timestamp, from the Meta that starts its first FullSnapshot. */
  events: RrwebEvent[];
  start: number;
  end: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isEvent(value: unknown): value is RrwebEvent {
  return isRecord(value) && Number.isFinite(value.type) && Number.isFinite(value.timestamp);
}

/** The `[window_id, event]` lines of a JSONL body; blank lines and lines of another shape are skipped. */
export function parseSnapshotLines(body: string): Array<[string, RrwebEvent]> {
  const lines: Array<[string, RrwebEvent]> = [];
  for (const line of body.split('\n')) {
    if (line.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      continue;
    }
    if (Array.isArray(parsed) && parsed.length === 2 && typeof parsed[0] === 'string' && isEvent(parsed[1])) lines.push([parsed[0], parsed[1]]);
  }
  return lines;
}

/**
 * posthog-js turns a value into gzip bytes carried as a "binary string", one character per byte: the bytes are
 * the characters' low 8 bits (UTF-8 encoding the string first would corrupt every byte above 0x7f).
 */
async function unzip(value: unknown): Promise<unknown> {
  if (typeof value !== 'string') return value;
  const bytes = new Uint8Array(value.length);
  for (let i = 0; i < value.length; i++) bytes[i] = value.charCodeAt(i) & 0xff;
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return JSON.parse(await new Response(stream).text()) as unknown;
}

/** The event with the fields posthog-js compressed restored; events of another compression version stay as they are. */
export async function decompressEvent(event: RrwebEvent): Promise<RrwebEvent> {
  if (event.cv !== COMPRESSION_VERSION) return event;
  if (event.type === EventType.FullSnapshot) return { ...event, data: await unzip(event.data) };
  if (event.type !== EventType.IncrementalSnapshot || !isRecord(event.data)) return event;
  const data = event.data;
  const fields =
    data.source === Source.Mutation ? ['adds', 'removes', 'texts', 'attributes'] : data.source === Source.StyleSheetRule ? ['adds', 'removes'] : [];
  const restored: Record<string, unknown> = { ...data };
  for (const field of fields) if (field in data) restored[field] = await unzip(data[field]);
  return { ...event, data: restored };
}

/** A window's events from the last Meta before its first FullSnapshot, or undefined when it has no such pair. */
function playableFrom(events: RrwebEvent[]): RrwebEvent[] | undefined {
  let meta: number | undefined;
  for (let i = 0; i < events.length; i++) {
    const type = events[i]!.type;
    if (type === EventType.Meta) meta = i;
    else if (type === EventType.FullSnapshot && meta !== undefined) return events.slice(meta);
  }
  return undefined;
}

/**
 * The playable windows of a recording, earliest first: each window's events decompressed, ordered by timestamp
 * (stable, so events of one millisecond keep the order they were recorded in), exact repeats dropped.
 * Windows without a Meta and FullSnapshot cannot be rebuilt and are left out.
 */
export async function playableWindows(lines: Array<[string, RrwebEvent]>): Promise<RecordingWindow[]> {
  const byWindow = new Map<string, { seen: Set<string>; events: RrwebEvent[] }>();
  for (const [windowId, event] of lines) {
    let window = byWindow.get(windowId);
    if (!window) byWindow.set(windowId, (window = { seen: new Set(), events: [] }));
    const key = JSON.stringify(event);
    if (window.seen.has(key)) continue;
    window.seen.add(key);
    window.events.push(event);
  }
  const windows: RecordingWindow[] = [];
  for (const [id, { events }] of byWindow) {
    const ordered = (await Promise.all(events.map(decompressEvent))).sort((a, b) => a.timestamp - b.timestamp);
    const playable = playableFrom(ordered);
    if (playable) windows.push({ id, events: playable, start: playable[0]!.timestamp, end: playable[playable.length - 1]!.timestamp });
  }
  return windows.sort((a, b) => a.start - b.start);
}
