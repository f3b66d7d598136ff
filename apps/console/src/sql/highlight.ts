/**
 * HogQL as coloured text for the SQL editor: a small tokenizer (keywords, functions, strings, numbers, quoted
 * names, `{placeholders}`, comments) and the pieces to draw, with the characters of an error's range marked.
 * It only colours; the server's parser decides what is valid (HogQLMetadata). No DOM here, for unit tests.
 */

export type TokenKind = 'keyword' | 'function' | 'string' | 'number' | 'identifier' | 'placeholder' | 'comment' | 'operator' | 'space';

export interface Token {
  kind: TokenKind;
  text: string;
}

/** A run of text to draw with one style: its token kind, and whether it lies in the error's range. */
export interface Piece extends Token {
  error: boolean;
}

const KEYWORDS = new Set(
  (
    'all and anti any array as asc asof between both by case cast cross cube desc distinct else end except exists ' +
    'false first following from full global group having if ilike in inner interval intersect is join last lateral ' +
    'left like limit not null nulls offset on or order outer over partition preceding prewhere range recursive right ' +
    'rollup row rows select semi settings then ties to top totals true unbounded union using when where window with'
  ).split(' '),
);

/** Each alternative is one token kind, in this order; the first that matches at the position wins. */
const PATTERN = new RegExp(
  [
    /(--[^\n]*|\/\*[\s\S]*?(?:\*\/|$))/.source, // comment
    /('(?:[^'\\]|\\[\s\S]|'')*'?)/.source, // string
    /("(?:[^"\\]|\\[\s\S])*"?|`(?:[^`\\]|\\[\s\S])*`?)/.source, // quoted identifier
    /(\{[^{}\s]*\})/.source, // placeholder
    /((?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)/.source, // number
    /([A-Za-z_$][\w$]*)/.source, // word
    /(\s+)/.source, // space
  ].join('|'),
  'iy',
);

const KINDS: TokenKind[] = ['comment', 'string', 'identifier', 'placeholder', 'number', 'identifier', 'space'];

/** `text` as tokens whose texts join back to `text`. */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let position = 0;
  while (position < text.length) {
    PATTERN.lastIndex = position;
    const match = PATTERN.exec(text);
    if (!match) {
      // One character the patterns do not start with: an operator or punctuation.
      push(tokens, 'operator', text[position]!);
      position += 1;
      continue;
    }
    const group = match.slice(1).findIndex((value) => value !== undefined);
    let kind = KINDS[group]!;
    const word = match[0];
    if (group === 5) {
      if (KEYWORDS.has(word.toLowerCase())) kind = 'keyword';
      else if (/^\s*\(/.test(text.slice(position + word.length))) kind = 'function';
    }
    push(tokens, kind, word);
    position += word.length;
  }
  return tokens;
}

/** Appends, joining neighbouring operators into one token. */
function push(tokens: Token[], kind: TokenKind, text: string): void {
  const last = tokens[tokens.length - 1];
  if (kind === 'operator' && last?.kind === 'operator') last.text += text;
  else tokens.push({ kind, text });
}

/**
 * The tokens of `text` cut where the error range `[start, end)` begins and ends, the pieces inside it marked.
 * An empty range (or one at the very end) marks one character, or a space appended after the text, so that it shows.
 */
export function highlight(text: string, error: { start: number; end: number } | null = null): Piece[] {
  const source = error && error.start >= text.length ? `${text} ` : text;
  const range = error && { start: Math.max(0, error.start), end: Math.max(error.end, error.start + 1) };
  const pieces: Piece[] = [];
  let offset = 0;
  for (const token of tokenize(source)) {
    const from = offset;
    const to = offset + token.text.length;
    offset = to;
    const cuts = range ? [from, ...[range.start, range.end].filter((cut) => cut > from && cut < to), to] : [from, to];
    for (let index = 0; index + 1 < cuts.length; index++) {
      const [start, end] = [cuts[index]!, cuts[index + 1]!];
      pieces.push({ kind: token.kind, text: source.slice(start, end), error: range !== null && start >= range.start && end <= range.end });
    }
  }
  return pieces;
}

/** The 1-based line and column of character `offset` in `text`. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, offset)).split('\n');
  return { line: before.length, column: before[before.length - 1]!.length + 1 };
}
