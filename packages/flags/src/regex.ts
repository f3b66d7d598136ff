import { createContext, Script, type Context } from 'node:vm';
import { RE2JS } from 're2js';

/** A compiled `regex`/`not_regex` pattern. */
export interface PropertyRegex {
  /**
   * Whether the pattern occurs in `text`; null when that could not be decided within `timeoutMs` (a
   * backtracking match; RE2's are linear in the text and always decided).
   */
  test(text: string, timeoutMs: number): boolean | null;
}

/**
 * PostHog stores `regex`/`not_regex` patterns written for Python (`re`) and matched by Rust (`fancy_regex`),
 * while the text they are matched against is a client's property value, up to a request's 20 MiB. Rust runs
 * a pattern on the linear-time `regex` crate unless it needs backtracking (back-references, look-around), and
 * caps backtracking; the same split here:
 *
 * 1. A pattern RE2 accepts is matched by RE2 (re2js), in time linear in the text whatever the pattern. RE2's
 *    syntax is Python's and Rust's in the common cases: inline flags anywhere (`(?i)`, `a(?i)b`), named groups
 *    `(?P<name>…)`, `\A` and `\z`, a leading `]` in a class as a literal.
 * 2. Any other pattern is translated to a JavaScript RegExp (below) and run by V8's backtracking engine within
 *    a time budget (`RegexBudget`); a match that takes longer is undecided, and an undecided match is a
 *    non-match for `regex` and `not_regex` alike, as Rust's backtrack-limit error is.
 *
 * A pattern neither accepts is invalid, and an invalid pattern never matches — for `regex` *and* `not_regex`,
 * as in Rust `match_property`.
 *
 * Translated for JavaScript:
 * - leading inline flags `(?i)`, `(?m)`, `(?s)` (and combinations; `u` is accepted and ignored because the
 *   Unicode mode is tried first anyway) become JS flags;
 * - `(?P<name>…)` and `(?P=name)` become `(?<name>…)` and `\k<name>`;
 * - `\A` becomes "start of input" and `\z`/`\Z` "end of input", independent of the `m` flag.
 * Not supported there (the pattern is invalid): inline flags anywhere but the start, scoped flags `(?i:…)`, the
 * verbose flag `x`, possessive quantifiers and atomic groups.
 *
 * The Unicode mode (`u`) is tried first, closest to Rust's Unicode-aware engine; patterns only the lenient
 * Annex-B syntax accepts are compiled without it.
 */
export function compileRegex(pattern: string): PropertyRegex | null {
  try {
    const re2 = RE2JS.compile(pattern);
    return { test: (text) => re2.test(text) };
  } catch {
    // Not RE2 syntax: a back-reference, a look-around, or a Python spelling RE2 lacks.
  }
  const translated = translate(pattern);
  if (translated === null) return null;
  for (const unicode of ['u', '']) {
    try {
      return budgeted(new RegExp(translated.source, translated.flags + unicode));
    } catch {
      // Try the next syntax mode; the pattern is invalid only when neither accepts it.
    }
  }
  return null;
}

/**
 * How long one backtracking match may run. Matches of real patterns take microseconds, but the budget is wall
 * time, so it must also cover the main thread being descheduled on a busy machine: at 20 ms a look-around
 * pattern failed to match under a loaded test run.
 */
const MATCH_BUDGET_MS = 100;
/**
 * How long all the regex matches of one request may take together: twice one match's, so a request with
 * a hundred pathological conditions costs about what one with two does.
 */
export const REQUEST_REGEX_BUDGET_MS = 2 * MATCH_BUDGET_MS;

/**
 * What one request may spend on regex matching, and its answers so far. A pattern is matched against a text
 * once per request (many conditions and cohorts repeat both); the time matches take is summed, and once
 * `limitMs` is spent, the matches still to come are undecided without being run — a non-match, as for one
 * that ran out of its own time. Patterns themselves are compiled once per flag definitions (`compileFlags`).
 */
export class RegexBudget {
  /** Matches run (a repeated pattern and text counts once). */
  matches = 0;
  /** Matches left undecided: out of time while running, or not run because the budget was spent. */
  undecided = 0;
  spentMs = 0;
  private readonly answers = new Map<PropertyRegex, Map<string, boolean | null>>();

  constructor(readonly limitMs: number = REQUEST_REGEX_BUDGET_MS) {}

  test(regex: PropertyRegex, text: string): boolean | null {
    let byText = this.answers.get(regex);
    if (byText === undefined) {
      byText = new Map();
      this.answers.set(regex, byText);
    }
    const known = byText.get(text);
    if (known !== undefined) return known;
    const remaining = this.limitMs - this.spentMs;
    let answer: boolean | null = null;
    if (remaining > 0) {
      const allotted = Math.min(MATCH_BUDGET_MS, Math.ceil(remaining));
      const started = performance.now();
      answer = regex.test(text, allotted);
      // A match stopped for time spent all it was allotted, even when the clock read here says a little less (the
      // vm's watchdog can fire early against performance.now()): otherwise a sliver is left and a third match runs.
      const elapsed = performance.now() - started;
      this.spentMs += answer === null ? Math.max(elapsed, allotted) : elapsed;
      this.matches += 1;
    }
    if (answer === null) this.undecided += 1;
    byText.set(text, answer);
    return answer;
  }
}

const TEST = new Script('regex.test(text)');
let sandbox: Context | undefined;

/** `regex` run where V8 can interrupt it: a vm script with a timeout stops even a regex mid-backtrack. */
function budgeted(regex: RegExp): PropertyRegex {
  return {
    test(text, timeoutMs) {
      sandbox ??= createContext({});
      sandbox.regex = regex;
      sandbox.text = text;
      try {
        return TEST.runInContext(sandbox, { timeout: timeoutMs }) === true;
      } catch (error) {
        if ((error as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return null;
        throw error;
      } finally {
        // The sandbox outlives the match: it must not keep a client's text, which may be megabytes, alive.
        sandbox.text = '';
      }
    },
  };
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
