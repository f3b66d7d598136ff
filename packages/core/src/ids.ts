import { createHash, randomUUID } from 'node:crypto';

function format(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

/** The millisecond `uuidv7` last formatted, and its formatted time part. */
let v7Time = Number.NaN;
let v7Prefix = '';

/**
 * RFC 9562 UUIDv7: 48-bit Unix milliseconds, then random bits — sortable by creation time.
 * The random bits come from `randomUUID()`, which draws from a pooled entropy buffer: `randomBytes(16)` per id
 * was half of capture's CPU time per event. A v4 uuid keeps 74 random bits after its first 48 are replaced by
 * the time and its version nibble by 7, exactly what v7 asks for; its variant bits are already v7's.
 */
export function uuidv7(now: number = Date.now()): string {
  // Ids are minted in bursts within one millisecond (a capture batch): the time part is formatted once per burst.
  if (now !== v7Time) {
    const time = now.toString(16).padStart(12, '0');
    v7Prefix = `${time.slice(0, 8)}-${time.slice(8, 12)}-7`;
    v7Time = now;
  }
  return v7Prefix + randomUUID().slice(15);
}

/** RFC 9562 UUIDv5 (SHA-1, name-based): the same namespace and name always give the same uuid. */
export function uuidv5(name: string, namespace: string): string {
  if (!isUuid(namespace)) throw new Error(`invalid namespace uuid: ${namespace}`);
  const digest = createHash('sha1')
    .update(Buffer.from(namespace.replace(/-/g, ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  const bytes = digest.subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  return format(bytes);
}
