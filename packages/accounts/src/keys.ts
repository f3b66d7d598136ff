import { createHash, randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** 32 random bytes in base62, as PostHog's tokens: URL- and header-safe, no padding. */
function randomToken(): string {
  let value = BigInt(`0x${randomBytes(32).toString('hex')}`);
  let out = '';
  while (value > 0n) {
    out = BASE62[Number(value % 62n)]! + out;
    value /= 62n;
  }
  return out.padStart(43, '0');
}

/** Public project key the SDKs send (`token`/`api_key`). */
export function newProjectToken(): string {
  return `phc_${randomToken()}`;
}

/** Secret personal API key for the management API. Shown once; only its hash is stored. */
export function newPersonalApiKey(): string {
  return `phx_${randomToken()}`;
}

/** PostHog's stored form of a personal key: unsalted sha256 (the key itself carries 190 bits of entropy). */
export function hashPersonalApiKey(value: string): string {
  return `sha256$${createHash('sha256').update(value, 'utf8').digest('hex')}`;
}

/** What lists show instead of the key: its first and last four characters. */
export function maskPersonalApiKey(value: string): string {
  return value.length < 16 ? '********' : `${value.slice(0, 4)}...${value.slice(-4)}`;
}

/** Whether a personal key's project or organization limit (null or empty: no limit, as PostHog stores it) lets `item` through. */
export function keyLimitAllows<T>(limit: readonly T[] | null, item: T): boolean {
  return limit === null || limit.length === 0 || limit.includes(item);
}

/** write ⊇ read; `*` (or the legacy empty list) grants everything. */
export function hasScope(scopes: readonly string[], required: string): boolean {
  if (scopes.length === 0 || scopes.includes('*') || scopes.includes(required)) return true;
  const [object, action] = required.split(':');
  return action === 'read' && scopes.includes(`${object}:write`);
}
