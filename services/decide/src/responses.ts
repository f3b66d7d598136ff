/**
 * Response bodies per endpoint and version (docs/decide.md#versions; Django `posthog/api/decide.py` and Rust
 * `rust/feature-flags/src/api/types.rs`).
 */
import type { SessionReplaySettings } from '@plover/accounts';
import { type FeatureFlag, type FlagEvaluation, type JsonValue } from '@plover/flags';
import { capturePerformanceConfig, sessionRecordingConfig } from './session-recording';

export type ResponseShape =
  /** `featureFlags: [active keys]` */
  | 'v1'
  /** `featureFlags: {activeKey: value}` */
  | 'v2'
  /** `featureFlags: {every key: value}` + `featureFlagPayloads` */
  | 'v3'
  /** `flags: {key: FlagDetail}` */
  | 'v4';

export interface Shaping {
  shape: ResponseShape;
  /** Include the config fields (always on /decide; `config=true` on /flags). */
  config: boolean;
}

/** `/decide/?v=`: missing → 1; Django reads a non-integer as 2 (posthog-js 1.19). */
export function decideShaping(v: string | null): Shaping {
  if (v === null || v === '') return { shape: 'v1', config: true };
  const version = /^\s*-?\d+\s*$/.test(v) ? Number.parseInt(v, 10) : 2;
  const shape: ResponseShape = version <= 1 ? 'v1' : version === 2 ? 'v2' : version === 3 ? 'v3' : 'v4';
  return { shape, config: true };
}

/** `/flags/?v=`: missing v and config → v2 with config; `v=1` → the legacy (v3-like) body; otherwise the flags map. */
export function flagsShaping(v: string | null, config: string | null): Shaping {
  const wantsConfig = config === 'true' || config === '1';
  if ((v === null || v === '') && config === null) return { shape: 'v4', config: true };
  const version = v !== null && /^\s*\d+\s*$/.test(v) ? Number.parseInt(v, 10) : 1;
  return { shape: version >= 2 ? 'v4' : 'v3', config: wantsConfig };
}

/**
 * The config fields of a decide response (Django `get_base_config`, Rust `ConfigResponse`). `/decide` lists
 * `lz64` among the compressions as Django does; `/flags` answers like Rust.
 */
export function configFields(options: { surveys: boolean; endpoint?: 'decide' | 'flags'; replay?: SessionReplaySettings }): Record<string, unknown> {
  return {
    config: { enable_collect_everything: true },
    toolbarParams: {},
    isAuthenticated: false,
    supportedCompression: options.endpoint === 'decide' ? ['gzip', 'gzip-js', 'lz64'] : ['gzip', 'gzip-js'],
    sessionRecording: sessionRecordingConfig(options.replay),
    captureDeadClicks: false,
    capturePerformance: capturePerformanceConfig(options.replay),
    autocapture_opt_out: false,
    autocaptureExceptions: false,
    heatmaps: false,
    elementsChainAsString: true,
    surveys: options.surveys,
    siteApps: [],
    defaultIdentifiedOnly: true,
    flagsPersistenceDefault: false,
  };
}

/** Payloads go out as JSON-encoded strings, which the SDKs parse; a stored non-string is encoded once. */
function encodePayload(payload: JsonValue): string | null {
  if (payload === null || payload === undefined) return null;
  return typeof payload === 'string' ? payload : JSON.stringify(payload);
}

export interface FlagsBody {
  flags: Map<string, FlagEvaluation>;
  errorsWhileComputingFlags: boolean;
  quotaLimited: boolean;
  requestId: string;
  flagsById: ReadonlyMap<string, FeatureFlag>;
  surveys: boolean;
  endpoint: 'decide' | 'flags';
  /** The project's replay settings, for its `sessionRecording` and `capturePerformance` config fields. */
  replaySettings?: SessionReplaySettings | undefined;
}

/**
 * The JSON text of one flag's parts that depend only on its definition, built once per definitions object:
 * serializing fifty response objects per request was a fifth of decide's CPU (bench/decide.ts).
 */
interface FlagText {
  /** `"<key>"` */
  readonly key: string;
  /** `"<key>":{"key":"<key>","enabled":` (v4) */
  readonly head: string;
  /** `,"metadata":{"id":…,"version":…,"description":…,"payload":` (v4) */
  readonly metadata: string;
  /**
   * Array-index keys (`"7"`) come first in a JS object, in numeric order; the object-built body had them
   * there, so the text keeps that order. -1 for every other key.
   */
  readonly index: number;
  /** Encoded payloads and variants by value (the values come from the definition, so the maps stay small). */
  readonly payloads: Map<JsonValue, string>;
  readonly values: Map<string, string>;
  /**
   * v4 members as UTF-8, by outcome: the evaluator shares one frozen reason object per (code, condition), and
   * with the variant (or the enabled state) that fixes every byte of the member, payload included.
   */
  readonly members: Map<FlagEvaluation['reason'], Map<string, Buffer>>;
}

// Per `flagsById` (decide keeps one per definitions object); a new definitions object starts afresh.
const flagTexts = new WeakMap<ReadonlyMap<string, FeatureFlag>, Map<string, FlagText>>();
// Encoded texts kept per flag: enough for every variant and payload of a flag, bounded for odd callers.
const MAX_TEXTS = 64;

function flagText(flagsById: ReadonlyMap<string, FeatureFlag>, key: string): FlagText {
  let texts = flagTexts.get(flagsById);
  if (texts === undefined) {
    texts = new Map();
    flagTexts.set(flagsById, texts);
  }
  let text = texts.get(key);
  if (text === undefined) {
    const definition = flagsById.get(key);
    const keyJson = JSON.stringify(key);
    const id = JSON.stringify(definition?.id ?? null);
    const version = JSON.stringify(definition?.version ?? 1);
    const description = JSON.stringify(definition?.name ? definition.name : null);
    text = {
      key: keyJson,
      head: `${keyJson}:{"key":${keyJson},"enabled":`,
      metadata: `,"metadata":{"id":${id},"version":${version},"description":${description},"payload":`,
      index: arrayIndex(key),
      payloads: new Map(),
      values: new Map(),
      members: new Map(),
    };
    texts.set(key, text);
  }
  return text;
}

const ARRAY_INDEX = /^(?:0|[1-9]\d*)$/;

/** The key's numeric value when JS orders it as an array index (0 … 2^32 - 2), else -1. */
function arrayIndex(key: string): number {
  if (!ARRAY_INDEX.test(key)) return -1;
  const value = Number(key);
  return value < 2 ** 32 - 1 ? value : -1;
}

/** The payload as a JSON value: the encoded string, or `null`. */
function payloadJson(text: FlagText, payload: JsonValue): string {
  let json = text.payloads.get(payload);
  if (json === undefined) {
    const encoded = encodePayload(payload);
    json = encoded === null ? 'null' : JSON.stringify(encoded);
    if (text.payloads.size < MAX_TEXTS) text.payloads.set(payload, json);
  }
  return json;
}

/** A variant as JSON (`"<variant>"`). */
function variantJson(text: FlagText, variant: string): string {
  let json = text.values.get(variant);
  if (json === undefined) {
    json = JSON.stringify(variant);
    if (text.values.size < MAX_TEXTS) text.values.set(variant, json);
  }
  return json;
}

/** The flag's v1–v3 value (`flagValue`: the variant, `true` or `false`) as JSON. */
function valueJson(text: FlagText, flag: FlagEvaluation): string {
  if (!flag.enabled) return 'false';
  return flag.variant === null ? 'true' : variantJson(text, flag.variant);
}

// Reasons as JSON by code and condition index (a few dozen in all); the description is compared too, so a
// cached text is only reused for an equal reason.
const reasonTexts = new Map<string, Array<{ description: string | null; json: string }>>();
const MAX_CONDITION_INDEX = 256;

function reasonJson(reason: FlagEvaluation['reason']): string {
  const slot = reason.condition_index === null ? 0 : reason.condition_index + 1;
  let byIndex = reasonTexts.get(reason.code);
  const cached = byIndex?.[slot];
  if (cached !== undefined && cached.description === reason.description) return cached.json;
  const json = JSON.stringify(reason);
  if (slot <= MAX_CONDITION_INDEX && Number.isInteger(slot)) {
    if (byIndex === undefined) {
      byIndex = [];
      reasonTexts.set(reason.code, byIndex);
    }
    byIndex[slot] = { description: reason.description, json };
  }
  return json;
}

/**
 * Collects the `"key":value` members of one object. A JS object lists array-index keys (`"7"`) first, in
 * numeric order, and the object-built body was serialized that way; such keys are rare, so only then are
 * the members reordered.
 */
class Members<T> {
  private readonly members: T[] = [];
  /** Positions and indexes of array-index members; null while there is none. */
  private indexed: Array<{ position: number; index: number }> | null = null;

  add(text: FlagText, member: T): void {
    if (text.index !== -1) (this.indexed ??= []).push({ position: this.members.length, index: text.index });
    this.members.push(member);
  }

  /** The members in serialization order. */
  ordered(): T[] {
    if (this.indexed === null) return this.members;
    const first = new Set(this.indexed.map((entry) => entry.position));
    const ordered = this.indexed.sort((a, b) => a.index - b.index).map((entry) => this.members[entry.position] as T);
    this.members.forEach((member, position) => {
      if (!first.has(position)) ordered.push(member);
    });
    return ordered;
  }
}

function objectJson(members: Members<string>): string {
  return `{${members.ordered().join(',')}}`;
}

/** The v4 member of one flag: `"<key>":{"key":…,"enabled":…,"variant":…,"reason":…,"metadata":{…}}`. */
function v4Member(text: FlagText, flag: FlagEvaluation): string {
  const payload = flag.enabled ? payloadJson(text, flag.payload) : 'null';
  return flag.failed
    ? `${text.head}false,"variant":null,"failed":true,"reason":${JSON.stringify(flag.reason)}${text.metadata}${payload}}}`
    : `${text.head}${flag.enabled},"variant":${flag.variant === null ? 'null' : variantJson(text, flag.variant)},"reason":${reasonJson(flag.reason)}${text.metadata}${payload}}}`;
}

/** The same member as bytes, from the flag's cache when its reason is a shared one (every computed flag's is). */
function v4MemberBytes(text: FlagText, flag: FlagEvaluation): Buffer {
  if (flag.failed || !Object.isFrozen(flag.reason)) return Buffer.from(v4Member(text, flag));
  let byOutcome = text.members.get(flag.reason);
  if (byOutcome === undefined) {
    byOutcome = new Map();
    if (text.members.size < MAX_TEXTS) text.members.set(flag.reason, byOutcome);
  }
  const outcome = flag.variant ?? String(flag.enabled);
  let bytes = byOutcome.get(outcome);
  if (bytes === undefined) {
    bytes = Buffer.from(v4Member(text, flag));
    if (byOutcome.size < MAX_TEXTS) byOutcome.set(outcome, bytes);
  }
  return bytes;
}

const COMMA = Buffer.from(',');

// The config fields as JSON text without the closing brace, per `surveys` and endpoint.
const configTexts = new Map<string, string>();

function configPrefix(surveys: boolean, endpoint: 'decide' | 'flags'): string {
  const cacheKey = `${endpoint}:${surveys}`;
  let text = configTexts.get(cacheKey);
  if (text === undefined) {
    text = JSON.stringify(configFields({ surveys, endpoint })).slice(0, -1);
    configTexts.set(cacheKey, text);
  }
  return text;
}

// Per project (one settings object per definitions load), the config text by endpoint and `surveys`.
const projectConfigTexts = new WeakMap<SessionReplaySettings, Map<string, string>>();

/** The config fields as JSON text without the closing brace; a project's replay settings make them its own. */
function configText(body: FlagsBody): string {
  const replay = body.replaySettings;
  if (replay === undefined) return configPrefix(body.surveys, body.endpoint);
  let texts = projectConfigTexts.get(replay);
  if (texts === undefined) {
    texts = new Map();
    projectConfigTexts.set(replay, texts);
  }
  const key = `${body.endpoint}:${body.surveys}`;
  let text = texts.get(key);
  if (text === undefined) {
    text = JSON.stringify(configFields({ surveys: body.surveys, endpoint: body.endpoint, replay })).slice(0, -1);
    texts.set(key, text);
  }
  return text;
}

/**
 * The response body as UTF-8 JSON, written directly rather than built as objects and serialized: the
 * definition-only parts of each flag are cached (`FlagText`), and v4 members (what the SDKs' `/flags` calls
 * get) are cached as bytes per outcome, so a request copies buffers instead of joining and encoding ≈ 11 KB of
 * text (the encoding alone was a tenth of a request's CPU). Parses to the object PostHog's decide answers
 * (services/decide/test/responses.test.ts holds the object-built reference).
 */
export function renderBody(shaping: Shaping, body: FlagsBody): Buffer {
  // The config fields (or nothing), then the members in the order the object-built body had them.
  let out = shaping.config ? `${configText(body)},` : '{';
  const { flagsById } = body;
  switch (shaping.shape) {
    case 'v1': {
      const keys: string[] = [];
      for (const flag of body.flags.values()) {
        if (!flag.failed && flag.enabled) keys.push(flagText(flagsById, flag.key).key);
      }
      out += `"featureFlags":[${keys.join(',')}]`;
      break;
    }
    case 'v2':
    case 'v3': {
      const all = shaping.shape === 'v3';
      const values = new Members<string>();
      const payloads = new Members<string>();
      for (const flag of body.flags.values()) {
        if (flag.failed || (!all && !flag.enabled)) continue;
        const text = flagText(flagsById, flag.key);
        values.add(text, `${text.key}:${valueJson(text, flag)}`);
        if (all && flag.enabled) {
          const payload = payloadJson(text, flag.payload);
          if (payload !== 'null') payloads.add(text, `${text.key}:${payload}`);
        }
      }
      out += `"featureFlags":${objectJson(values)}`;
      if (all) out += `,"featureFlagPayloads":${objectJson(payloads)},"errorsWhileComputingFlags":${body.errorsWhileComputingFlags}`;
      break;
    }
    case 'v4': {
      const flags = new Members<Buffer>();
      for (const flag of body.flags.values()) {
        const text = flagText(flagsById, flag.key);
        flags.add(text, v4MemberBytes(text, flag));
      }
      const parts: Buffer[] = [Buffer.from(`${out}"flags":{`)];
      for (const member of flags.ordered()) {
        if (parts.length > 1) parts.push(COMMA);
        parts.push(member);
      }
      parts.push(Buffer.from(`},"errorsWhileComputingFlags":${body.errorsWhileComputingFlags}${tail(body)}`));
      return Buffer.concat(parts);
    }
  }
  return Buffer.from(`${out}${tail(body)}`);
}

/** `quotaLimited` when limited, then the request id, and the closing brace. */
function tail(body: FlagsBody): string {
  return `${body.quotaLimited ? ',"quotaLimited":["feature_flags"]' : ''},"requestId":${JSON.stringify(body.requestId)}}`;
}
