/**
 * Fuzz cases per public route: a valid request of the route's kind, its document mutated, then encoded the
 * ways SDKs encode (JSON, gzip by hint or by magic bytes, base64, lz-string, urlencoded forms, GET `?data=`)
 * and sometimes damaged after encoding.
 */
import { gzipSync } from 'node:zlib';
import { compressToBase64 } from 'lz-string';
import { valueFor, type Schema } from './schema-values';
import { chance, damageBytes, deepJson, int, jsonValue, mutateDocument, nastyNumber, nastyString, pick, type Random } from './values';

export interface FuzzRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE' | 'OPTIONS';
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

export interface Credentials {
  token: string;
  personalKey: string;
  projectId: number;
  /** Valid personal API keys the management cases use (default: personalKey). */
  keys?: string[];
  /** Ids of existing objects, for the management cases' paths. */
  ids?: string[];
}

export interface FuzzRoute {
  name: string;
  generate(random: Random, credentials: Credentials): FuzzRequest;
}

function sdkEvent(random: Random, token: string): Record<string, unknown> {
  return {
    event: pick(random, ['$pageview', '$identify', '$groupidentify', '$group_identify', '$create_alias', '$set', 'signed up']),
    distinct_id: pick(random, ['alice', 'bob', `user-${int(random, 50)}`]),
    api_key: token,
    uuid: '0190a4c2-7f3e-7b8c-9d1e-2f3a4b5c6d7e',
    timestamp: new Date(Date.UTC(2025, 5, 1, 12)).toISOString(),
    properties: {
      $current_url: 'https://example.com/',
      $session_id: 'session-1',
      $set: { email: 'alice@example.com' },
      $group_type: 'company',
      $group_key: 'acme',
      $group_set: { name: 'Acme' },
      $anon_distinct_id: 'anon-1',
      alias: 'alias-1',
      $elements_chain: 'a.link:href="/x"nth-child="1"',
    },
  };
}

function captureDocument(random: Random, token: string): unknown {
  const event = () => sdkEvent(random, token);
  switch (int(random, 4)) {
    case 0:
      return event();
    case 1:
      return [event(), event()];
    case 2:
      return { api_key: token, batch: [event(), event()], sent_at: new Date().toISOString(), historical_migration: chance(random, 0.2) };
    default:
      return { ...event(), properties: { ...(event().properties as object), deep: JSON.parse(deepJson(pick(random, [10, 64, 200]))) } };
  }
}

/** The document as bytes, in one of the encodings SDKs use, with the path's query and headers to match. */
function encode(random: Random, path: string, text: string): FuzzRequest {
  const raw = Buffer.from(text, 'utf8');
  let request: FuzzRequest;
  switch (int(random, 8)) {
    case 0:
      request = { method: 'POST', path, headers: { 'content-type': 'application/json' }, body: raw };
      break;
    case 1:
      request = { method: 'POST', path: `${path}?compression=gzip-js`, headers: { 'content-type': 'text/plain' }, body: gzipSync(raw) };
      break;
    case 2:
      request = { method: 'POST', path, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync(raw) };
      break;
    case 3:
      request = { method: 'POST', path, headers: { 'content-type': 'text/plain' }, body: Buffer.from(raw.toString('base64')) };
      break;
    case 4: {
      const form = new URLSearchParams({ data: compressToBase64(text), compression: 'lz64' });
      request = { method: 'POST', path, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: Buffer.from(form.toString()) };
      break;
    }
    case 5: {
      const form = new URLSearchParams({ data: raw.toString('base64') });
      request = {
        method: 'POST',
        path: `${path}?ip=1&_=${Date.now()}&ver=1.0.0`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: Buffer.from(form.toString()),
      };
      break;
    }
    case 6:
      request = { method: 'GET', path: `${path}?data=${encodeURIComponent(raw.subarray(0, 4000).toString('base64'))}`, headers: {} };
      break;
    default:
      request = {
        method: 'POST',
        path,
        headers: { 'content-type': pick(random, ['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']) },
        body: raw,
      };
  }
  if (request.body && chance(random, 0.2)) request.body = damageBytes(random, request.body);
  return request;
}

/** A document's JSON text, sometimes broken or replaced by hostile text outright. */
function documentText(random: Random, document: unknown): string {
  switch (int(random, 10)) {
    case 0:
      return deepJson(pick(random, [1_000, 5_000, 20_000]), pick(random, ['[', '{']));
    case 1:
      return `{"a":[${' '.repeat(int(random, 20_000))}NaN x]}`;
    case 2:
      return JSON.stringify(document).replace(/"(?:alice|bob)"/, pick(random, ['NaN', 'Infinity', '-Infinity', '1e400', '"\\ud800"', '"\\u0000"']));
    default:
      return JSON.stringify(mutateDocument(random, document));
  }
}

const CAPTURE_PATHS = ['/i/v0/e/', '/e/', '/batch/', '/capture/', '/track/', '/engage/'];

const captureRoutes: FuzzRoute[] = CAPTURE_PATHS.map((path) => ({
  name: `capture ${path}`,
  generate: (random, { token }) => {
    if (chance(random, 0.03)) return { method: 'OPTIONS', path, headers: { origin: 'https://example.com', 'access-control-request-method': 'POST' } };
    return encode(random, path, documentText(random, captureDocument(random, chance(random, 0.9) ? token : nastyString(random))));
  },
}));

function decideDocument(random: Random, token: string): unknown {
  return {
    token: chance(random, 0.9) ? token : nastyString(random),
    distinct_id: pick(random, ['alice', 'bob', 42, nastyString(random)]),
    $anon_distinct_id: 'anon-1',
    groups: { company: 'acme' },
    person_properties: { email: 'alice@example.com', plan: 'pro' },
    group_properties: { company: { name: 'Acme' } },
    flag_keys_to_evaluate: ['beta'],
    disable_flags: false,
    geoip_disable: chance(random, 0.5),
  };
}

const decideRoutes: FuzzRoute[] = [
  {
    name: 'decide /decide/',
    generate: (random, { token }) =>
      encode(
        random,
        `/decide/?v=${pick(random, ['1', '2', '3', '4', '5', 'x', ''])}`.replace(/\?v=$/, ''),
        documentText(random, decideDocument(random, token)),
      ),
  },
  {
    name: 'decide /flags/',
    generate: (random, { token }) =>
      encode(
        random,
        `/flags/?v=${pick(random, ['1', '2', '3'])}&config=${pick(random, ['true', 'false', 'x'])}`,
        documentText(random, decideDocument(random, token)),
      ),
  },
  {
    name: 'decide /array/:token/config',
    generate: (random, { token }) => {
      const value = chance(random, 0.7) ? token : nastyString(random);
      return { method: 'GET', path: `/array/${segment(value)}/config${chance(random, 0.5) ? '.js' : ''}`, headers: {} };
    },
  },
  {
    name: 'decide local evaluation',
    generate: (random, { token, personalKey }) => {
      const query = new URLSearchParams({ token: chance(random, 0.8) ? token : nastyString(random), send_cohorts: pick(random, ['', 'true', 'x']) });
      const key = chance(random, 0.7) ? personalKey : nastyString(random);
      return {
        method: 'GET',
        path: `${pick(random, ['/api/feature_flag/local_evaluation/', '/flags/definitions'])}?${query.toString()}`,
        headers: { authorization: `Bearer ${key}` },
      };
    },
  },
  {
    name: 'decide surveys and early access features',
    generate: (random, { token }) => {
      const query = new URLSearchParams({ token: chance(random, 0.8) ? token : nastyString(random) });
      return { method: 'GET', path: `${pick(random, ['/api/surveys/', '/api/early_access_features/'])}?${query.toString()}`, headers: {} };
    },
  },
];

/** Query parameters the management routes read, with hostile values. */
const QUERY_KEYS = [
  'limit',
  'offset',
  'search',
  'properties',
  'distinct_id',
  'email',
  'format',
  'delete_events',
  'events',
  'actions',
  'date_from',
  'date_to',
  'interval',
  'breakdown',
  'breakdown_type',
  'display',
  'insight',
  'shown_as',
  'query',
  'order',
  'short_id',
  'pinned',
  'group_type_index',
  'event',
  'person_id',
  'before',
  'after',
  'refresh',
  'compare',
  'formula',
  'funnel_correlation_type',
];

function queryValue(random: Random): string {
  switch (int(random, 5)) {
    case 0:
      return JSON.stringify(jsonValue(random));
    case 1:
      return deepJson(pick(random, [100, 1_000]));
    case 2:
      return String(nastyNumber(random));
    case 3:
      return JSON.stringify([
        {
          key: nastyString(random),
          value: jsonValue(random, 1),
          operator: pick(random, ['exact', 'icontains', 'regex', 'is_set', 'gt', 'nope']),
          type: pick(random, ['person', 'event', 'cohort', 'x']),
        },
      ]);
    default:
      return nastyString(random);
  }
}

/** A path segment; one holding a lone surrogate goes out as the percent-encoded invalid UTF-8 it would be. */
function segment(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return encodeURIComponent(value.replace(/[\ud800-\udfff]/g, '')) + '%ED%A0%80';
  }
}

function pathId(random: Random): string {
  return segment(pick(random, ['1', '2', '0', '-1', '1e20', '9007199254740993', 'abcdefgh', '0190a4c2-7f3e-7b8c-9d1e-2f3a4b5c6d7e', nastyString(random)]));
}

/** A route of the management API's route table, as the fuzz suite calls it. */
export interface TableRoute {
  method: 'get' | 'post' | 'patch' | 'put' | 'delete';
  /** The whole path, with `:name` parameters (`:project_id` for the project). */
  path: string;
  body?: Schema;
  query?: Schema;
}

/**
 * Fuzz cases of every route of the management route table: a key from `credentials.keys` (valid keys of hostile
 * kinds: read-only, scoped to another project, without the route's scope) or now and then a forged one; the path's
 * ids real objects' (`credentials.ids`) or hostile; query parameters valid for the route's schema, hostile, or
 * unknown; a body valid for its schema (schema-values.ts), then mutated and encoded as documentText does.
 */
export function managementRoutes(table: readonly TableRoute[]): FuzzRoute[] {
  return table.map((route) => ({
    name: `management ${route.method.toUpperCase()} ${route.path}`,
    generate: (random, { personalKey, projectId, keys, ids }) => {
      const method = route.method.toUpperCase() as FuzzRequest['method'];
      const path = route.path.replace(/:([a-z_]+)/g, (_, name: string) => {
        if (name === 'project_id') return chance(random, 0.9) ? String(projectId) : pathId(random);
        return ids?.length && chance(random, 0.6) ? segment(pick(random, ids)) : pathId(random);
      });
      const query = new URLSearchParams();
      for (const [name, schema] of Object.entries(route.query?.properties ?? {})) {
        if (chance(random, 0.5)) query.set(name, chance(random, 0.8) ? queryText(valueFor(random, schema)) : queryValue(random));
      }
      for (let i = int(random, 3); i > 0; i--) query.set(pick(random, QUERY_KEYS), queryValue(random));
      const url = query.size > 0 ? `${path}?${query.toString()}` : path;
      const key = chance(random, 0.95) ? pick(random, keys ?? [personalKey]) : nastyString(random);
      const headers: Record<string, string> = { authorization: `Bearer ${key}` };
      if (method === 'GET' || method === 'DELETE') return { method, path: url, headers };
      headers['content-type'] = pick(random, ['application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain']);
      const document = valueFor(random, route.body ?? { type: 'object' });
      let body = Buffer.from(chance(random, 0.5) ? JSON.stringify(document) : documentText(random, document), 'utf8');
      if (chance(random, 0.1)) {
        headers['content-encoding'] = 'gzip';
        body = chance(random, 0.5) ? gzipSync(body) : gzipSync(body).subarray(0, int(random, 20));
      }
      return { method, path: url, headers, body };
    },
  }));
}

/** A generated value as a query parameter carries it: strings as they are, anything else as JSON. */
function queryText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** SDK routes face the internet: they get most of the cases. */
export const SDK_ROUTES: FuzzRoute[] = [...captureRoutes, ...decideRoutes];
