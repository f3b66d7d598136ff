import express, { type Request, type RequestHandler } from 'express';
import { errors } from './errors';

const parseJson = express.json({ limit: '5mb', type: () => true });

/**
 * JSON bodies only (PostHog's person and playlist viewsets parse JSON only): a request that carries a body with
 * another content type gets 415; malformed JSON gets 400 from the shared renderer.
 */
export const jsonBody: RequestHandler = (req, res, next) => {
  const hasBody = (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') || req.headers['transfer-encoding'] !== undefined;
  if (!hasBody) {
    req.body = {};
    next();
    return;
  }
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/(.+\+)?json\b/i.test(type)) throw errors.unsupportedMediaType(type.split(';')[0] ?? type);
  parseJson(req, res, next);
};

export type Body = Record<string, unknown>;

/** The body as an object; arrays or scalars at the top level are a 400. */
export function bodyOf(req: Request): Body {
  const body: unknown = req.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw errors.validation('Invalid data. Expected a dictionary, but got ' + (Array.isArray(body) ? 'list' : typeof body) + '.', null, 'invalid_input');
  }
  return body as Body;
}

export function optionalString(body: Body, attr: string, options: { max?: number; nullable?: boolean } = {}): string | null | undefined {
  const value = body[attr];
  if (value === undefined) return undefined;
  if (value === null) {
    if (options.nullable) return null;
    throw errors.validation('This field may not be null.', attr, 'null');
  }
  if (typeof value !== 'string') throw errors.validation('Not a valid string.', attr, 'invalid');
  if (options.max !== undefined && value.length > options.max) {
    throw errors.validation(`Ensure this field has no more than ${options.max} characters.`, attr, 'max_length');
  }
  return value;
}

export function optionalBoolean(body: Body, attr: string): boolean | undefined {
  const value = body[attr];
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw errors.validation('Must be a valid boolean.', attr, 'invalid');
  return value;
}

/** Query-string booleans as DRF reads them. */
export function queryBoolean(value: string | undefined, attr: string): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  if (['true', '1', 'True', 'yes', 'on'].includes(value)) return true;
  if (['false', '0', 'False', 'no', 'off'].includes(value)) return false;
  throw errors.validation('Must be a valid boolean.', attr, 'invalid');
}
