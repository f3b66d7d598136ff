/**
 * lz-string's `compressToBase64` format, decoded with bounds. lz-string's own decoder builds its output as one
 * string in a single synchronous call: a 250 KB body expands to gigabytes and holds the event loop the whole
 * time. This one stops as soon as the output passes a byte limit and works in slices the caller can yield
 * between, and gives the same text for everything lz-string compresses.
 *
 * The format is LZW over UTF-16 code units. Bits are taken six per base64 character, most significant first,
 * and a number of `width` bits is read least significant bit first. Codes 0 and 1 bring a literal code unit of
 * 8 or 16 bits (a new dictionary entry), 2 ends the stream, and any other code names a dictionary entry, or the
 * entry about to be defined (the previous output plus its own first unit). After each output the previous
 * output plus the new output's first unit becomes an entry; the code width grows by one each time the
 * dictionary has used up the codes of the current width.
 *
 * Every entry is a run of the output written so far, so the dictionary is offsets into the output and an
 * entry is emitted with one copy; the output is UTF-16LE in a Buffer so that Node turns it into text at once.
 * The input is read as one little-endian bit stream (each sextet bit-reversed), several bits at a time.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** Each byte's six bits, first-read bit lowest; lz-string reads `=` and bytes outside the alphabet as zeros. */
const SEXTETS = new Uint8Array(256);
for (let i = 0; i < ALPHABET.length; i++) {
  let reversed = 0;
  for (let bit = 0; bit < 6; bit++) reversed |= ((i >> bit) & 1) << (5 - bit);
  SEXTETS[ALPHABET.charCodeAt(i)] = reversed;
}
/** Bits read at once: with the up to five left over they stay within a 32-bit integer. */
const MAX_READ_BITS = 24;

const END = 2;
/** Below this many units a copy loop beats a call into Buffer.copy. */
const SHORT_COPY_UNITS = 8;
const FIRST_ENTRY = 3;
/** Cheap to reach; the clock is read only every so many codes or copied units. */
const CODES_PER_CLOCK_CHECK = 1024;
const UNITS_PER_CLOCK_CHECK = 1 << 20;
const UNITS_PER_ENCODE = 1 << 20;

export type Lz64Progress = 'done' | 'invalid' | 'too-large' | 'grow' | 'pause';

export class Lz64Decoder {
  /** Bits taken from the input but not yet read, lowest first; and how many bits were read in all. */
  private pending = 0;
  private pendingBits = 0;
  private nextSextet = 0;
  private bitsRead = 0;

  /** Entry i is out[starts[i], starts[i] + lengths[i]); tails[i] is the UTF-8 size of all but its first unit. */
  private starts = new Int32Array(64);
  private lengths = new Int32Array(64);
  private tails = new Float64Array(64);
  private size = FIRST_ENTRY;
  private width = 3;
  private codesUntilWider = 4;
  private longest = 1;

  private out = Buffer.alloc(0);
  /** Code units written, and their size in UTF-8 (a lone surrogate as U+FFFD, as Node encodes it). */
  private units = 0;
  private bytes = 0;
  /** The previous output: where it was written, its length and its tail size. */
  private previousStart = 0;
  private previousLength = 0;
  private previousTail = 0;
  private wantedUnits = 0;
  private encodedUnits = 0;
  private encodedBytes = 0;

  constructor(
    private readonly input: Uint8Array,
    private readonly maxBytes: number,
  ) {}

  /** Bytes of output buffer the decoder asks for on `grow`. */
  get growthBytes(): number {
    return this.wantedUnits * 2;
  }

  /** Takes the buffer asked for; answers the bytes of the one it replaced. */
  grow(): number {
    const replaced = this.out.length;
    const out = Buffer.allocUnsafe(this.growthBytes);
    this.out.copy(out, 0, 0, this.units * 2);
    this.out = out;
    return replaced;
  }

  /** Bytes of output buffer held. */
  get bufferBytes(): number {
    return this.out.length;
  }

  /** The UTF-8 size of the output so far: of the whole output once `run` answered `done`. */
  get utf8Bytes(): number {
    return this.bytes;
  }

  /**
   * Writes the output as UTF-8 into `target` (of `utf8Bytes`), from where the previous call stopped, until done
   * (true) or past `deadline` (false: call again). Pieces never split a surrogate pair.
   */
  encode(target: Buffer, deadline: number): boolean {
    while (this.encodedUnits < this.units) {
      let end = Math.min(this.units, this.encodedUnits + UNITS_PER_ENCODE);
      const last = this.unitAt(end - 1);
      if (end < this.units && last >= 0xd800 && last <= 0xdbff) end++;
      this.encodedBytes += target.write(this.out.toString('utf16le', this.encodedUnits * 2, end * 2), this.encodedBytes, 'utf8');
      this.encodedUnits = end;
      if (performance.now() >= deadline) return this.encodedUnits === this.units;
    }
    return true;
  }

  /**
   * Decodes until the stream ends or fails, the output buffer must grow (`grow`, then run again), or the
   * clock passes `deadline` (`pause`: run again later).
   */
  run(deadline: number): Lz64Progress {
    if (this.size === FIRST_ENTRY) {
      if (this.input.length === 0) return 'invalid';
      if (!this.hasRoom(1)) return 'grow';
      const kind = this.read(2);
      // lz-string answers "" to an immediate end, and garbage (or a throw) to the unused kind 3.
      if (kind > 1) return 'invalid';
      const unit = this.read(kind === 0 ? 8 : 16);
      this.setUnit(0, unit);
      this.define(0, 1, 0);
      this.units = 1;
      this.bytes = unitBytes(unit, -1);
      if (this.bytes > this.maxBytes) return 'too-large';
      this.previousLength = 1;
    }
    let codes = 0;
    let unitsAtCheck = this.units;
    const inputBits = this.input.length * 6;
    for (;;) {
      // lz-string gives up, whatever it has decoded, once the last character is used up without an end code.
      if (this.bitsRead >= inputBits) return 'invalid';
      if (!this.hasRoom(this.longest + 1)) return 'grow';
      if (++codes === CODES_PER_CLOCK_CHECK || this.units - unitsAtCheck > UNITS_PER_CLOCK_CHECK) {
        if (performance.now() >= deadline) return 'pause';
        codes = 0;
        unitsAtCheck = this.units;
      }

      let code = this.read(this.width);
      if (code === END) return 'done';
      if (code < END) {
        // A literal: a one-unit entry at the place it is about to be output.
        this.setUnit(this.units, this.read(code === 0 ? 8 : 16));
        code = this.size;
        this.define(this.units, 1, 0);
        this.countCode();
      }

      const at = this.units;
      const previousLast = this.unitAt(at - 1);
      let start: number;
      let length: number;
      let tail: number;
      if (code < this.size) {
        start = this.starts[code]!;
        length = this.lengths[code]!;
        tail = this.tails[code]!;
      } else if (code === this.size) {
        start = this.previousStart;
        length = this.previousLength + 1;
        tail = this.previousTail + unitBytes(this.unitAt(start), previousLast);
      } else {
        return 'invalid';
      }
      const first = this.unitAt(start);
      const entryBytes = unitBytes(first, previousLast) + tail;
      if (this.bytes + entryBytes > this.maxBytes) return 'too-large';

      if (start !== at) {
        // For the entry being defined, the run is the previous output (which ends at `at`) and its first unit.
        const copied = code === this.size ? length - 1 : length;
        if (copied > SHORT_COPY_UNITS) this.out.copy(this.out, at * 2, start * 2, (start + copied) * 2);
        else for (let i = 0; i < copied * 2; i++) this.out[at * 2 + i] = this.out[start * 2 + i]!;
        if (copied < length) this.setUnit(at + copied, first);
      }
      this.define(this.previousStart, this.previousLength + 1, this.previousTail + unitBytes(first, previousLast));
      this.countCode();
      this.previousStart = at;
      this.previousLength = length;
      this.previousTail = tail;
      this.units += length;
      this.bytes += entryBytes;
    }
  }

  /** A number of `width` bits; past the input's end the bits are zeros, as lz-string reads them. */
  private read(width: number): number {
    if (width > MAX_READ_BITS) return this.read(MAX_READ_BITS) + this.read(width - MAX_READ_BITS) * 2 ** MAX_READ_BITS;
    while (this.pendingBits < width) {
      const sextet = this.nextSextet < this.input.length ? SEXTETS[this.input[this.nextSextet]!]! : 0;
      this.nextSextet++;
      this.pending |= sextet << this.pendingBits;
      this.pendingBits += 6;
    }
    const number = this.pending & ((1 << width) - 1);
    this.pending >>>= width;
    this.pendingBits -= width;
    this.bitsRead += width;
    return number;
  }

  private define(start: number, length: number, tail: number): void {
    if (this.size === this.starts.length) {
      this.starts = grown(this.starts, new Int32Array(this.size * 2));
      this.lengths = grown(this.lengths, new Int32Array(this.size * 2));
      this.tails = grown(this.tails, new Float64Array(this.size * 2));
    }
    this.starts[this.size] = start;
    this.lengths[this.size] = length;
    this.tails[this.size] = tail;
    this.size++;
    if (length > this.longest) this.longest = length;
  }

  /** Every entry defined after the first uses up one code of the current width. */
  private countCode(): void {
    if (--this.codesUntilWider === 0) {
      this.codesUntilWider = 2 ** this.width;
      this.width++;
    }
  }

  private unitAt(index: number): number {
    return index < 0 ? -1 : this.out[index * 2]! | (this.out[index * 2 + 1]! << 8);
  }

  private setUnit(index: number, unit: number): void {
    this.out[index * 2] = unit & 0xff;
    this.out[index * 2 + 1] = unit >> 8;
  }

  /**
   * Room for `units` more, or `wantedUnits` set. Output within the limit has at most `maxBytes` units (each is
   * a byte of UTF-8 at least); one more is room for a literal that is written before its size is checked.
   */
  private hasRoom(units: number): boolean {
    const most = this.maxBytes + 1;
    const needed = Math.min(this.units + units, most);
    if (needed * 2 <= this.out.length) return true;
    const capacity = this.out.length / 2;
    this.wantedUnits = Math.min(most, Math.max(needed, capacity * 2, this.input.length * 2, 1024));
    return false;
  }
}

function grown<T extends Int32Array | Float64Array>(from: T, to: T): T {
  to.set(from);
  return to;
}

/** The UTF-8 size of one code unit after `previous`: a low surrogate completes a pair its high one began. */
function unitBytes(unit: number, previous: number): number {
  if (unit < 0x80) return 1;
  if (unit < 0x800) return 2;
  if (unit >= 0xdc00 && unit <= 0xdfff && previous >= 0xd800 && previous <= 0xdbff) return 1;
  return 3;
}
