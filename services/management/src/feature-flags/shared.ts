import type { Request, RequestHandler, Response } from 'express';
import { ApiError } from '@plover/core';
import { principalOf, projectOf, requireScope } from '../http/auth';
import { errors } from '../http/errors';
import { envelope, send, type Page } from '../http/render';

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

/** One page of a listing whose total is counted, in the pagination envelope (or its CSV). */
export function sendPage<T>(req: Request, res: Response, page: Page, results: T[], count: number, filename: string): void {
  send(req, res, 200, envelope(req, page, results, count, page.offset + page.limit < count), filename);
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
