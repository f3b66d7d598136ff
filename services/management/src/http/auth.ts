import { timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { hashPersonalApiKey, keyLimitAllows } from '@plover/accounts';
import type { Sql } from '@plover/postgres';
import { errors } from '../shared/errors';

export interface Principal {
  user: { id: number; uuid: string; email: string; isStaff: boolean };
  key: { id: string; scopes: string[]; scopedProjects: number[] | null; scopedOrganizations: string[] | null };
}

export interface ProjectContext {
  id: number;
  uuid: string;
  organizationId: string;
  /** The caller's membership level in the project's organization. */
  level: 'member' | 'admin' | 'owner';
  /** IANA timezone insights bucket by. */
  timezone: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    project?: ProjectContext;
  }
}

const BEARER = /^Bearer\s+(\S.*)$/;

interface KeyRow {
  id: string;
  secure_value: string;
  scopes: string[];
  scoped_projects: number[] | null;
  scoped_organizations: string[] | null;
  user_id: number;
  uuid: string;
  email: string;
  is_staff: boolean;
  last_used_at: Date | null;
}

/**
 * Failed authentications, counted per client address and per presented key prefix. Once one of them has
 * failed more than `max` times in its `windowMs` window, its further failures answer 429 instead of 401 until
 * the window ends. Only failures are answered so: a valid key always authenticates, so a burst of bad keys
 * from a shared proxy address cannot lock out the users behind it.
 *
 * At most `maxEntries` counters are kept; past that the oldest window is forgotten first. A spray of
 * addresses or prefixes can thus shorten the sprayer's own blocks but never grow memory; a block only slows
 * down guessing keys of 190 random bits, which the hash lookup makes hopeless anyway.
 */
export class AuthFailureThrottle {
  private readonly failures = new Map<string, { count: number; resetAt: number }>();
  constructor(
    private readonly max = 20,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 50_000,
  ) {}

  /** Records one failure of each subject; answers the seconds until the most blocked of them may fail again without a 429, or 0. */
  fail(subjects: readonly string[]): number {
    const now = this.now();
    let wait = 0;
    for (const subject of subjects) {
      let entry = this.failures.get(subject);
      if (!entry || now >= entry.resetAt) {
        // Deleted and set again, so that the map's insertion order is the order in which windows started.
        this.failures.delete(subject);
        entry = { count: 0, resetAt: now + this.windowMs };
        this.failures.set(subject, entry);
        if (this.failures.size > this.maxEntries) this.failures.delete(this.failures.keys().next().value!);
      }
      entry.count += 1;
      if (entry.count > this.max) wait = Math.max(wait, Math.ceil((entry.resetAt - now) / 1000));
    }
    return wait;
  }

  /** Counters held (bounded by `maxEntries`). */
  get size(): number {
    return this.failures.size;
  }

  /** Forgets every failure (tests, or an operator clearing a lockout). */
  reset(): void {
    this.failures.clear();
  }
}

/**
 * Failures also count per presented key, so one bad key retried from many addresses is throttled too. Its first
 * characters name it: enough to tell keys apart, and the counters never hold a whole presented secret.
 */
const KEY_PREFIX_LENGTH = 12;

function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * `Authorization: Bearer phx_…` → req.principal. The key is looked up by its sha256 (unique index: one cheap
 * probe, whatever the throttle says, so that a valid key always passes) and the stored hash compared again in
 * constant time. Inactive users' keys never match. 401 without a key or with an unknown one, 429 instead once
 * the request's address or key prefix has failed too often.
 */
export function authenticate(sql: Sql, throttle: AuthFailureThrottle): RequestHandler {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const address = `address:${req.ip ?? req.socket.remoteAddress ?? 'unknown'}`;
    const refuse = (subjects: string[], error: Error): never => {
      const wait = throttle.fail(subjects);
      throw wait > 0 ? errors.throttled(wait) : error;
    };
    const header = req.headers.authorization;
    const match = header ? BEARER.exec(header) : null;
    if (!match) return refuse([address], errors.notAuthenticated());
    const value = match[1]!.trim();
    const hash = hashPersonalApiKey(value);
    const result = await sql.query<KeyRow>(
      'management.authenticate',
      `SELECT k.id, k.secure_value, k.scopes, k.scoped_projects, k.scoped_organizations, k.last_used_at,
              u.id AS user_id, u.uuid, u.email, u.is_staff
         FROM personal_api_keys k JOIN users u ON u.id = k.user_id
        WHERE k.secure_value = $1 AND u.is_active`,
      [hash],
    );
    const row = result.rows[0];
    if (!row || !sameHash(row.secure_value, hash)) {
      return refuse([address, `key:${value.slice(0, KEY_PREFIX_LENGTH)}`], errors.invalidKey('Authorization header'));
    }
    req.principal = {
      user: { id: row.user_id, uuid: row.uuid, email: row.email, isStaff: row.is_staff },
      key: { id: row.id, scopes: row.scopes, scopedProjects: row.scoped_projects, scopedOrganizations: row.scoped_organizations },
    };
    // PostHog updates last_used_at at most once an hour.
    if (!row.last_used_at || Date.now() - row.last_used_at.getTime() > 3_600_000) {
      await sql.query('management.keyUsed', 'UPDATE personal_api_keys SET last_used_at = now() WHERE id = $1', [row.id]);
    }
    next();
  };
}

/** write ⊇ read; `*` (or the legacy empty list) grants everything. */
export function hasScope(scopes: readonly string[], required: string): boolean {
  if (scopes.length === 0 || scopes.includes('*') || scopes.includes(required)) return true;
  const [object, action] = required.split(':');
  return action === 'read' && scopes.includes(`${object}:write`);
}

export function principalOf(req: Request): Principal {
  if (!req.principal) throw errors.notAuthenticated();
  return req.principal;
}

export function projectOf(req: Request): ProjectContext {
  if (!req.project) throw errors.notFound('Project not found.');
  return req.project;
}

export function requireScope(req: Request, scope: string): void {
  if (!hasScope(principalOf(req).key.scopes, scope)) throw errors.missingScope(scope);
}

/**
 * Resolves `:project_id` (an integer or `@current`) for a project-scoped route: non-integer → 404; a key limited
 * to other projects or organizations → 403; unknown project → 404; not a member of its organization → 403.
 */
export function resolveProject(sql: Sql): RequestHandler {
  return async (req, _res, next) => {
    const principal = principalOf(req);
    const param: unknown = req.params.project_id;
    const raw = typeof param === 'string' ? param : '';
    let id: number;
    if (raw === '@current') {
      const current = await sql.query<{ current_project_id: number | null }>(
        'management.currentProject',
        'SELECT current_project_id FROM users WHERE id = $1',
        [principal.user.id],
      );
      const value = current.rows[0]?.current_project_id;
      if (value == null) throw errors.notFound('Project not found.');
      id = value;
    } else if (/^[0-9]{1,9}$/.test(raw)) {
      id = Number(raw);
    } else {
      throw errors.notFound('Project not found.');
    }
    const { scopedProjects, scopedOrganizations } = principal.key;
    if (!keyLimitAllows(scopedProjects, id)) {
      throw errors.forbidden(`API key does not have access to the requested project: ID ${id}.`);
    }
    const result = await sql.query<{ id: number; uuid: string; organization_id: string; timezone: string; level: ProjectContext['level'] | null }>(
      'management.projectForUser',
      `SELECT p.id, p.uuid, p.organization_id, p.timezone, m.level
         FROM projects p LEFT JOIN organization_memberships m ON m.organization_id = p.organization_id AND m.user_id = $2
        WHERE p.id = $1`,
      [id, principal.user.id],
    );
    const row = result.rows[0];
    if (!row) throw errors.notFound('Project not found.');
    if (!keyLimitAllows(scopedOrganizations, row.organization_id)) {
      throw errors.forbidden(`API key does not have access to the requested organization: ID ${row.organization_id}.`);
    }
    if (!row.level) throw errors.forbidden("You don't have access to the project.");
    req.project = { id: row.id, uuid: row.uuid, organizationId: row.organization_id, timezone: row.timezone, level: row.level };
    next();
  };
}
