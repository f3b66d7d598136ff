/**
 * PostHog stores `regex`/`not_regex` patterns written for Python (`re`) and matched by Rust (`fancy_regex`).
 * JavaScript's engine differs in a few common places; this translates those and otherwise lets the JS
 * engine decide. A pattern that cannot be translated or compiled is invalid, and an invalid pattern never
 * matches — for `regex` *and* `not_regex`, as in Rust `match_property`.
 *
 * Translated:
 * - leading inline flags `(?i)`, `(?m)`, `(?s)` (and combinations; `u` is accepted and ignored because the
 *   Unicode mode is tried first anyway) become JS flags;
 * - `(?P<name>…)` and `(?P=name)` become `(?<name>…)` and `\k<name>`;
 * - `\A` becomes "start of input" and `\z`/`\Z` "end of input", independent of the `m` flag.
 * Not supported (the pattern is treated as invalid): inline flags anywhere but the start, scoped flags
 * `(?i:…)`, the verbose flag `x`, possessive quantifiers and atomic groups.
 *
 * The Unicode mode (`u`) is tried first, closest to Rust's Unicode-aware engine; patterns only the lenient
 * Annex-B syntax accepts (such as `[\w-.]`) are compiled without it.
 *
 * Caveat: Rust caps backtracking at 10,000 steps; V8 has no such cap, so a catastrophic pattern stored by an
 * administrator can be slow here. Patterns come from the management API, never from SDK requests.
 */
export function compileRegex(pattern: string): RegExp | null {
  const translated = translate(pattern);
  if (translated === null) return null;
  for (const unicode of ['u', '']) {
    try {
      return new RegExp(translated.source, translated.flags + unicode);
    } catch {
      // Try the next syntax mode; the pattern is invalid only when neither accepts it.
    }
  }
  return null;
}

const LEADING_FLAGS = /^\(\?([a-zA-Z]+)\)/;
const JS_FLAGS: Readonly<Record<string, string>> = { i: 'i', m: 'm', s: 's', u: '' };

function translate(pattern: string): { source: string; flags: string } | null {
  let rest = pattern;
  const flags = new Set<string>();
  for (let leading = LEADING_FLAGS.exec(rest); leading !== null; leading = LEADING_FLAGS.exec(rest)) {
    for (const flag of leading[1] ?? '') {
      const jsFlag = JS_FLAGS[flag];
      if (jsFlag === undefined) return null;
      if (jsFlag !== '') flags.add(jsFlag);
    }
    rest = rest.slice(leading[0].length);
  }

  let source = '';
  // Characters of the current character class seen so far (a leading `^` excluded); -1 outside a class.
  let classLength = -1;
  for (let i = 0; i < rest.length; i += 1) {
    const char = rest[i] ?? '';
    if (classLength >= 0) {
      if (char === '\\') {
        source += `\\${rest[i + 1] ?? ''}`;
        i += 1;
      } else if (char === ']' && classLength === 0) {
        // Python and Rust read a `]` right after `[` or `[^` as a literal; JS would read an empty class.
        source += '\\]';
      } else if (char === ']') {
        classLength = -1;
        source += char;
        continue;
      } else if (char === '^' && classLength === 0 && source.endsWith('[')) {
        source += char;
        continue;
      } else {
        source += char;
      }
      classLength += 1;
    } else if (char === '\\') {
      const next = rest[i + 1] ?? '';
      i += 1;
      if (next === 'A') source += '(?<![\\s\\S])';
      else if (next === 'z' || next === 'Z') source += '(?![\\s\\S])';
      else source += `\\${next}`;
    } else if (char === '[') {
      classLength = 0;
      source += char;
    } else if (rest.startsWith('(?P<', i)) {
      source += '(?<';
      i += 3;
    } else if (rest.startsWith('(?P=', i)) {
      const end = rest.indexOf(')', i);
      if (end === -1) return null;
      source += `\\k<${rest.slice(i + 4, end)}>`;
      i = end;
    } else {
      source += char;
    }
  }
  return { source, flags: [...flags].join('') };
}
