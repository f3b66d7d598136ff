/**
 * Hostile values for the fuzz suite: JSON documents built to hit the edges a client controls (types, depth,
 * sizes, characters Postgres or UTF-8 refuse, numbers past the safe range), and byte-level damage to valid
 * encodings. Everything is drawn from one seeded generator so a failing case can be replayed from its seed.
 */
export type Random = () => number;

export const int = (random: Random, below: number): number => Math.floor(random() * below);
export const pick = <T>(random: Random, items: readonly T[]): T => items[int(random, items.length)]!;
export const chance = (random: Random, p: number): boolean => random() < p;

const NASTY_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfff',
  '\ud83d\ude00',
  '\uffff',
  '=1+2',
  '+SUM(1,2)',
  '-2+3',
  '@SUM(1,2)',
  '\t=cmd',
  '\r=cmd',
  '=HYPERLINK("http://127.0.0.1/","x")',
  "' OR 1=1 --",
  '"; DROP TABLE persons; --',
  '%',
  '_',
  '\\',
  '%_\\',
  '../../etc/passwd',
  '${jndi:ldap://127.0.0.1/a}',
  '<script>alert(1)</script>',
  'NaN',
  'Infinity',
  '-Infinity',
  'null',
  'true',
  '1e20',
  '-0',
  '9007199254740993',
  '0x10',
  '2024-13-45T25:61:61Z',
  '1970-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '-7d',
  'all',
  'phc_',
  'phx_',
  '$pageview',
  '$identify',
  '$groupidentify',
  '$group_identify',
  '$create_alias',
  '$merge_dangerously',
  '$set',
  '__proto__',
  'constructor',
  'email',
  'distinct_id',
];

const NASTY_NUMBERS: readonly number[] = [
  0,
  -1,
  1,
  0.5,
  -0.5,
  1e20,
  -1e20,
  2 ** 53,
  2 ** 53 + 2,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  2 ** 31,
  2 ** 63,
  101,
  100,
  5,
  4,
  1000,
  1001,
];

export function nastyString(random: Random): string {
  switch (int(random, 6)) {
    case 0:
      return pick(random, NASTY_STRINGS).repeat(1 + int(random, 3));
    case 1: {
      // A long string, sometimes across the 200-character cuts capture makes, ending in half a surrogate pair.
      const length = pick(random, [199, 200, 201, 1000, 70_000]);
      return 'a'.repeat(length - 1) + pick(random, ['\ud83d', 'b', '\ud83d\ude00', '\u0000']);
    }
    case 2: {
      let text = '';
      const length = int(random, 24);
      for (let i = 0; i < length; i++) text += String.fromCharCode(int(random, 0x10000));
      return text;
    }
    default:
      return pick(random, NASTY_STRINGS);
  }
}

export function nastyNumber(random: Random): number {
  return chance(random, 0.7) ? pick(random, NASTY_NUMBERS) : (random() - 0.5) * 10 ** int(random, 25);
}

/** A JSON value of any type, at most `depth` levels deep. */
export function jsonValue(random: Random, depth = 3): unknown {
  const kind = int(random, depth > 0 ? 8 : 5);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return chance(random, 0.5);
    case 2:
      return nastyNumber(random);
    case 3:
    case 4:
      return nastyString(random);
    case 5:
      return Array.from({ length: int(random, 4) }, () => jsonValue(random, depth - 1));
    default: {
      const object: Record<string, unknown> = {};
      const keys = int(random, 5);
      for (let i = 0; i < keys; i++) object[nastyString(random)] = jsonValue(random, depth - 1);
      return object;
    }
  }
}

/** JSON text nested `depth` levels deep, built as text (building the object would itself recurse that deep). */
export function deepJson(depth: number, open = '[', close = ']'): string {
  const [o, c] = open === '{' ? ['{"a":', '}'] : [open, close];
  return o.repeat(depth) + '1' + c.repeat(depth);
}

/**
 * Replaces values at random paths of a valid document with hostile ones (wrong types, nasty strings, deep
 * nesting), keeping its shape elsewhere so the request gets past the first checks.
 */
export function mutateDocument(random: Random, document: unknown, rate = 0.25): unknown {
  if (chance(random, rate / 4)) return jsonValue(random);
  if (Array.isArray(document)) {
    const items = document.map((item) => mutateDocument(random, item, rate));
    if (chance(random, rate / 2)) items.push(jsonValue(random));
    return items;
  }
  if (document !== null && typeof document === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(document)) {
      if (chance(random, rate / 4)) continue;
      copy[chance(random, rate / 8) ? nastyString(random) : key] = chance(random, rate) ? jsonValue(random) : mutateDocument(random, value, rate);
    }
    if (chance(random, rate / 2)) copy[nastyString(random)] = jsonValue(random);
    return copy;
  }
  return chance(random, rate) ? jsonValue(random, 1) : document;
}

/** Byte-level damage: flipped bits, cut ends, inserted and duplicated runs. */
export function damageBytes(random: Random, bytes: Buffer): Buffer {
  const out = Buffer.from(bytes);
  switch (int(random, 4)) {
    case 0: {
      for (let i = 0; i < 1 + int(random, 4) && out.length > 0; i++) out[int(random, out.length)]! ^= 1 << int(random, 8);
      return out;
    }
    case 1:
      return out.subarray(0, int(random, out.length + 1));
    case 2: {
      const at = int(random, out.length + 1);
      return Buffer.concat([out.subarray(0, at), Buffer.from(Array.from({ length: 1 + int(random, 16) }, () => int(random, 256))), out.subarray(at)]);
    }
    default: {
      const at = int(random, out.length + 1);
      const run = out.subarray(at, at + 1 + int(random, 64));
      return Buffer.concat([out.subarray(0, at), run, run, run, out.subarray(at)]);
    }
  }
}
