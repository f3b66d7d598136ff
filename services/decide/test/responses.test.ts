import { flagValue, type EvaluatedFlag, type FeatureFlag, type FlagEvaluation, type JsonValue, type MatchReasonCode } from '@plover/flags';
import { configFields, renderBody as renderBytes, renderDefinitions, type FlagsBody, type Shaping } from '../src/responses';
import { seededRandom } from '../../../test/support/random';

/** A body and the definitions it was rendered from, which the reference reads the metadata and config from. */
type Case = FlagsBody & { flagsById: ReadonlyMap<string, FeatureFlag>; surveys: boolean };

function rendered(flagsById: ReadonlyMap<string, FeatureFlag>, surveys: boolean): FlagsBody['rendered'] {
  return renderDefinitions({ flags: [...flagsById.values()], hasActiveSurveys: surveys, replaySettings: undefined });
}

/** The answer as text (renderBody writes UTF-8 bytes). */
const renderBody = (shaping: Shaping, body: FlagsBody): string => renderBytes(shaping, body).toString('utf8');

/**
 * The object-built body that `renderBody` used to return (serialized with JSON.stringify), kept as the
 * reference: the JSON text written directly must be byte for byte what this gives.
 */
function referenceBody(shaping: Shaping, body: Case): Record<string, unknown> {
  const encodePayload = (payload: JsonValue): string | null =>
    payload === null || payload === undefined ? null : typeof payload === 'string' ? payload : JSON.stringify(payload);
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

// Keys that stress escaping and JS object key order (array-index keys are listed first by JS objects).
const KEYS = [
  'plain',
  'with-dash_and.dot',
  'quote"d',
  'back\\slash',
  'ünïcödé',
  '日本語',
  '😀 emoji',
  'line\nbreak',
  '\u2028separator',
  'tab\there',
  '42',
  '0',
  '007',
  '1e3',
  '-1',
  '4294967294',
  '4294967295',
  'constructor',
  'toString',
  '',
];
const NAMES: Array<string | null | undefined> = [null, undefined, '', 'A description', 'with "quotes" and \\ and ünï', '😀'];
const PAYLOADS: JsonValue[] = [null, 'string payload', '{"a":1}', '', 'ünï "q"', 0, 12.5, true, false, { nested: ['x', 1, null] }, ['a'], {}];
const VARIANTS = ['control', 'test', 'ünï "v"', '42'];
const CODES: MatchReasonCode[] = [
  'condition_match',
  'no_condition_match',
  'out_of_rollout_bound',
  'no_group_type',
  'super_condition_value',
  'holdout_condition_value',
];
const FAILURES = ['timeout', 'database_error', 'dependency_cycle_flag', 'cohort_not_found'];
const SHAPINGS: Shaping[] = (['v1', 'v2', 'v3', 'v4'] as const).flatMap((shape) => [
  { shape, config: false },
  { shape, config: true },
]);

function pick<T>(next: () => number, values: readonly T[]): T {
  return values[Math.floor(next() * values.length)]!;
}

function generateBody(next: () => number): Case {
  const count = Math.floor(next() * 8);
  const keys = [...new Set(Array.from({ length: count }, () => pick(next, KEYS)))];
  const flags = new Map<string, FlagEvaluation>();
  const flagsById = new Map<string, FeatureFlag>();
  for (const key of keys) {
    const roll = next();
    if (roll < 0.15) {
      flags.set(key, {
        key,
        failed: true,
        enabled: false,
        variant: null,
        reason: { code: pick(next, FAILURES), condition_index: null, description: null },
        payload: null,
      });
    } else {
      const enabled = roll < 0.7;
      const code = pick(next, CODES);
      const conditionIndex = next() < 0.3 ? null : Math.floor(next() * 3);
      flags.set(key, {
        key,
        failed: false,
        enabled,
        variant: enabled && next() < 0.4 ? pick(next, VARIANTS) : null,
        reason: { code, condition_index: conditionIndex, description: next() < 0.9 ? `Reason for ${code} ${conditionIndex}` : 'Other "text"' },
        payload: enabled ? pick(next, PAYLOADS) : null,
      });
    }
    // Some flags have no definition (the metadata then falls back to null/1).
    if (next() < 0.9) {
      flagsById.set(key, {
        id: Math.floor(next() * 1000),
        key,
        name: pick(next, NAMES),
        active: true,
        filters: {},
        ...(next() < 0.8 ? { version: next() < 0.2 ? null : Math.floor(next() * 10) } : {}),
      });
    }
  }
  const errorsWhileComputingFlags = next() < 0.3;
  const quotaLimited = next() < 0.2;
  const requestId = next() < 0.9 ? 'b3c1f4de-6e1a-4f5e-9d55-0a3b2a1f9e11' : 'odd "id" ü';
  const surveys = next() < 0.5;
  return {
    flags,
    errorsWhileComputingFlags,
    quotaLimited,
    requestId,
    flagsById,
    rendered: rendered(flagsById, surveys),
    surveys,
    endpoint: next() < 0.5 ? 'decide' : 'flags',
  };
}

describe('renderBody', () => {
  it('writes exactly the JSON of the object-built body, for every shape', () => {
    const next = seededRandom(20240615);
    for (let i = 0; i < 3000; i += 1) {
      const body = generateBody(next);
      for (const shaping of SHAPINGS) {
        const text = renderBody(shaping, body);
        expect(text).toBe(JSON.stringify(referenceBody(shaping, body)));
      }
    }
  });

  it('writes the v4 members kept per outcome exactly, request after request on one set of rendered flags', () => {
    // As the evaluator gives them: one frozen reason per (code, condition), the payload fixed by the variant.
    const reasons = new Map<string, EvaluatedFlag['reason']>();
    const sharedReason = (code: MatchReasonCode, conditionIndex: number | null) => {
      const key = `${code}:${conditionIndex}`;
      let reason = reasons.get(key);
      if (reason === undefined) {
        reason = Object.freeze({ code, condition_index: conditionIndex, description: `Reason for ${code} ${conditionIndex}` });
        reasons.set(key, reason);
      }
      return reason;
    };
    const next = seededRandom(99);
    const { flagsById, rendered: renderedDefinitions, surveys } = generateBody(next);
    const payloadOf = new Map(KEYS.map((key) => [key, new Map([...VARIANTS, 'true'].map((variant) => [variant, pick(next, PAYLOADS)]))]));
    for (let i = 0; i < 2000; i += 1) {
      const flags = new Map<string, FlagEvaluation>();
      for (const key of KEYS) {
        if (next() < 0.3) continue;
        const enabled = next() < 0.6;
        const variant = enabled && next() < 0.5 ? pick(next, VARIANTS) : null;
        const payload = enabled ? (payloadOf.get(key)!.get(variant ?? 'true') ?? null) : null;
        flags.set(key, {
          key,
          failed: false,
          enabled,
          variant,
          reason: sharedReason(pick(next, CODES), next() < 0.3 ? null : Math.floor(next() * 3)),
          payload,
        });
      }
      const body: Case = {
        flags,
        errorsWhileComputingFlags: false,
        quotaLimited: false,
        requestId: `r${i}`,
        flagsById,
        rendered: renderedDefinitions,
        surveys,
        endpoint: 'flags',
      };
      for (const config of [false, true]) {
        expect(renderBody({ shape: 'v4', config }, body)).toBe(JSON.stringify(referenceBody({ shape: 'v4', config }, body)));
      }
    }
  });

  it('gives the same text for the same rendered flags on repeated use, and the new text for new definitions', () => {
    const next = seededRandom(7);
    const body = generateBody(next);
    const first = SHAPINGS.map((shaping) => renderBody(shaping, body));
    expect(SHAPINGS.map((shaping) => renderBody(shaping, body))).toEqual(first);
    // A changed definition is rendered again with the definitions it came with.
    const renamed = new Map([...body.flagsById].map(([key, flag]) => [key, { ...flag, name: 'renamed', version: 99 }]));
    const changed = { ...body, flagsById: renamed, rendered: rendered(renamed, body.surveys) };
    for (const shaping of SHAPINGS) expect(renderBody(shaping, changed)).toBe(JSON.stringify(referenceBody(shaping, changed)));
  });

  it('does not answer from a kept member when the same outcome comes with another payload or reason text', () => {
    const definition: FeatureFlag = { id: 1, key: 'f', active: true, filters: { payloads: { true: '{"a":1}' } } };
    const flagsById = new Map([['f', definition]]);
    const reason = { code: 'condition_match' as const, condition_index: 0, description: 'Matched condition set 1' };
    const answer = (flag: FlagEvaluation) => {
      const body: Case = {
        flags: new Map([['f', flag]]),
        errorsWhileComputingFlags: false,
        quotaLimited: false,
        requestId: 'r',
        flagsById,
        rendered: rendered(flagsById, false),
        surveys: false,
        endpoint: 'flags',
      };
      expect(renderBody({ shape: 'v4', config: false }, body)).toBe(JSON.stringify(referenceBody({ shape: 'v4', config: false }, body)));
    };
    answer({ key: 'f', failed: false, enabled: true, variant: null, reason, payload: '{"a":1}' });
    answer({ key: 'f', failed: false, enabled: true, variant: null, reason, payload: { b: 2 } });
    // The same reason object, changed by its owner after the first answer.
    reason.description = 'Another description';
    answer({ key: 'f', failed: false, enabled: true, variant: null, reason, payload: '{"a":1}' });
    answer({ key: 'f', failed: false, enabled: false, variant: null, reason, payload: null });
  });

  it('renders an empty answer (quota limited, no definitions)', () => {
    const body: FlagsBody = {
      flags: new Map(),
      errorsWhileComputingFlags: false,
      quotaLimited: true,
      requestId: 'r',
      rendered: rendered(new Map(), false),
      endpoint: 'flags',
    };
    expect(JSON.parse(renderBody({ shape: 'v4', config: false }, body))).toEqual({
      flags: {},
      errorsWhileComputingFlags: false,
      quotaLimited: ['feature_flags'],
      requestId: 'r',
    });
    expect(JSON.parse(renderBody({ shape: 'v1', config: false }, body))).toEqual({ featureFlags: [], quotaLimited: ['feature_flags'], requestId: 'r' });
  });

  it('keeps a flag keyed "__proto__" as an ordinary key', () => {
    const reason = { code: 'condition_match' as const, condition_index: 0, description: 'Matched condition set 1' };
    const body: FlagsBody = {
      flags: new Map([['__proto__', { key: '__proto__', failed: false, enabled: true, variant: null, reason, payload: 'p' }]]),
      errorsWhileComputingFlags: false,
      quotaLimited: false,
      requestId: 'r',
      rendered: rendered(new Map([['__proto__', { id: 1, key: '__proto__', active: true, filters: {} }]]), false),
      endpoint: 'flags',
    };
    const v4 = JSON.parse(renderBody({ shape: 'v4', config: false }, body)) as { flags: Record<string, unknown> };
    expect(Object.hasOwn(v4.flags, '__proto__')).toBe(true);
    const v3 = JSON.parse(renderBody({ shape: 'v3', config: false }, body)) as { featureFlags: object; featureFlagPayloads: object };
    expect([Object.hasOwn(v3.featureFlags, '__proto__'), Object.hasOwn(v3.featureFlagPayloads, '__proto__')]).toEqual([true, true]);
  });
});
