/**
 * Values a JSON Schema (the route table's TypeBox schemas) accepts, generated: the fuzz suite's management bodies
 * and query parameters start valid, so that they reach the handlers, and are then mutated (values.ts).
 * Strings and numbers lean to the edges the schema allows (its longest string, its largest number, limits of 1000).
 */
import { chance, int, nastyString, pick, type Random } from './values';

export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
  pattern?: string;
  additionalProperties?: boolean | Schema;
}

const WORDS = ['$pageview', 'signed up', 'email', 'plan', 'unique', '$browser', 'event', 'person', 'day', 'hour', '-7d', '-208d', 'all'];

function stringFor(random: Random, schema: Schema): string {
  if (schema.format === 'date-time' || schema.format === 'date') return new Date(Date.UTC(2026, int(random, 12), 1 + int(random, 28))).toISOString();
  if (schema.format === 'uuid') return '0190a4c2-7f3e-7b8c-9d1e-2f3a4b5c6d7e';
  if (schema.format === 'email') return 'fuzz@example.com';
  if (schema.format === 'uri') return 'https://example.com/';
  const max = schema.maxLength ?? 64;
  const min = schema.minLength ?? 0;
  let text = chance(random, 0.5) ? pick(random, WORDS) : nastyString(random);
  if (chance(random, 0.1)) text = 'x'.repeat(max);
  if (text.length > max) text = text.slice(0, max);
  while (text.length < min) text += 'x';
  return text;
}

function numberFor(random: Random, schema: Schema, integer: boolean): number {
  const low = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : -1_000_000);
  const high = schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - 1 : 1_000_000);
  const value = pick(random, [low, high, 0, 1, 1000, low + random() * (high - low)]);
  const bounded = Math.min(high, Math.max(low, value));
  return integer ? Math.round(bounded) : bounded;
}

/** A value `schema` accepts (most of the time: `pattern` is not honoured), at most `depth` levels deep. */
export function valueFor(random: Random, schema: Schema, depth = 6): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return pick(random, schema.enum);
  const union = schema.anyOf ?? schema.oneOf;
  if (union?.length) return valueFor(random, pick(random, union), depth);
  if (schema.allOf?.length) return Object.assign({}, ...(schema.allOf.map((part) => valueFor(random, part, depth)) as object[]));
  const type = Array.isArray(schema.type) ? pick(random, schema.type) : schema.type;
  switch (type) {
    case 'string':
      return stringFor(random, schema);
    case 'integer':
      return numberFor(random, schema, true);
    case 'number':
      return numberFor(random, schema, false);
    case 'boolean':
      return chance(random, 0.5);
    case 'null':
      return null;
    case 'array': {
      if (depth <= 0) return [];
      const min = schema.minItems ?? 0;
      const count = Math.min(schema.maxItems ?? 12, min + int(random, chance(random, 0.2) ? 12 : 3));
      return Array.from({ length: count }, () => valueFor(random, schema.items ?? {}, depth - 1));
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      if (depth <= 0) return out;
      const required = new Set(schema.required ?? []);
      for (const [name, property] of Object.entries(schema.properties ?? {})) {
        if (required.has(name) || chance(random, 0.5)) out[name] = valueFor(random, property, depth - 1);
      }
      return out;
    }
    default:
      // No type (any value): a small JSON value.
      return pick(random, [1, 'x', true, null, [], {}]);
  }
}
