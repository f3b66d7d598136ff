import * as crypto from 'node:crypto';

// PostHog divides by 0xFFFFFFFFFFFFFFF (2^60 - 1); as a float64 that literal is exactly 2^60.
const LONG_SCALE = 2 ** 60;

// One-shot `crypto.hash` (Node >= 20.12) with a hex result is about 4x faster than a `createHash` object
// (measured: 0.7 µs vs 2.7 µs), and decide hashes once or twice per flag per request. Node 20.10–20.11
// lack it, so those fall back.
const oneShotHash = crypto.hash as typeof crypto.hash | undefined;
const sha1Hex: (text: string) => string =
  oneShotHash === undefined
    ? (text) => crypto.createHash('sha1').update(text, 'utf8').digest('hex')
    : (text) => oneShotHash('sha1', text, 'hex');

/**
 * Maps `prefix + identifier + salt` uniformly onto [0, 1]: the first 15 hex digits (60 bits) of its SHA-1,
 * divided by 2^60 - 1 as a double. Identical to Django `calculate_hash` (`flag_matching.py`), Rust
 * `calculate_hash` (`flag_matching_utils.rs`) and posthog-node `_hash`.
 *
 * The 60 bits are read as 8 + 7 hex digits: `hi * 2^28` is exact and the single addition rounds once, so
 * the result is the correctly rounded double — the value a BigInt route gives, and posthog-node's
 * `parseInt(hex.slice(0, 15), 16)` (checked against every vector in flag-vectors.json).
 */
export function calculateHash(prefix: string, identifier: string, salt = ''): number {
  const hex = sha1Hex(`${prefix}${identifier}${salt}`);
  const hi = parseInt(hex.slice(0, 8), 16);
  const lo = parseInt(hex.slice(8, 15), 16);
  return (hi * 2 ** 28 + lo) / LONG_SCALE;
}

/** Rollout (`salt` "") and variant (`salt` "variant") hash: `"<flag key>.<identifier><salt>"`. */
export function flagHash(flagKey: string, identifier: string, salt: '' | 'variant'): number {
  return calculateHash(`${flagKey}.`, identifier, salt);
}

/**
 * Holdout hash: no flag key, so one identifier lands in the same holdout bucket for every flag of an
 * experiment (`get_holdout_hash` in Django `flag_matching.py` and Rust `flag_matching.rs`).
 */
export function holdoutHash(identifier: string): number {
  return calculateHash('holdout-', identifier);
}
