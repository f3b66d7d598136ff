import { timingSafeEqual } from 'node:crypto';
import { ApiError } from '@plover/core';
import type { SqlExecutor } from '@plover/postgres';
import { hashPersonalApiKey } from './keys';

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

/** A personal API key that authenticated, with its user. */
export interface AuthenticatedKey {
  user: { id: number; uuid: string; email: string; isStaff: boolean };
  key: { id: string; scopes: string[]; scopedProjects: number[] | null; scopedOrganizations: string[] | null };
}

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

const BEARER = /^Bearer\s+(\S.*)$/i;

/**
 * Failures also count per presented key, so one bad key retried from many addresses is throttled too. Its first
 * characters name it: enough to tell keys apart, and the counters never hold a whole presented secret.
 */
const KEY_PREFIX_LENGTH = 12;

/** PostHog updates a key's `last_used_at` at most once an hour. */
const LAST_USED_EVERY_MS = 3_600_000;

function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

export const keyErrors = {
  notProvided: () => ApiError.unauthenticated('Authentication credentials were not provided.'),
  throttled: (seconds: number) => new ApiError(429, 'throttled', 'throttled', `Request was throttled. Expected available in ${seconds} seconds.`),
};

/**
 * The one check of `Authorization: Bearer phx_…` (the management API and decide's local evaluation). The key is
 * looked up by its sha256 (unique index: one cheap probe, whatever the throttle says, so that a valid key always
 * passes) and the stored hash compared again in constant time; inactive users' keys never match. 401 without a
 * key or with an unknown one (`invalid()`: each API words it as PostHog's does), 429 instead once the request's
 * address or key prefix has failed too often. A key that passes has its `last_used_at` updated, at most hourly.
 */
export class PersonalKeyAuth {
  constructor(
    private readonly sql: SqlExecutor,
    readonly throttle: AuthFailureThrottle = new AuthFailureThrottle(),
  ) {}

  async authenticate(authorization: string | undefined, address: string, invalid: () => Error): Promise<AuthenticatedKey> {
    const addressSubject = `address:${address}`;
    const refuse = (subjects: string[], error: Error): never => {
      const wait = this.throttle.fail(subjects);
      throw wait > 0 ? keyErrors.throttled(wait) : error;
    };
    const match = authorization ? BEARER.exec(authorization) : null;
    if (!match) return refuse([addressSubject], keyErrors.notProvided());
    const value = match[1]!.trim();
    const hash = hashPersonalApiKey(value);
    const result = await this.sql.query<KeyRow>(
      'accounts.authenticateKey',
      `SELECT k.id, k.secure_value, k.scopes, k.scoped_projects, k.scoped_organizations, k.last_used_at,
              u.id AS user_id, u.uuid, u.email, u.is_staff
         FROM personal_api_keys k JOIN users u ON u.id = k.user_id
        WHERE k.secure_value = $1 AND u.is_active`,
      [hash],
    );
    const row = result.rows[0];
    if (!row || !sameHash(row.secure_value, hash)) return refuse([addressSubject, `key:${value.slice(0, KEY_PREFIX_LENGTH)}`], invalid());
    if (!row.last_used_at || Date.now() - row.last_used_at.getTime() > LAST_USED_EVERY_MS) {
      await this.sql.query('accounts.keyUsed', 'UPDATE personal_api_keys SET last_used_at = now() WHERE id = $1', [row.id]);
    }
    return {
      user: { id: row.user_id, uuid: row.uuid, email: row.email, isStaff: row.is_staff },
      key: { id: row.id, scopes: row.scopes, scopedProjects: row.scoped_projects, scopedOrganizations: row.scoped_organizations },
    };
  }
}

/** A project as a user sees it: `level` is their membership in its organization, null when they are not a member. */
export interface ProjectForUser {
  id: number;
  uuid: string;
  organizationId: string;
  timezone: string;
  level: 'member' | 'admin' | 'owner' | null;
}

/** The project with the user's membership level in its organization; undefined when there is no such project. */
export async function projectForUser(sql: SqlExecutor, projectId: number, userId: number): Promise<ProjectForUser | undefined> {
  const result = await sql.query<{ id: number; uuid: string; organization_id: string; timezone: string; level: ProjectForUser['level'] }>(
    'accounts.projectForUser',
    `SELECT p.id, p.uuid, p.organization_id, p.timezone, m.level
       FROM projects p LEFT JOIN organization_memberships m ON m.organization_id = p.organization_id AND m.user_id = $2
      WHERE p.id = $1`,
    [projectId, userId],
  );
  const row = result.rows[0];
  return row && { id: row.id, uuid: row.uuid, organizationId: row.organization_id, timezone: row.timezone, level: row.level };
}
