/**
 * HogQL text to an AST with PostHog's own parser (the WebAssembly build of its C++ parser), loaded once per
 * process on first use.
 */
import { HogQLError, type HogQLErrorKind } from './errors';

/** One node of the parser's AST: `node` names its type; its other fields depend on the type. */
export interface AstNode {
  node: string;
  start?: { offset: number };
  end?: { offset: number };
  [field: string]: unknown;
}

interface ParseFailure {
  error: true;
  type: 'SyntaxError' | 'ParsingError' | 'NotImplementedError';
  message: string;
  start?: { offset: number };
  end?: { offset: number };
}

/** The parser's methods used here; each returns the AST or a failure as JSON text. */
interface HogQLParser {
  parseSelect(input: string): string;
  parseExpr(input: string): string;
  parseOrderExpr(input: string): string;
}

let parser: Promise<HogQLParser> | undefined;

function load(): Promise<HogQLParser> {
  // A dynamic import: the package is an ES module with a CommonJS twin, and the services compile to CommonJS.
  parser ??= import('@posthog/hogql-parser').then((module: { default: () => Promise<HogQLParser> }) => module.default());
  return parser;
}

const KINDS: Record<ParseFailure['type'], HogQLErrorKind> = {
  SyntaxError: 'syntax_error',
  ParsingError: 'syntax_error',
  NotImplementedError: 'not_implemented',
};

function check(json: string): AstNode {
  const result = JSON.parse(json) as AstNode | ParseFailure;
  if ('error' in result && result.error === true) {
    const failure = result as ParseFailure;
    const message = /mismatched input '<EOF>'/.test(failure.message) ? 'Unexpected end of query' : failure.message;
    const start = failure.start?.offset;
    const end = failure.end?.offset;
    // The parser reports some spans backwards; an editor wants them in order.
    const [from, to] = start !== undefined && end !== undefined && end < start ? [end, start] : [start, end];
    throw new HogQLError(KINDS[failure.type] ?? 'syntax_error', message, from, to);
  }
  return result as AstNode;
}

/** A SELECT (or a set of them joined by UNION …) as an AST with positions. */
export async function parseSelect(query: string): Promise<AstNode> {
  return check((await load()).parseSelect(query));
}

/** One expression (an EventsQuery column, a `where` item) as an AST with positions. */
export async function parseExpr(expr: string): Promise<AstNode> {
  return check((await load()).parseExpr(expr));
}

/** One ORDER BY item (`timestamp DESC`) as an `OrderExpr` node. */
export async function parseOrderExpr(expr: string): Promise<AstNode> {
  return check((await load()).parseOrderExpr(expr));
}
