/**
 * Readers for request fields. Query-string values are text, so numbers, booleans, lists and objects may arrive
 * JSON-encoded; each reader accepts both forms and answers a 400 naming the field (`attr`) otherwise.
 */
import { ApiError } from '@plover/core';

export type Fields = Record<string, unknown>;
/** The JSON body as fields (an absent body is none); anything but an object is a 400. */
export function bodyFields(body: unknown): Fields {
  if (body === undefined || body === null || body === '') return {};
  if (isObject(body)) return body;
  throw ApiError.validation('The request body must be a JSON object.');
}

export function isAbsent(value: unknown): value is undefined | null | '' {
  return value === undefined || value === null || value === '';
}

export function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function tryJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** JSON text → its value (a malformed text is a 400 naming the field); anything else as it is. */
export function decode(raw: unknown, attr: string): unknown {
  if (typeof raw !== 'string' || raw.trim() === '') return raw;
  const value = tryJson(raw);
  if (value === undefined) throw ApiError.validation('Malformed JSON.', attr);
  return value;
}

export function list(raw: unknown, attr: string): unknown[] {
  const value = decode(raw, attr);
  if (isAbsent(value)) return [];
  if (Array.isArray(value)) return value;
  throw ApiError.validation('Must be a list.', attr);
}

export function object(raw: unknown, attr: string): Fields | null {
  const value = decode(raw, attr);
  if (isAbsent(value)) return null;
  if (isObject(value)) return value;
  throw ApiError.validation('Must be an object.', attr);
}

export function optionalString(raw: unknown, attr: string): string | null {
  if (isAbsent(raw)) return null;
  if (typeof raw === 'string') return raw;
  throw ApiError.validation('Must be a string.', attr);
}

export function integer(raw: unknown, attr: string): number | null {
  if (isAbsent(raw)) return null;
  if (typeof raw === 'number' && Number.isSafeInteger(raw)) return raw;
  if (typeof raw === 'string' && /^-?\d{1,15}$/.test(raw.trim())) return Number(raw);
  throw ApiError.validation('A valid integer is required.', attr);
}

export function requiredGroupTypeIndex(raw: unknown, attr: string): number {
  const index = integer(raw, attr);
  if (index === null) throw required(attr);
  if (index < 0 || index > 4) throw ApiError.validation('Must be between 0 and 4.', attr);
  return index;
}

export function choice<T extends string>(raw: unknown, choices: readonly T[], attr: string): T | null {
  if (isAbsent(raw)) return null;
  if (typeof raw === 'string' && (choices as readonly string[]).includes(raw)) return raw as T;
  throw invalidChoice(raw, attr);
}

export function invalidChoice(raw: unknown, attr: string): ApiError {
  return ApiError.validation(`${describe(raw)} is not a valid choice.`, attr, 'invalid_choice');
}

export function required(attr: string): ApiError {
  return ApiError.validation('This field is required.', attr, 'required');
}

export function describe(value: unknown): string {
  return typeof value === 'string' ? `"${value}"` : String(JSON.stringify(value));
}
