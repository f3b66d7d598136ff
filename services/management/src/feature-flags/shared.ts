import type { Request, RequestHandler } from 'express';
import { ApiError } from '@plover/core';
import { principalOf, projectOf, requireScope } from '../http/auth';
import { errors } from '../http/errors';

/**
 * The request's project and caller once it holds `scope` (`feature_flag:read|write`, `cohort:read|write`, …),
 * from the management API's authentication and project resolution; 403 without the scope. The user id
 * becomes `created_by`.
 */
export function authorize(req: Request, scope: string): { projectId: number; userId: number } {
  requireScope(req, scope);
  return { projectId: projectOf(req).id, userId: principalOf(req).user.id };
}

export function idParam(req: Request): number {
  const raw = String(req.params.id ?? '');
  if (!/^\d+$/.test(raw) || Number(raw) > 2_147_483_647) throw ApiError.notFound();
  return Number(raw);
}

/**
 * `DELETE` of a flag, cohort, early access feature or survey: 405 once the key holds `scope` (403 without it,
 * the scope being checked first as on every route). Soft delete is PATCH `{"deleted": true}`.
 */
export function refuseDelete(scope: string): RequestHandler {
  return (req) => {
    requireScope(req, scope);
    throw errors.methodNotAllowed(req.method);
  };
}

export function pagination(req: Request): { limit: number; offset: number } {
  const limit = Number.parseInt(typeof req.query.limit === 'string' ? req.query.limit : '100', 10);
  const offset = Number.parseInt(typeof req.query.offset === 'string' ? req.query.offset : '0', 10);
  return {
    limit: Number.isFinite(limit) && limit > 0 ? Math.min(limit, 1000) : 100,
    offset: Number.isFinite(offset) && offset > 0 ? offset : 0,
  };
}

export function page<T>(req: Request, results: T[], count: number, limit: number, offset: number): Record<string, unknown> {
  const base = new URL(req.originalUrl, `${req.protocol}://${req.get('host') ?? 'localhost'}`);
  const at = (value: number): string => {
    const url = new URL(base);
    url.searchParams.set('limit', String(limit));
    url.searchParams.set('offset', String(value));
    return url.toString();
  };
  return {
    count,
    next: offset + limit < count ? at(offset + limit) : null,
    previous: offset > 0 ? at(Math.max(0, offset - limit)) : null,
    results,
  };
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
