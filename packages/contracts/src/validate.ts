import Ajv, { type AnySchema, type ErrorObject, type ValidateFunction } from 'ajv';

/**
 * One ajv instance for every contract: schemas reference each other by `$id`, which works only within one
 * instance. allErrors stays off: callers report the first error, and validation stops there.
 */
export const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
ajv.addFormat('email', /^[^@\s]+@[^@\s]+$/);
// Timestamps are parsed where they are used (each field has its own accepted forms); the format only documents them.
ajv.addFormat('date-time', true);

/** The first thing wrong with a value, in the shape of PostHog's (DRF's) error `attr` and `detail`. */
export interface SchemaViolation {
  /** Path of the offending field, nested keys and indexes joined by `__` (`batch__3__uuid`); null for the root. */
  attr: string | null;
  detail: string;
}

/** The same in the words and codes of Django REST Framework's field errors, as PostHog's REST API answers them. */
export interface FieldViolation extends SchemaViolation {
  code: string;
}

export type Validation<T, V = SchemaViolation> = { ok: true; value: T } | { ok: false; violation: V };

/**
 * Compiles `schema` (or looks up an added schema by `$id`) into a function returning the value or its first
 * violation, described by `describeError` (ajv's own wording by default; {@link drfViolation} for PostHog's).
 */
export function schemaValidator<T, V = SchemaViolation>(
  schema: AnySchema | string,
  describeError: (error: ErrorObject | undefined) => V = describe as (error: ErrorObject | undefined) => V,
): (value: unknown) => Validation<T, V> {
  let compiled: ValidateFunction<T> | undefined;
  return (value) => {
    // Compiled on first use, so that a schema may reference one added after this validator was declared.
    compiled ??= typeof schema === 'string' ? (ajv.getSchema<T>(schema) ?? missingSchema(schema)) : ajv.compile<T>(schema);
    if (compiled(value)) return { ok: true, value };
    return { ok: false, violation: describeError(compiled.errors?.[0]) };
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

const TYPE_WORDING: Array<[type: string, detail: string]> = [
  ['array', 'Expected a list of items.'],
  ['boolean', 'Must be a valid boolean.'],
  ['integer', 'A valid integer is required.'],
  ['number', 'A valid number is required.'],
];

/** DRF's wording of a failed `type`: the first type the schema names decides it (`["object", "null"]` is an object field). */
function typeViolation(expected: string, attr: string | null): FieldViolation {
  if (expected.startsWith('object')) return { attr, detail: 'Expected a dictionary of items.', code: attr === null ? 'invalid_input' : 'not_a_dict' };
  if (expected === 'null') return { attr, detail: 'This field must be null.', code: 'invalid' };
  const found = TYPE_WORDING.find(([type]) => expected.startsWith(type));
  if (found) return { attr, detail: found[1], code: found[0] === 'array' ? 'not_a_list' : 'invalid' };
  return { attr, detail: 'Not a valid string.', code: 'invalid' };
}

/**
 * The first error of a validation in the words and codes of DRF's serializer fields (`This field is required.`
 * / `required`, `Ensure this field has no more than 40 characters.` / `max_length`, …), the field named as
 * DRF names a nested one (`filters__groups__0`).
 */
export function drfViolation(error: ErrorObject | undefined): FieldViolation {
  if (!error) return { attr: null, detail: 'Invalid input.', code: 'invalid_input' };
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required')
    return { attr: attrOf(error.instancePath, String(params.missingProperty)), detail: 'This field is required.', code: 'required' };
  const attr = attrOf(error.instancePath);
  const limit = String(params.limit);
  switch (error.keyword) {
    case 'type':
      return typeViolation(String(params.type), attr);
    case 'maxLength':
      return { attr, detail: `Ensure this field has no more than ${limit} characters.`, code: 'max_length' };
    case 'minLength':
      return { attr, detail: 'This field may not be blank.', code: 'blank' };
    case 'minimum':
      return { attr, detail: `Ensure this value is greater than or equal to ${limit}.`, code: 'min_value' };
    case 'maximum':
      return { attr, detail: `Ensure this value is less than or equal to ${limit}.`, code: 'max_value' };
    case 'minItems':
      return { attr, detail: 'This list may not be empty.', code: 'empty' };
    case 'maxItems':
      return { attr, detail: `Ensure this field has no more than ${limit} elements.`, code: 'max_length' };
    case 'enum':
      return { attr, detail: 'Not a valid choice.', code: 'invalid_choice' };
    case 'format':
      return { attr, detail: params.format === 'uuid' ? 'Must be a valid UUID.' : `Enter a valid ${String(params.format)}.`, code: 'invalid' };
    default:
      return { attr, detail: error.message ?? 'Invalid input.', code: 'invalid' };
  }
}
