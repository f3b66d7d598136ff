/**
 * Synthetic session recordings shaped like posthog-js's, for suites and benchmarks that need many of them: rrweb
 * events over time (Meta and FullSnapshot of a page of text, mouse moves, clicks, scrolls, inputs, text
 * mutations, console logs), large payloads compressed as posthog-js compresses them (`cv: "2024-10"`, gzip of the
 * JSON as a latin1 string), `$snapshot` events and the gzip request bodies the recorder posts to `/s/`.
 * Deterministic for a given random source.
 */
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';

export type RrwebEvent = Record<string, unknown> & { type: number; timestamp: number };

const WORDS = (
  'the of and to in is you that it he was for on are as with his they at be this have from or one had by word but not what all were we when ' +
  'your can said there use an each which she do how their if will up other about out many then them these so some her would make like him ' +
  'into time has look two more write go see number no way could people my than first water been call who oil its now find long down day did ' +
  'get come made may part order cart checkout price shipping account settings dashboard invoice customer product search results team plan'
).split(' ');

/** rrweb's serialized node types and incremental sources used here. */
const NODE = { document: 0, element: 2, text: 3 } as const;
const SOURCE = { mutation: 0, mouseMove: 1, mouseInteraction: 2, scroll: 3, input: 5 } as const;

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const integer = (random: () => number, below: number) => Math.floor(random() * below);

function sentence(random: () => number, words: number): string {
  const text = Array.from({ length: words }, () => pick(random, WORDS)).join(' ');
  return `${text[0]?.toUpperCase()}${text.slice(1)}.`;
}

/** What posthog-js puts in place of a compressed field: gzip of its JSON, one latin1 character per byte. */
export function compressedField(value: unknown): string {
  return gzipSync(JSON.stringify(value)).toString('latin1');
}

/** A page of `sections` sections of headings, paragraphs, a form and links, as rrweb serializes a document. */
function pageDocument(random: () => number, sections: number): { node: Record<string, unknown>; textIds: number[] } {
  let id = 1;
  const textIds: number[] = [];
  const text = (content: string) => {
    const node = { type: NODE.text, textContent: content, id: ++id };
    textIds.push(node.id);
    return node;
  };
  const element = (tagName: string, attributes: Record<string, string>, childNodes: unknown[]) => ({
    type: NODE.element,
    tagName,
    attributes,
    childNodes,
    id: ++id,
  });
  const body = Array.from({ length: sections }, (_, i) =>
    element('section', { class: `section section-${i % 7}`, 'data-ph-capture-attribute-section': String(i) }, [
      element('h2', { class: 'heading' }, [text(sentence(random, 3 + integer(random, 5)))]),
      element('p', { class: 'copy text-muted' }, [text(sentence(random, 25 + integer(random, 40)))]),
      element('p', { class: 'copy' }, [text(sentence(random, 15 + integer(random, 30)))]),
      element('form', { action: `/forms/${i}`, method: 'post' }, [
        element('input', { type: 'email', name: 'email', placeholder: 'you@example.com', value: '' }, []),
        element('button', { type: 'submit', class: 'btn btn-primary' }, [text(pick(random, ['Subscribe', 'Add to cart', 'Continue', 'Save']))]),
      ]),
      element('a', { href: `/products/${integer(random, 500)}?ref=section-${i}`, class: 'link' }, [text(sentence(random, 4))]),
    ]),
  );
  const html = element('html', { lang: 'en' }, [element('head', {}, [element('title', {}, [text('Example shop')])]), element('body', { class: 'page' }, body)]);
  return { node: { type: NODE.document, childNodes: [html], id: 1 }, textIds };
}

export interface RecordingOptions {
  random: () => number;
  /** Epoch ms of the first event. */
  start: number;
  /** How long the recording runs, ms. */
  durationMs: number;
  /** Sections per page: the size of each FullSnapshot. */
  sections?: number;
  /** A new page (Meta + FullSnapshot) every this many ms. */
  pageEveryMs?: number;
  /** Mean ms between two incremental events. */
  eventEveryMs?: number;
}

/**
 * The rrweb events of one window over `durationMs`, in time order: a Meta and a compressed FullSnapshot per page,
 * then mostly mouse moves, with clicks, scrolls, inputs, compressed text mutations and the odd console log.
 */
export function recordingEvents(options: RecordingOptions): RrwebEvent[] {
  const { random, start, durationMs } = options;
  const sections = options.sections ?? 80;
  const pageEveryMs = options.pageEveryMs ?? 120_000;
  const eventEveryMs = options.eventEveryMs ?? 60;
  const events: RrwebEvent[] = [];
  let textIds: number[] = [];
  let nextPage = start;
  for (let at = start; at < start + durationMs; at += 1 + integer(random, 2 * eventEveryMs)) {
    if (at >= nextPage) {
      const page = pageDocument(random, sections);
      textIds = page.textIds;
      events.push({ type: 4, data: { href: `https://shop.example/products/${integer(random, 500)}`, width: 1440, height: 900 }, timestamp: at });
      events.push({ type: 2, data: compressedField({ node: page.node, initialOffset: { left: 0, top: 0 } }), cv: '2024-10', timestamp: at + 1 });
      nextPage = at + pageEveryMs;
      continue;
    }
    const roll = random();
    const target = pick(random, textIds);
    if (roll < 0.7) {
      const positions = Array.from({ length: 1 + integer(random, 6) }, (_, i) => ({
        x: integer(random, 1440),
        y: integer(random, 900),
        id: target,
        timeOffset: -i * 16,
      }));
      events.push({ type: 3, data: { source: SOURCE.mouseMove, positions }, timestamp: at });
    } else if (roll < 0.8) {
      events.push({ type: 3, data: { source: SOURCE.scroll, id: 1, x: 0, y: integer(random, 6000) }, timestamp: at });
    } else if (roll < 0.86) {
      events.push({
        type: 3,
        data: { source: SOURCE.mouseInteraction, type: 2, id: target, x: integer(random, 1440), y: integer(random, 900) },
        timestamp: at,
      });
    } else if (roll < 0.92) {
      events.push({ type: 3, data: { source: SOURCE.input, text: pick(random, WORDS), isChecked: false, id: target }, timestamp: at });
    } else if (roll < 0.99) {
      const texts = [{ id: target, value: sentence(random, 8 + integer(random, 20)) }];
      const adds = [{ parentId: target, nextId: null, node: { type: NODE.text, textContent: sentence(random, 12), id: 100_000 + integer(random, 100_000) } }];
      events.push({
        type: 3,
        data: {
          source: SOURCE.mutation,
          texts: compressedField(texts),
          attributes: compressedField([]),
          removes: compressedField([]),
          adds: compressedField(adds),
        },
        cv: '2024-10',
        timestamp: at,
      });
    } else {
      events.push({
        type: 6,
        data: {
          plugin: 'rrweb/console@1',
          payload: { level: pick(random, ['log', 'warn', 'error']), payload: [JSON.stringify(sentence(random, 6))], trace: [] },
        },
        timestamp: at,
      });
    }
  }
  return events;
}

/** `events` cut into posthog-js's flushes: one list per `flushMs` of recording time (empty ones left out). */
export function flushes(events: readonly RrwebEvent[], start: number, flushMs: number): RrwebEvent[][] {
  const byFlush = new Map<number, RrwebEvent[]>();
  for (const event of events) {
    const index = Math.floor((event.timestamp - start) / flushMs);
    const flush = byFlush.get(index);
    if (flush) flush.push(event);
    else byFlush.set(index, [event]);
  }
  return [...byFlush.keys()].sort((a, b) => a - b).map((index) => byFlush.get(index) as RrwebEvent[]);
}

export interface SnapshotTarget {
  token: string;
  distinctId: string;
  sessionId: string;
  windowId: string;
}

/** One `$snapshot` event as posthog-js's recorder queues it; the uuid is a fresh UUIDv4 unless given. */
export function snapshotEvent(target: SnapshotTarget, events: readonly RrwebEvent[], uuid: string = randomUUID()): Record<string, unknown> {
  return {
    uuid,
    event: '$snapshot',
    properties: {
      $snapshot_bytes: JSON.stringify(events).length,
      $snapshot_data: events,
      $session_id: target.sessionId,
      $window_id: target.windowId,
      $lib: 'web',
      $lib_version: '1.449.2',
      $snapshot_host: 'shop.example',
      distinct_id: target.distinctId,
      token: target.token,
    },
    offset: 640,
  };
}

/** A `/s/` request body as posthog-js 1.398.2 and later post it: the gzipped JSON list, sent as text/plain. */
export function snapshotRequestBody(snapshotEvents: readonly Record<string, unknown>[]): Buffer {
  return gzipSync(JSON.stringify(snapshotEvents));
}

export const SNAPSHOT_REQUEST_HEADERS = { 'Content-Type': 'text/plain' } as const;
