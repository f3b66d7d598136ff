/**
 * Response bodies per endpoint and version (reference/posthog-flags.md §4.3; SPEC §5 for `v=3`).
 */
import { flagValue, type FeatureFlag, type FlagEvaluation, type JsonValue } from '@plover/flags';

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
 * `lz64` among the compressions as the seed and Django do; `/flags` answers like Rust.
 */
export function configFields(options: { surveys: boolean; endpoint?: 'decide' | 'flags' }): Record<string, unknown> {
  return {
    config: { enable_collect_everything: true },
    toolbarParams: {},
    isAuthenticated: false,
    supportedCompression: options.endpoint === 'decide' ? ['gzip', 'gzip-js', 'lz64'] : ['gzip', 'gzip-js'],
    sessionRecording: false,
    captureDeadClicks: false,
    capturePerformance: false,
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

/** Payloads go out as JSON-encoded strings (posthog-sdks.md §3.3); a stored non-string is encoded once. */
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
}

export function renderBody(shaping: Shaping, body: FlagsBody): Record<string, unknown> {
  const out: Record<string, unknown> = shaping.config ? configFields({ surveys: body.surveys, endpoint: body.endpoint }) : {};
  const computed = [...body.flags.values()];
  const ok = computed.filter((flag) => !flag.failed);
  switch (shaping.shape) {
    case 'v1':
      out.featureFlags = ok.filter((flag) => flag.enabled).map((flag) => flag.key);
      break;
    case 'v2':
      out.featureFlags = Object.fromEntries(ok.filter((flag) => flag.enabled).map((flag) => [flag.key, flagValue(flag)]));
      break;
    case 'v3': {
      out.featureFlags = Object.fromEntries(ok.map((flag) => [flag.key, flagValue(flag)]));
      const payloads: Record<string, string> = {};
      for (const flag of ok) {
        const payload = flag.enabled ? encodePayload(flag.payload) : null;
        if (payload !== null) payloads[flag.key] = payload;
      }
      out.featureFlagPayloads = payloads;
      out.errorsWhileComputingFlags = body.errorsWhileComputingFlags;
      break;
    }
    case 'v4': {
      const flags: Record<string, unknown> = {};
      for (const flag of computed) {
        const definition = body.flagsById.get(flag.key);
        const metadata = {
          id: definition?.id ?? null,
          version: definition?.version ?? 1,
          description: definition?.name ? definition.name : null,
          payload: flag.enabled ? encodePayload(flag.payload) : null,
        };
        flags[flag.key] = flag.failed
          ? { key: flag.key, enabled: false, variant: null, failed: true, reason: flag.reason, metadata }
          : { key: flag.key, enabled: flag.enabled, variant: flag.variant, reason: flag.reason, metadata };
      }
      out.flags = flags;
      out.errorsWhileComputingFlags = body.errorsWhileComputingFlags;
      break;
    }
  }
  if (body.quotaLimited) out.quotaLimited = ['feature_flags'];
  out.requestId = body.requestId;
  return out;
}
