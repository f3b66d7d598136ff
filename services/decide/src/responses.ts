/**
 * Response bodies per endpoint and version (docs/decide.md#versions; Django `posthog/api/decide.py` and Rust
 * `rust/feature-flags/src/api/types.rs`).
 */
import type { SessionReplaySettings } from '@plover/accounts';
import { type FeatureFlag, type FlagEvaluation, type JsonValue } from '@plover/flags';
import { capturePerformanceConfig, logsConfig, sessionRecordingConfig } from './session-recording';

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
    logs: logsConfig(options.replay),
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
function payloadJson(payload: JsonValue): string {
  if (payload === null || payload === undefined) return 'null';
  return JSON.stringify(typeof payload === 'string' ? payload : JSON.stringify(payload));
}

const ARRAY_INDEX = /^(?:0|[1-9]\d*)$/;

/** The key's numeric value when JS orders it as an array index (0 … 2^32 - 2), else -1. */
function arrayIndex(key: string): number {
  if (!ARRAY_INDEX.test(key)) return -1;
  const value = Number(key);
  return value < 2 ** 32 - 1 ? value : -1;
}

/** Encoded v4 members kept per flag: more than a flag's conditions times its variants, bounded for odd callers. */
const MAX_MEMBERS = 64;

/** A v4 member as bytes, with every input its text was made of. */
interface V4Member {
  enabled: boolean;
  variant: string | null;
  reason: FlagEvaluation['reason'];
  payload: JsonValue;
  bytes: Buffer;
}

function sameOutcome(member: V4Member, flag: FlagEvaluation): boolean {
  const { reason } = member;
  return (
    member.enabled === flag.enabled &&
    member.variant === flag.variant &&
    member.payload === flag.payload &&
    reason.code === flag.reason.code &&
    reason.condition_index === flag.reason.condition_index &&
    reason.description === flag.reason.description
  );
}

/**
 * One flag's JSON, rendered from its definition when the project's definitions are loaded and dropped with
 * them (`DefinitionsCache`): its key, its metadata and the JSON of its variants and payloads are written once,
 * not per request. The v4 member of each outcome (enabled, variant, reason) is kept as UTF-8 bytes the first
 * time it is written, so a request copies buffers instead of joining and encoding ≈ 11 KB of text.
 */
export class RenderedFlag {
  /** `"<key>"` */
  readonly keyJson: string;
  /**
   * Array-index keys (`"7"`) come first in a JS object, in numeric order; the object-built body had them
   * there, so the text keeps that order. -1 for every other key.
   */
  readonly arrayIndex: number;
  /** `"<key>":{"key":"<key>","enabled":` */
  private readonly v4Head: string;
  /** `,"metadata":{"id":…,"version":…,"description":…,"payload":` */
  private readonly v4Metadata: string;
  private readonly variants = new Map<string, string>();
  /** By the payload as the definition holds it, which is what the evaluator hands back. */
  private readonly payloads = new Map<JsonValue, string>();
  /** By value (the variant, `true` or `false`), the members written so far with every input they were made of. */
  private readonly v4Members = new Map<string, V4Member[]>();
  private v4MemberCount = 0;

  constructor(key: string, definition: FeatureFlag | undefined) {
    this.keyJson = JSON.stringify(key);
    this.arrayIndex = arrayIndex(key);
    this.v4Head = `${this.keyJson}:{"key":${this.keyJson},"enabled":`;
    const id = JSON.stringify(definition?.id ?? null);
    const version = JSON.stringify(definition?.version ?? 1);
    const description = JSON.stringify(definition?.name ? definition.name : null);
    this.v4Metadata = `,"metadata":{"id":${id},"version":${version},"description":${description},"payload":`;
    for (const variant of definition?.filters.multivariate?.variants ?? []) this.variants.set(variant.key, JSON.stringify(variant.key));
    for (const payload of Object.values(definition?.filters.payloads ?? {})) this.payloads.set(payload, payloadJson(payload));
  }

  /** The payload as a JSON value: the encoded string, or `null`. */
  payloadJson(payload: JsonValue): string {
    return this.payloads.get(payload) ?? payloadJson(payload);
  }

  /** The flag's v1–v3 value (`flagValue`: the variant, `true` or `false`) as JSON. */
  valueJson(flag: FlagEvaluation): string {
    if (!flag.enabled) return 'false';
    return flag.variant === null ? 'true' : this.variantJson(flag.variant);
  }

  private variantJson(variant: string): string {
    return this.variants.get(variant) ?? JSON.stringify(variant);
  }

  /** `"<key>":{"key":…,"enabled":…,"variant":…,"reason":…,"metadata":{…}}` as UTF-8. */
  v4Member(flag: FlagEvaluation): Buffer {
    if (flag.failed) return Buffer.from(this.v4Text(flag));
    const { reason, enabled, variant, payload } = flag;
    const value = variant ?? (enabled ? 'true' : 'false');
    let members = this.v4Members.get(value);
    const kept = members?.find((member) => sameOutcome(member, flag));
    if (kept !== undefined) return kept.bytes;
    const bytes = Buffer.from(this.v4Text(flag));
    if (this.v4MemberCount < MAX_MEMBERS) {
      if (members === undefined) {
        members = [];
        this.v4Members.set(value, members);
      }
      // A copy of the reason: the member must not change with an object the caller may reuse.
      members.push({ enabled, variant, reason: { ...reason }, payload, bytes });
      this.v4MemberCount++;
    }
    return bytes;
  }

  private v4Text(flag: FlagEvaluation): string {
    const payload = flag.enabled ? this.payloadJson(flag.payload) : 'null';
    const variant = flag.variant === null ? 'null' : this.variantJson(flag.variant);
    const failed = flag.failed ? ',"failed":true' : '';
    return `${this.v4Head}${flag.enabled},"variant":${variant}${failed},"reason":${JSON.stringify(flag.reason)}${this.v4Metadata}${payload}}}`;
  }
}

/** What a project's `/decide` and `/flags` answers are written from, rendered with its definitions and dropped with them. */
export interface RenderedDefinitions {
  /** The active flags, by key. */
  flags: ReadonlyMap<string, RenderedFlag>;
  /** The config fields as JSON text without the closing brace, by endpoint. */
  config: Readonly<Record<'decide' | 'flags', string>>;
}

export function renderDefinitions(definitions: {
  flags: readonly FeatureFlag[];
  hasActiveSurveys: boolean;
  replaySettings: SessionReplaySettings | undefined;
}): RenderedDefinitions {
  const config = (endpoint: 'decide' | 'flags') =>
    JSON.stringify(configFields({ surveys: definitions.hasActiveSurveys, endpoint, replay: definitions.replaySettings })).slice(0, -1);
  return {
    flags: new Map(definitions.flags.filter((flag) => flag.active).map((flag) => [flag.key, new RenderedFlag(flag.key, flag)])),
    config: { decide: config('decide'), flags: config('flags') },
  };
}

export interface FlagsBody {
  flags: Map<string, FlagEvaluation>;
  errorsWhileComputingFlags: boolean;
  quotaLimited: boolean;
  requestId: string;
  /** The project's rendered definitions; a flag not among them is rendered for this answer alone. */
  rendered: RenderedDefinitions;
  endpoint: 'decide' | 'flags';
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

  add(flag: RenderedFlag, member: T): void {
    if (flag.arrayIndex !== -1) (this.indexed ??= []).push({ position: this.members.length, index: flag.arrayIndex });
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

const COMMA = Buffer.from(',');

/**
 * The response body as UTF-8 JSON, written from the rendered flags rather than built as objects and serialized
 * (serializing fifty response objects per request was a fifth of decide's CPU, bench/decide.ts). Parses to the
 * object PostHog's decide answers (services/decide/test/responses.test.ts holds the object-built reference).
 */
export function renderBody(shaping: Shaping, body: FlagsBody): Buffer {
  // The config fields (or nothing), then the members in the order the object-built body had them.
  let out = shaping.config ? `${body.rendered.config[body.endpoint]},` : '{';
  switch (shaping.shape) {
    case 'v1': {
      const keys: string[] = [];
      for (const flag of body.flags.values()) {
        if (!flag.failed && flag.enabled) keys.push(renderedFlag(body, flag.key).keyJson);
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
        const rendered = renderedFlag(body, flag.key);
        values.add(rendered, `${rendered.keyJson}:${rendered.valueJson(flag)}`);
        if (all && flag.enabled) {
          const payload = rendered.payloadJson(flag.payload);
          if (payload !== 'null') payloads.add(rendered, `${rendered.keyJson}:${payload}`);
        }
      }
      out += `"featureFlags":${objectJson(values)}`;
      if (all) out += `,"featureFlagPayloads":${objectJson(payloads)},"errorsWhileComputingFlags":${body.errorsWhileComputingFlags}`;
      break;
    }
    case 'v4': {
      const flags = new Members<Buffer>();
      for (const flag of body.flags.values()) {
        const rendered = renderedFlag(body, flag.key);
        flags.add(rendered, rendered.v4Member(flag));
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

function renderedFlag(body: FlagsBody, key: string): RenderedFlag {
  return body.rendered.flags.get(key) ?? new RenderedFlag(key, undefined);
}

/** `quotaLimited` when limited, then the request id, and the closing brace. */
function tail(body: FlagsBody): string {
  return `${body.quotaLimited ? ',"quotaLimited":["feature_flags"]' : ''},"requestId":${JSON.stringify(body.requestId)}}`;
}
