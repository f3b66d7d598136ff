import { Type, type SchemaOptions, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { drfViolation, schemaValidator, type FieldViolation, type Validation } from '@plover/contracts';
import { ApiError } from '@plover/core';

/**
 * The management API's shapes are TypeBox schemas: one object is the JSON Schema that validates a request (ajv),
 * the OpenAPI component that documents it, and — through `Static<typeof schema>` — the TypeScript type of the
 * handler's input or output. Each lives in its feature folder (`src/<feature>/schemas.ts`); the shared ones in
 * `src/shared/`. Semantic rules that need the database or PostHog's exact wording stay in the handlers.
 */
export type JsonSchema = Record<string, unknown>;

const names = new WeakMap<object, string>();
const named = new Map<string, object>();

/** `schema` published as the OpenAPI component `name` (and `$ref`'d wherever it appears in another schema). */
export function component<T extends TSchema>(name: string, schema: T): T {
  if (named.has(name) && named.get(name) !== schema) throw new Error(`two schemas are named ${name}`);
  named.set(name, schema);
  names.set(schema, name);
  return schema;
}

/** The component name of a schema given to {@link component}. */
export const componentName = (schema: object): string | undefined => names.get(schema);

/** `T` or null, as `{type: [T's type, 'null']}` (the form ajv's first error reads as PostHog's). */
export function Nullable<T extends TSchema & { type: string }>(schema: T): TUnsafe<T['static'] | null> {
  return Type.Unsafe<T['static'] | null>({ ...schema, type: [schema.type, 'null'] });
}

/** A JSON object of any keys (properties, filters as stored). */
export const AnyObject = (options: SchemaOptions = {}) => Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, ...options });

/** One of `values` (strings, or null). */
export const Enum = <const T extends readonly (string | null)[]>(values: T, options: SchemaOptions = {}) =>
  Type.Unsafe<T[number]>({ ...options, enum: values });

/** A value of the JSON types `types`, typed as `T` (unions ajv reports as one type error). */
export const Types = <T>(types: string[], options: SchemaOptions = {}) => Type.Unsafe<T>({ type: types, ...options });

/** A JSON Schema's first violation as PostHog's 400. */
function refuse(violation: FieldViolation): ApiError {
  return ApiError.validation(violation.detail, violation.attr, violation.code);
}

const validators = new WeakMap<object, (value: unknown) => Validation<unknown, FieldViolation>>();

/** Validates a value (a request body, a route's query) against `schema`; throws the first error as a 400 in PostHog's shape. */
export function validateBody(schema: JsonSchema, body: unknown): void {
  let validate = validators.get(schema);
  if (!validate) {
    validate = schemaValidator<unknown, FieldViolation>(schema, drfViolation);
    validators.set(schema, validate);
  }
  const result = validate(body);
  if (!result.ok) throw refuse(result.violation);
}

/** A validator of some other value, throwing as {@link validateBody} does. */
export function valueValidator(schema: JsonSchema): (value: unknown) => void {
  return (value) => validateBody(schema, value);
}

/** The error body every failure answers with. */
export const ErrorBody = component('Error', Type.Object({ type: Type.String(), code: Type.String(), detail: Type.String(), attr: Nullable(Type.String()) }));

/** `{success: true}`: an action's answer. */
export const Success = component('Success', Type.Object({ success: Type.Boolean() }));
