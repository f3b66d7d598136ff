import type { ErrorRequestHandler } from 'express';
import { StorageError } from '@plover/core';
import { errors } from '../shared/errors';

/**
 * Postgres refusing a character of the client's text (22P05: `\u0000` in jsonb; 22021: a byte sequence invalid
 * in the encoding) is the client's input, not a server fault: a 400. Requests are checked for NUL before any
 * handler runs; this catches whatever reaches Postgres another way.
 */
export const unstorableInput: ErrorRequestHandler = (error: unknown, _req, _res, next) => {
  const cause = error instanceof StorageError ? error : (error as { cause?: unknown } | null)?.cause;
  if (cause instanceof StorageError && (cause.code === '22P05' || cause.code === '22021')) {
    next(errors.validation('The request holds characters that cannot be stored (such as NUL).', null, 'unstorable_characters'));
    return;
  }
  next(error);
};
