import Ajv, { type AnySchema, type ErrorObject, type ValidateFunction } from 'ajv';

/**
 * One ajv instance for every contract: schemas reference each other by `$id`, which works only within one
 * instance. allErrors stays off: callers report the first error, and validation stops there.
 */
export const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });

/** The first thing wrong with a value, in the shape of PostHog's (DRF's) error `attr` and `detail`. */
export interface SchemaViolation {
  /** Path of the offending field, nested keys and indexes joined by `__` (`batch__3__uuid`); null for the root. */
  attr: string | null;
  detail: string;
}

export type Validation<T> = { ok: true; value: T } | { ok: false; violation: SchemaViolation };

/** Compiles `schema` (or looks up an added schema by `$id`) into a function returning the value or its first violation. */
export function schemaValidator<T>(schema: AnySchema | string): (value: unknown) => Validation<T> {
  let compiled: ValidateFunction<T> | undefined;
  return (value) => {
    // Compiled on first use, so that a schema may reference one added after this validator was declared.
    compiled ??= typeof schema === 'string' ? (ajv.getSchema<T>(schema) ?? missingSchema(schema)) : ajv.compile<T>(schema);
    if (compiled(value)) return { ok: true, value };
    return { ok: false, violation: describe(compiled.errors?.[0]) };
  };
}

function missingSchema(id: string): never {
  throw new Error(`no schema ${id} was added`);
}

/** `/batch/3/uuid` → `batch__3__uuid` (JSON Pointer escapes undone). */
export function attrOf(instancePath: string, child?: string): string | null {
  const segments =
    instancePath === ''
      ? []
      : instancePath
          .slice(1)
          .split('/')
          .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) segments.push(child);
  return segments.length === 0 ? null : segments.join('__');
}

function describe(error: ErrorObject | undefined): SchemaViolation {
  if (!error) return { attr: null, detail: 'Invalid input.' };
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return { attr: attrOf(error.instancePath, missing), detail: `${missing} is required.` };
  }
  const attr = attrOf(error.instancePath);
  const subject = attr ?? 'The body';
  // ajv's pattern message quotes the regular expression, which tells a client nothing useful.
  const message = error.keyword === 'pattern' ? 'has an invalid format' : (error.message ?? 'is invalid');
  return { attr, detail: `${subject} ${message}.` };
}
