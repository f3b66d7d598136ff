import { decodeFlagsBody, nullNonFiniteNumbers } from '../src/decode';

const MIB = 1024 * 1024;

function decode(text: string): Promise<Record<string, unknown> | undefined> {
  return decodeFlagsBody({ query: new URLSearchParams(), contentType: 'application/json', contentEncoding: undefined, body: Buffer.from(text) });
}

/** How many times `fn` reads a character of a string with charCodeAt. */
function charactersRead(fn: () => void): number {
  const descriptor = Object.getOwnPropertyDescriptor(String.prototype, 'charCodeAt')!;
  const original = descriptor.value as (this: string, index: number) => number;
  let reads = 0;
  Object.defineProperty(String.prototype, 'charCodeAt', {
    ...descriptor,
    value(this: string, index: number): number {
      reads += 1;
      return original.call(this, index);
    },
  });
  try {
    fn();
  } finally {
    Object.defineProperty(String.prototype, 'charCodeAt', descriptor);
  }
  return reads;
}

describe('NaN and Infinity in flag request bodies', () => {
  it('reads NaN, Infinity and -Infinity values as null, as Python-written JSON needs', async () => {
    await expect(decode('{"a": NaN, "b": [Infinity, -Infinity], "c": {"d":NaN}}')).resolves.toEqual({ a: null, b: [null, null], c: { d: null } });
  });

  it('leaves the words alone inside strings, escaped quotes and backslashes included', async () => {
    const body = '{"s": "NaN \\" Infinity", "t": "\\\\", "u": NaN, "NaN": "-Infinity"}';
    await expect(decode(body)).resolves.toEqual({ s: 'NaN " Infinity', t: '\\', u: null, NaN: '-Infinity' });
  });

  it('still refuses a body that is not JSON once the tokens are replaced', async () => {
    for (const body of ['{"a": NaNx}', '{"a": 1NaN}', '{"a": [NaN x]}', '{NaN: 1}', '{"a": - Infinity}']) {
      await expect(decode(body)).rejects.toMatchObject({ status: 400, code: 'malformed_data' });
    }
  });

  it('reads each character of a 20 MiB body at most once, whatever its shape', () => {
    const spaces = ' '.repeat(20 * MIB);
    const escapes = '\\"NaN'.repeat(5 * MIB);
    // [body, what it becomes]: shapes that made a look-behind rewrite quadratic, a string of escaped quotes.
    const cases: [string, string][] = [
      [`{"a":[${spaces}NaN x]}`, `{"a":[${spaces}null x]}`],
      [`{"a":${spaces}-Infinity${spaces}}`, `{"a":${spaces}null${spaces}}`],
      [`{"s":"${escapes}"}`, `{"s":"${escapes}"}`],
      ['NaN,'.repeat(5 * MIB), 'null,'.repeat(5 * MIB)],
    ];
    for (const [body, expected] of cases) {
      let rewritten = '';
      const reads = charactersRead(() => (rewritten = nullNonFiniteNumbers(body)));
      // The lower bound shows the count is real: the scan does read the body through charCodeAt.
      expect(reads).toBeGreaterThan(body.length / 4);
      expect(reads).toBeLessThanOrEqual(body.length);
      expect(rewritten === expected).toBe(true);
    }
  });
});
