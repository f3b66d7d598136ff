import fc from 'fast-check';
import { compressToBase64, decompressFromBase64 } from 'lz-string';
import { Lz64Decoder, type Lz64Progress } from '../src/lz64';
import { lz64Bomb, lz64BombLength } from './support/lz64-bomb';

function utf8(decoder: Lz64Decoder, deadline = Infinity): { text: Buffer; calls: number } {
  const text = Buffer.alloc(decoder.utf8Bytes);
  let calls = 1;
  while (!decoder.encode(text, deadline)) calls++;
  return { text, calls };
}

/** Runs the decoder to its end, giving it every buffer it asks for; the UTF-8 output or how it stopped. */
function decode(input: string, maxBytes = 1 << 30): { text?: Buffer; stopped?: Lz64Progress; bufferBytes: number } {
  const decoder = new Lz64Decoder(Buffer.from(input, 'latin1'), maxBytes);
  for (;;) {
    const progress = decoder.run(Infinity);
    if (progress === 'grow') decoder.grow();
    else if (progress === 'done') return { text: utf8(decoder).text, bufferBytes: decoder.bufferBytes };
    else return { stopped: progress, bufferBytes: decoder.bufferBytes };
  }
}

/** What capture made of lz-string's answer: its text as UTF-8, or undefined for the answers it rejects. */
function lzString(input: string): Buffer | undefined {
  let text: string | null;
  try {
    text = decompressFromBase64(input);
  } catch {
    return undefined;
  }
  return text ? Buffer.from(text, 'utf8') : undefined;
}

const utf16Units = fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 300 }).map((units) => String.fromCharCode(...units));
/** Few distinct characters, so that long dictionary entries and the entry-being-defined code occur. */
const repetitive = fc.array(fc.constantFrom('a', 'b', 'é', '€', '😀', '\ud800', '\udc00', '\udbff\udfff'), { maxLength: 2000 }).map((parts) => parts.join(''));
const texts = fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ unit: 'grapheme', maxLength: 300 }), utf16Units, repetitive);

describe('the bounded lz64 decoder', () => {
  it('gives lz-string’s text, byte for byte, for whatever lz-string compresses', () => {
    fc.assert(
      fc.property(texts, (text) => {
        const compressed = compressToBase64(text);
        expect(decode(compressed).text).toEqual(lzString(compressed));
      }),
      { numRuns: 3000 },
    );
  });

  it('accepts output of exactly the limit in UTF-8 bytes and stops one byte short of it', () => {
    fc.assert(
      fc.property(texts, (text) => {
        fc.pre(text.length > 0);
        const compressed = compressToBase64(text);
        const size = Buffer.byteLength(text, 'utf8');
        expect(decode(compressed, size).text?.length).toBe(size);
        expect(decode(compressed, size - 1).stopped).toBe('too-large');
      }),
      { numRuns: 1000 },
    );
  });

  it('rejects what lz-string rejects and decodes the rest of arbitrary input alike', () => {
    const junk = fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=%-_ '), maxLength: 40 });
    fc.assert(
      fc.property(junk, (input) => {
        const ours = decode(input);
        const theirs = lzString(input);
        if (ours.text) expect(ours.text).toEqual(theirs);
        // lz-string's one lenience: a first code of 3 (a first character from `w` on) decodes to text with
        // "undefined" in places; it never comes from a compressor, and is rejected here.
        else if (!/^[w-z0-9+/]/.test(input)) expect(theirs).toBeUndefined();
      }),
      { numRuns: 20000 },
    );
  });

  it('stops a bomb as soon as its output passes the limit, holding no more than the limit in UTF-16', () => {
    const bomb = lz64Bomb(34_640);
    expect(bomb.length).toBeLessThan(100_000);
    expect(lz64BombLength(34_640)).toBeGreaterThan(600_000_000);
    const maxBytes = 4 * 1024 * 1024;
    const result = decode(bomb, maxBytes);
    expect(result.stopped).toBe('too-large');
    expect(result.bufferBytes).toBeLessThanOrEqual(2 * (maxBytes + 1));
  });

  it('writes bombs lz-string decodes to the repeated character', () => {
    for (const codes of [0, 1, 2, 5, 300]) expect(decompressFromBase64(lz64Bomb(codes))).toBe('a'.repeat(lz64BombLength(codes)));
  });

  it('pauses decoding and encoding when its time slice is over, and resumes where it stopped', () => {
    const decoder = new Lz64Decoder(Buffer.from(lz64Bomb(3000), 'latin1'), 1 << 30);
    const steps: Lz64Progress[] = [];
    for (let progress = decoder.run(0); progress !== 'done'; progress = decoder.run(0)) {
      steps.push(progress);
      if (progress === 'grow') decoder.grow();
    }
    expect(steps).toContain('pause');
    const { text, calls } = utf8(decoder, 0);
    expect(calls).toBeGreaterThan(1);
    expect(text.equals(Buffer.alloc(lz64BombLength(3000), 'a'))).toBe(true);
  });

  it('never splits a surrogate pair between two pieces of its UTF-8', () => {
    // A high surrogate as the millionth unit: the first piece ends one unit later.
    const text = 'a'.repeat((1 << 20) - 1) + '😀'.repeat(3);
    const decoder = new Lz64Decoder(Buffer.from(compressToBase64(text), 'latin1'), 1 << 30);
    for (let progress = decoder.run(Infinity); progress !== 'done'; progress = decoder.run(Infinity)) decoder.grow();
    expect(utf8(decoder, 0).text.toString('utf8')).toBe(text);
  });
});
