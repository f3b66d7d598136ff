/**
 * @plover/hogql: HogQL, PostHog's SQL dialect, over Plover's data. PostHog's own parser reads the text; Plover's
 * printer turns it into ClickHouse SQL over virtual tables guarded to one project; run.ts executes it read-only
 * under limits.
 */
export { actionKey, type ActionConditions, type ActionRef, type ActionResolver } from './actions';
export { HogQLError, type HogQLErrorKind } from './errors';
export { parseExpr, parseOrderExpr, parseSelect, type AstNode } from './parser';
export * from './ast';
export { Printer, type PrintedQuery, type PrintOptions } from './printer';
export { TEAM_PARAM, VIRTUAL_TABLES } from './tables';
export * from './run';
