/**
 * Fuzz cases per public route: a valid request of the route's kind, its document mutated, then encoded the
 * ways SDKs encode (JSON, gzip by hint or by magic bytes, base64, lz-string, urlencoded forms, GET `?data=`)
 * and sometimes damaged after encoding.
 */
import { gzipSync } from 'node:zlib';
import { compressToBase64 } from 'lz-string';
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

interface ManagementTemplate {
  methods: FuzzRequest['method'][];
  path: string;
  body?: Record<string, unknown>;
}

const P = '/api/projects/{project}';
const MANAGEMENT_TEMPLATES: ManagementTemplate[] = [
  { methods: ['GET'], path: '/api/users/@me/' },
  { methods: ['GET', 'POST'], path: '/api/personal_api_keys/', body: { label: 'fuzzed', scopes: ['person:read'] } },
  { methods: ['GET', 'PATCH', 'DELETE'], path: '/api/personal_api_keys/{id}/', body: { label: 'fuzzed' } },
  { methods: ['GET', 'POST'], path: '/api/projects/', body: { name: 'Fuzzed' } },
  { methods: ['GET', 'PATCH'], path: `${P}/`, body: { name: 'Renamed' } },
  { methods: ['GET', 'POST'], path: `${P}/persons/`, body: { properties: { a: 1 } } },
  { methods: ['POST'], path: `${P}/persons/bulk_delete/`, body: { distinct_ids: ['nobody'], delete_events: false } },
  { methods: ['GET', 'PATCH', 'PUT', 'DELETE'], path: `${P}/persons/{id}/`, body: { properties: { plan: 'enterprise' } } },
  { methods: ['GET', 'POST'], path: `${P}/session_recording_playlists/`, body: { name: 'Fuzzed', description: 'x', pinned: false, filters: {} } },
  { methods: ['GET', 'PATCH', 'PUT', 'DELETE'], path: `${P}/session_recording_playlists/{id}/`, body: { name: 'Renamed', deleted: false } },
  { methods: ['GET', 'PUT'], path: `${P}/session_recording_playlists/{id}/access_controls/`, body: { access_level: 'viewer' } },
  { methods: ['GET'], path: `${P}/session_recording_playlists/{id}/recordings/` },
  { methods: ['POST', 'DELETE'], path: `${P}/session_recording_playlists/{id}/recordings/{id}/` },
  { methods: ['GET'], path: `${P}/session_recordings/{id}/` },
  { methods: ['GET', 'POST'], path: `${P}/insights/trend/`, body: { events: [{ id: '$pageview', math: 'dau' }], interval: 'day', date_from: '-7d' } },
  {
    methods: ['GET', 'POST'],
    path: `${P}/insights/funnel/correlation/`,
    body: {
      events: [
        { id: '$pageview', order: 0 },
        { id: 'signed up', order: 1 },
      ],
      funnel_correlation_type: 'events',
    },
  },
  { methods: ['POST'], path: `${P}/insights/timing/`, body: { duration: 1.5, insight_id: 1 } },
  { methods: ['GET'], path: `${P}/insights/my_last_viewed/` },
  { methods: ['GET', 'POST'], path: `${P}/insights/`, body: { name: 'Fuzzed', filters: { events: [{ id: '$pageview' }] }, dashboards: [] } },
  { methods: ['GET', 'PATCH', 'DELETE'], path: `${P}/insights/{id}/`, body: { name: 'Renamed' } },
  { methods: ['GET'], path: `${P}/groups_types/` },
  { methods: ['GET'], path: `${P}/groups/` },
  { methods: ['GET'], path: `${P}/events/` },
  { methods: ['GET'], path: `${P}/ingestion_warnings/` },
  {
    methods: ['GET', 'POST'],
    path: `${P}/feature_flags/`,
    body: { key: 'fuzzed-flag', name: 'Fuzzed', filters: { groups: [{ properties: [{ key: 'id', value: 1, type: 'cohort' }], rollout_percentage: 50 }] } },
  },
  { methods: ['GET', 'PATCH', 'DELETE'], path: `${P}/feature_flags/{id}/`, body: { name: 'Renamed', active: true } },
  { methods: ['GET'], path: `${P}/feature_flags/{id}/remote_config/` },
  { methods: ['GET', 'POST'], path: `${P}/cohorts/`, body: { name: 'Fuzzed', groups: [{ properties: [{ key: 'email', value: 'x', type: 'person' }] }] } },
  { methods: ['GET', 'PATCH'], path: `${P}/cohorts/{id}/`, body: { name: 'Renamed' } },
  { methods: ['GET', 'POST'], path: `${P}/early_access_features/`, body: { name: 'Fuzzed', stage: 'beta' } },
  { methods: ['GET', 'POST'], path: `${P}/surveys/`, body: { name: 'Fuzzed', type: 'popover', questions: [{ type: 'open', question: 'Why?' }] } },
];

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

const managementRoutes: FuzzRoute[] = MANAGEMENT_TEMPLATES.map((template) => ({
  name: `management ${template.path}`,
  generate: (random, { personalKey, projectId }) => {
    const method = pick(random, template.methods);
    const project = chance(random, 0.9) ? String(projectId) : pathId(random);
    const path = template.path.replace('{project}', project).replace(/\{id\}/g, () => pathId(random));
    const query = new URLSearchParams();
    for (let i = int(random, 4); i > 0; i--) query.set(pick(random, QUERY_KEYS), queryValue(random));
    const url = query.size > 0 ? `${path}?${query.toString()}` : path;
    const headers: Record<string, string> = { authorization: `Bearer ${chance(random, 0.95) ? personalKey : nastyString(random)}` };
    if (method === 'GET' || method === 'DELETE') return { method, path: url, headers };
    headers['content-type'] = pick(random, ['application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain']);
    let body = Buffer.from(documentText(random, template.body ?? {}), 'utf8');
    if (chance(random, 0.15)) {
      headers['content-encoding'] = 'gzip';
      body = chance(random, 0.5) ? gzipSync(body) : gzipSync(body).subarray(0, int(random, 20));
    }
    return { method, path: url, headers, body };
  },
}));

/** SDK routes face the internet: they get most of the cases. */
export const SDK_ROUTES: FuzzRoute[] = [...captureRoutes, ...decideRoutes];
export const MANAGEMENT_ROUTES: FuzzRoute[] = managementRoutes;
