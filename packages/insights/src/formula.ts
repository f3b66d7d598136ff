/**
 * Trend formulas (`A+B*2`, `(A-B)/A`): letters name series in order. Parsed by a small recursive-descent
 * parser — never evaluated as code — with the usual precedence; division by zero gives 0.
 */
import { ApiError } from '@plover/core';

type Node =
  | { kind: 'number'; value: number }
  | { kind: 'series'; index: number }
  | { kind: 'binary'; op: string; left: Node; right: Node }
  | { kind: 'negate'; operand: Node };

const TOKEN = /\s*(?:(\d+(?:\.\d+)?)|([A-Z])|([-+*/()]))/y;

function tokenize(formula: string): string[] {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < formula.length) {
    if (formula.slice(TOKEN.lastIndex).trim() === '') break;
    const match = TOKEN.exec(formula);
    if (match === null) throw invalid(formula);
    tokens.push(match[1] ?? match[2] ?? match[3] ?? '');
  }
  return tokens;
}

function invalid(formula: string): ApiError {
  return ApiError.validation(`"${formula}" is not a valid formula: use series letters, numbers, + - * / and parentheses.`, 'formula');
}

function parse(formula: string): Node {
  const tokens = tokenize(formula);
  let position = 0;
  const peek = (): string | undefined => tokens[position];
  const next = (): string => {
    const token = tokens[position];
    if (token === undefined) throw invalid(formula);
    position += 1;
    return token;
  };
  const primary = (): Node => {
    const token = next();
    if (token === '(') {
      const inner = sum();
      if (next() !== ')') throw invalid(formula);
      return inner;
    }
    if (token === '-') return { kind: 'negate', operand: primary() };
    if (/^[A-Z]$/.test(token)) return { kind: 'series', index: token.charCodeAt(0) - 65 };
    if (/^\d/.test(token)) return { kind: 'number', value: Number(token) };
    throw invalid(formula);
  };
  const product = (): Node => {
    let node = primary();
    while (peek() === '*' || peek() === '/') node = { kind: 'binary', op: next(), left: node, right: primary() };
    return node;
  };
  const sum = (): Node => {
    let node = product();
    while (peek() === '+' || peek() === '-') node = { kind: 'binary', op: next(), left: node, right: product() };
    return node;
  };
  const root = sum();
  if (position !== tokens.length) throw invalid(formula);
  return root;
}

function evaluate(node: Node, values: readonly number[]): number {
  switch (node.kind) {
    case 'number':
      return node.value;
    case 'series':
      return values[node.index] ?? 0;
    case 'negate':
      return -evaluate(node.operand, values);
    case 'binary': {
      const left = evaluate(node.left, values);
      const right = evaluate(node.right, values);
      if (node.op === '+') return left + right;
      if (node.op === '-') return left - right;
      if (node.op === '*') return left * right;
      return right === 0 ? 0 : left / right;
    }
  }
}

const parsed = new Map<string, Node>();

/** Validates a formula for `seriesCount` series: 400 on `attr` unless it parses and names only those series. */
export function checkFormula(formula: string, seriesCount: number, attr = 'formula'): void {
  const uses = (node: Node): number[] =>
    node.kind === 'series'
      ? [node.index]
      : node.kind === 'binary'
        ? [...uses(node.left), ...uses(node.right)]
        : node.kind === 'negate'
          ? uses(node.operand)
          : [];
  let used: number[];
  try {
    used = uses(parse(formula));
  } catch (error) {
    throw error instanceof ApiError ? ApiError.validation(error.detail, attr) : error;
  }
  const missing = used.find((index) => index >= seriesCount);
  if (missing !== undefined) {
    const letter = String.fromCharCode(65 + missing);
    throw ApiError.validation(`The formula refers to series ${letter}, but there ${seriesCount === 1 ? 'is 1 series' : `are ${seriesCount} series`}.`, attr);
  }
}

/** The formula's value for one bucket; `values[i]` is series i's value. */
export function evaluateFormula(formula: string, values: readonly number[]): number {
  let node = parsed.get(formula);
  if (node === undefined) {
    node = parse(formula);
    if (parsed.size < 1000) parsed.set(formula, node);
  }
  return evaluate(node, values);
}
