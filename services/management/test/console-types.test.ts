/**
 * The console's API types (apps/console/src/api/types.ts) against the OpenAPI document this service serves at
 * /api/schema/: every field a console interface declares is a property of the component it mirrors, of a JSON
 * type the component allows. For an answer the console must be ready for every type the document lets the server
 * send; for a body the server must accept every type the console sends. types.ts is read with the TypeScript
 * compiler, so `Partial`, `Pick` and intersections count as the console sees them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import express from 'express';
import request from 'supertest';
import ts from 'typescript';
import { schemaRoutes } from '../src/openapi';
import { declaredTable } from './support/table';

const TYPES = path.resolve(__dirname, '../../../apps/console/src/api/types.ts');

/** A console type and the component it mirrors: `answer` when the server sends it, `body` when the console does. */
interface Mirror {
  component: string;
  direction: 'answer' | 'body';
}

const answer = (component: string): Mirror => ({ component, direction: 'answer' });
const body = (component: string): Mirror => ({ component, direction: 'body' });

const MIRRORS: Record<string, Mirror> = {
  SurveyStats: answer('SurveyStats'),
  SurveyQuestionResults: answer('SurveyQuestionResults'),
  SurveyResponse: answer('SurveyResponse'),
  Project: answer('Project'),
  ReplaySettings: answer('Project'),
  ProjectSettings: answer('Project'),
  User: answer('User'),
  ErrorBody: answer('Error'),
  Insight: answer('Insight'),
  DashboardBasic: answer('DashboardBasic'),
  Dashboard: answer('Dashboard'),
  DashboardTile: answer('DashboardTile'),
  Sharing: answer('Sharing'),
  DashboardWrite: body('DashboardWrite'),
  SharingWrite: body('SharingWrite'),
  EventRow: answer('Event'),
  Person: answer('Person'),
  Recording: answer('SessionRecording'),
  Playlist: answer('SessionRecordingPlaylist'),
  FeatureFlag: answer('FeatureFlag'),
  Cohort: answer('Cohort'),
  EarlyAccessFeature: answer('EarlyAccessFeature'),
  Survey: answer('Survey'),
  GroupType: answer('GroupType'),
  PersonalApiKey: answer('PersonalApiKey'),
  ProjectPatch: body('ProjectUpdate'),
  InsightWrite: body('InsightWrite'),
  QueryRequest: body('QueryRequest'),
  WebOverviewResponse: answer('WebOverviewQueryResponse'),
  WebStatsTableResponse: answer('WebStatsTableQueryResponse'),
  PlaylistWrite: body('SessionRecordingPlaylistWrite'),
  FeatureFlagWrite: body('FeatureFlagWrite'),
  CohortCreate: body('CohortWrite'),
  EarlyAccessFeatureCreate: body('EarlyAccessFeatureWrite'),
  SurveyCreate: body('SurveyWrite'),
  PersonalApiKeyCreate: body('PersonalApiKeyCreate'),
};

/**
 * The console's types that mirror no component: listing envelopes the document writes inline, the legacy insight
 * filters and answers (the document declares those answers as free-form `InsightResult`), and parts of other shapes.
 */
const NOT_COMPONENTS = [
  'SurveyEventStats',
  'Page',
  'NextPage',
  'Interval',
  'MathType',
  'Display',
  'EventEntity',
  'TrendRequest',
  'TrendSeries',
  'TrendResponse',
  'CorrelationType',
  'FunnelWindowUnit',
  'CorrelationRequest',
  'CorrelationEntry',
  'CorrelationResult',
  'AnyPropertyFilter',
  'BehavioralFilter',
  'FlagFilters',
  'SurveyQuestion',
  'QueryNode',
  'HogQLResponse',
  'HogQLNotice',
  'HogQLMetadataResponse',
  'FunnelStep',
  'FunnelTimeToConvert',
  'FunnelTrend',
  'RetentionRow',
  'PathEdge',
  'TileLayout',
  'TileWrite',
  'InsightQueryResponse',
  'WebOverviewItem',
];

type Kind = 'string' | 'number' | 'boolean' | 'null' | 'array' | 'object';
const ANY: ReadonlySet<Kind> = new Set<Kind>(['string', 'number', 'boolean', 'null', 'array', 'object']);

interface Schema {
  $ref?: string;
  type?: string | string[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, Schema>;
}

type Components = Record<string, Schema>;

const kindOfValue = (value: unknown): Kind => (value === null ? 'null' : Array.isArray(value) ? 'array' : (typeof value as Kind));

/** The JSON types `schema` admits; `ANY` when it does not say. */
function schemaKinds(schema: Schema, components: Components): ReadonlySet<Kind> {
  if (schema.$ref) return schemaKinds(components[schema.$ref.split('/').pop()!]!, components);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) {
    const kinds = alternatives.map((alternative) => schemaKinds(alternative, components));
    return kinds.some((each) => each === ANY) ? ANY : new Set(kinds.flatMap((each) => [...each]));
  }
  if (schema.type !== undefined) return new Set([schema.type].flat().map((type) => (type === 'integer' ? 'number' : (type as Kind))));
  if ('const' in schema) return new Set([kindOfValue(schema.const)]);
  if (schema.enum) return new Set(schema.enum.map(kindOfValue));
  return ANY;
}

/** The JSON types a TypeScript type admits (`undefined`, an optional field's absence, is none); `ANY` for `unknown`. */
function typeKinds(type: ts.Type, checker: ts.TypeChecker): ReadonlySet<Kind> {
  if (type.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return ANY;
  if (type.isUnion()) {
    const kinds = type.types.map((member) => typeKinds(member, checker));
    return kinds.some((each) => each === ANY) ? ANY : new Set(kinds.flatMap((each) => [...each]));
  }
  if (type.flags & ts.TypeFlags.StringLike) return new Set(['string']);
  if (type.flags & ts.TypeFlags.NumberLike) return new Set(['number']);
  if (type.flags & ts.TypeFlags.BooleanLike) return new Set(['boolean']);
  if (type.flags & ts.TypeFlags.Null) return new Set(['null']);
  if (type.flags & ts.TypeFlags.Undefined) return new Set();
  if (checker.isArrayType(type) || checker.isTupleType(type)) return new Set(['array']);
  if (type.flags & ts.TypeFlags.Object || type.isIntersection()) return new Set(['object']);
  throw new Error(`no JSON type for ${checker.typeToString(type)}`);
}

const named = (kinds: ReadonlySet<Kind>) => (kinds === ANY ? 'any' : [...kinds].sort().join(' | '));

interface ConsoleTypes {
  checker: ts.TypeChecker;
  types: Map<string, ts.Type>;
}

/** The exported types of a source `text`, with a checker that resolves them as `tsc --strict` does. */
function consoleTypes(text: string): ConsoleTypes {
  const fileName = '/console/api/types.ts';
  const options: ts.CompilerOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts'] };
  const host = ts.createCompilerHost(options);
  const readLib = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) => (name === fileName ? ts.createSourceFile(name, text, language) : readLib(name, language, ...rest));
  const program = ts.createProgram([fileName], options, host);
  const checker = program.getTypeChecker();
  const types = new Map<string, ts.Type>();
  for (const statement of program.getSourceFile(fileName)!.statements) {
    if (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) types.set(statement.name.text, checker.getTypeAtLocation(statement.name));
  }
  return { checker, types };
}

/** Every field of the console types in `mirrors` that the document's components lack, or type otherwise. */
function drift({ checker, types }: ConsoleTypes, components: Components, mirrors: Record<string, Mirror>): string[] {
  const found: string[] = [];
  for (const [name, { component, direction }] of Object.entries(mirrors)) {
    const type = types.get(name);
    const properties = components[component]?.properties;
    if (!type || !properties) {
      found.push(`${name}: ${type ? `no component ${component} in the document` : 'no such type in the console'}`);
      continue;
    }
    for (const field of checker.getPropertiesOfType(type)) {
      const schema = properties[field.name];
      if (!schema) {
        found.push(`${name}.${field.name}: not a property of ${component}`);
        continue;
      }
      const declared = typeKinds(checker.getTypeOfSymbol(field), checker);
      const served = schemaKinds(schema, components);
      if (served === ANY) continue;
      const [sent, accepted] = direction === 'answer' ? [served, declared] : [declared, served];
      if ([...sent].some((kind) => !accepted.has(kind))) {
        found.push(`${name}.${field.name}: the console says ${named(declared)}, ${component} in the document says ${named(served)}`);
      }
    }
  }
  return found;
}

describe('the console’s API types against the served OpenAPI document', () => {
  let components: Components;
  const parsed = consoleTypes(readFileSync(TYPES, 'utf8'));

  beforeAll(async () => {
    const res = await request(express().use('/api', schemaRoutes(declaredTable()))).get('/api/schema/');
    expect(res.status).toBe(200);
    components = (JSON.parse(res.text) as { components: { schemas: Components } }).components.schemas;
  });

  it('maps every type of types.ts to a component, or names it as mirroring none', () => {
    expect([...parsed.types.keys()].filter((name) => !(name in MIRRORS) && !NOT_COMPONENTS.includes(name))).toEqual([]);
  });

  it('declares only fields the components have, of types they allow', () => {
    expect(drift(parsed, components, MIRRORS)).toEqual([]);
  });
});

describe('drift', () => {
  const components: Components = {
    Thing: {
      type: 'object',
      properties: { id: { type: 'integer' }, name: { type: ['string', 'null'] }, tags: { $ref: '#/components/schemas/Tags' }, extra: {} },
    },
    Tags: { type: 'array' },
    ThingWrite: { type: 'object', properties: { name: { anyOf: [{ type: 'string' }, { type: 'null' }] }, kind: { enum: ['a', 'b'] } } },
  };
  const mirrors = { Thing: answer('Thing'), ThingWrite: body('ThingWrite') };

  it('passes types that keep to the document, through $refs, unions, enums and Partial', () => {
    const source = `
      export interface Thing { id: number; name: string | null; tags: string[]; extra: { a: 1 } }
      export type ThingWrite = Partial<{ name: string; kind: 'a' }>;`;
    expect(drift(consoleTypes(source), components, mirrors)).toEqual([]);
  });

  it('names a field the document lacks, an answer field that misses a type the server may send, and a body field the server refuses', () => {
    const source = `
      export interface Thing { id: string; name: string; tags: string[]; colour: string }
      export interface ThingWrite { name?: string | number; kind?: string }`;
    expect(drift(consoleTypes(source), components, mirrors)).toEqual([
      'Thing.id: the console says string, Thing in the document says number',
      'Thing.name: the console says string, Thing in the document says null | string',
      'Thing.colour: not a property of Thing',
      'ThingWrite.name: the console says number | string, ThingWrite in the document says null | string',
    ]);
  });
});
