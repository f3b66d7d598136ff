import { createHash } from 'node:crypto';
import { calculateHash } from '@plover/flags';

/** The reference reduction: the first 15 hex digits of the SHA-1 as a BigInt, divided by 2^60 - 1. */
function reference(text: string): number {
  const hex = createHash('sha1').update(text, 'utf8').digest('hex');
  return Number(BigInt(`0x${hex.slice(0, 15)}`)) / Number(0xfffffffffffffffn);
}

describe('calculateHash', () => {
  it('reads the first 60 bits of the digest bytes exactly as the hex route does', () => {
    const identifiers = ['', 'u', 'u42', 'ünïcödé', '😀', 'a'.repeat(200), 'distinct "id"', '\u0000'];
    for (let i = 0; i < 2000; i += 1) identifiers.push(`user-${i * 7919}`);
    for (const identifier of identifiers) {
      for (const [prefix, salt] of [
        ['flag.', ''],
        ['variant-3.', 'variant'],
        ['holdout-', ''],
      ] as const) {
        expect(calculateHash(prefix, identifier, salt)).toBe(reference(`${prefix}${identifier}${salt}`));
      }
    }
  });
});
