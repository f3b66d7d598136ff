/**
 * HogQL AST → ClickHouse SQL for one project. Safety comes from construction, not from inspecting the output:
 * - every table reference becomes a virtual table's subquery (tables.ts), which carries the team guard, or the
 *   user's own subquery / CTE body printed the same way; nothing else can appear after FROM or JOIN, and every
 *   table is given a generated alias (`hogql_tN`), so no user name ever stands where ClickHouse reads a table;
 * - every identifier is resolved against those tables, the query's aliases or a lambda's arguments, and printed
 *   quoted; an unknown name is an error, never passed through;
 * - every string constant is a bound parameter (`{hogql_val_N:String}`); numbers, booleans and NULL are printed
 *   from their parsed values;
 * - functions come from an allow-list (functions.ts); anything the printer does not know is refused.
 */
import { actionKey, actionRefOf, MATCHES_ACTION, type ActionConditions } from './actions';
import { HogQLError } from './errors';
import { closestFunction, resolveFunction } from './functions';
import type { AstNode } from './parser';
import { lookupColumn, quoteIdentifier, TEAM_PARAM, VIRTUAL_TABLES, type Column, type VirtualTable } from './tables';

export interface PrintOptions {
  teamId: number;
  /** Values for `{name}` placeholders (and `{variables.code_name}` ones, keyed `variables.code_name`). */
  values?: Readonly<Record<string, unknown>>;
  /**
   * The project's timezone: DateTime columns of the tables read in it (so date functions over them, and the
   * answers, are in it), as PostHog prints them; absent or UTC leaves them as stored (UTC).
   */
  timezone?: string;
  /** Expressions Plover built for `{name}` placeholders (`{filters}`), printed in the placeholder's scope. */
  expressions?: Readonly<Record<string, AstNode>>;
  /** Rows returned when the query has no LIMIT. */
  defaultLimit: number;
  /** The most rows a query may return, whatever its LIMIT says. */
  maxLimit: number;
  /** The conditions of the actions the query names in `matchesAction` (actions.ts). */
  actions?: ActionConditions;
}

export interface PrintedQuery {
  sql: string;
  params: Record<string, unknown>;
  /** Output column names, as PostHog names them (the alias, the field's last name, else the expression's text). */
  columns: string[];
  /** The rows the caller may return; the SQL asks for one more, to tell whether there were more. */
  limit: number;
  offset: number;
}

/** A table in a SELECT's FROM, under the name the query uses for it. */
interface ScopeTable {
  sqlAlias: string;
  /** Columns: a virtual table's, or a subquery's outputs (json when they pass a JSON column through). */
  columns: Readonly<Record<string, Column>>;
  virtual?: { table: VirtualTable; used: Set<string> };
}

interface Cte {
  node: AstNode;
  scope: Scope;
}

class Scope {
  readonly tables = new Map<string, ScopeTable>();
  readonly aliases = new Set<string>();
  readonly columnCtes = new Map<string, AstNode>();
  readonly ctes = new Map<string, Cte>();
  readonly lambdaArgs = new Set<string>();
  readonly windows = new Set<string>();
  /** Aliases being printed, which their own expression must not refer to. */
  readonly resolving = new Set<string>();

  constructor(readonly parent?: Scope) {}

  findCte(name: string): Cte | undefined {
    return this.ctes.get(name) ?? this.parent?.findCte(name);
  }

  findColumnCte(name: string): AstNode | undefined {
    return this.columnCtes.get(name) ?? this.parent?.findColumnCte(name);
  }

  child(): Scope {
    const scope = new Scope(this);
    for (const arg of this.lambdaArgs) scope.lambdaArgs.add(arg);
    return scope;
  }
}

const COMPARE: Readonly<Record<string, string>> = {
  '==': 'equals',
  '!=': 'notEquals',
  '<': 'less',
  '<=': 'lessOrEquals',
  '>': 'greater',
  '>=': 'greaterOrEquals',
  like: 'like',
  ilike: 'ilike',
  'not like': 'notLike',
  'not ilike': 'notILike',
  in: 'in',
  'not in': 'notIn',
  '=~': 'match',
  '=~*': 'match',
  '!~': 'match',
  '!~*': 'match',
};

const ARITHMETIC: Readonly<Record<string, string>> = { '+': 'plus', '-': 'minus', '*': 'multiply', '/': 'divide', '%': 'modulo' };

const CASTS: Readonly<Record<string, string>> = {
  string: 'toString',
  text: 'toString',
  varchar: 'toString',
  int: 'toInt64',
  integer: 'toInt64',
  bigint: 'toInt64',
  float: 'toFloat64',
  double: 'toFloat64',
  numeric: 'toFloat64',
  decimal: 'toFloat64',
  date: 'toDate',
  datetime: 'toDateTime',
  timestamp: 'toDateTime',
  bool: 'toBool',
  boolean: 'toBool',
  uuid: 'toUUID',
};

const JOIN_WORDS = new Set(['GLOBAL', 'ALL', 'ANY', 'ASOF', 'SEMI', 'ANTI', 'INNER', 'LEFT', 'RIGHT', 'FULL', 'OUTER', 'CROSS', 'JOIN']);
const FRAME_TYPES = new Set(['CURRENT ROW', 'PRECEDING', 'FOLLOWING']);
const LAMBDA_ARG = /^[A-Za-z_][A-Za-z0-9_]*$/;
const NUMBERS_MAX = 1_000_000_000;

function fail(node: AstNode | undefined, message: string, kind: HogQLError['kind'] = 'query_error'): never {
  throw new HogQLError(kind, message, node?.start?.offset, node?.end?.offset);
}

function asNode(value: unknown): AstNode | undefined {
  return value && typeof value === 'object' && 'node' in value ? (value as AstNode) : undefined;
}

function nodes(value: unknown): AstNode[] {
  return Array.isArray(value) ? (value as AstNode[]) : [];
}

/** A name or keyword the parser gave as a string (or a number, in a field chain). */
function text(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : '';
}

function chainOf(node: AstNode): string[] {
  return (node.chain as unknown[]).map(text);
}

export class Printer {
  private readonly params: Record<string, unknown> = { [TEAM_PARAM]: 0 };
  private paramCount = 0;
  private tableCount = 0;
  private depth = 0;

  constructor(
    private readonly options: PrintOptions,
    /** The query text, for naming unaliased output columns by their HogQL text. */
    private readonly text: string,
  ) {
    this.params[TEAM_PARAM] = options.teamId;
  }

  print(root: AstNode): PrintedQuery {
    if (root.node !== 'SelectQuery' && root.node !== 'SelectSetQuery') fail(root, `A query must be a SELECT, not ${root.node}`);
    const scope = new Scope();
    const { sql, columns } = this.selectOrSet(root, scope);
    const limit = this.topLimit(root);
    const offset = root.node === 'SelectQuery' && root.offset ? this.integer(asNode(root.offset)!, scope) : 0;
    // The outer SELECT takes the limit: the query's own LIMIT and OFFSET stay inside, and a UNION is cut as a whole.
    return this.finish({ sql: `SELECT * FROM (${sql}) LIMIT ${limit + 1}`, params: this.params, columns, limit, offset });
  }

  private topLimit(root: AstNode): number {
    const { defaultLimit, maxLimit } = this.options;
    if (root.node !== 'SelectQuery' || !root.limit) return defaultLimit;
    return Math.min(this.integer(asNode(root.limit)!, new Scope()), maxLimit);
  }

  /** A non-negative integer constant (a LIMIT, an OFFSET), possibly given as a placeholder. */
  private integer(node: AstNode, scope: Scope): number {
    const value = node.node === 'Placeholder' ? this.placeholderValue(node, scope) : node.node === 'Constant' ? node.value : undefined;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) fail(node, 'LIMIT and OFFSET must be non-negative integers');
    return value;
  }

  private selectOrSet(node: AstNode, scope: Scope): { sql: string; columns: string[]; outputs: Record<string, Column> } {
    if (++this.depth > 64) fail(node, 'The query nests too deeply');
    try {
      if (node.node === 'SelectQuery') return this.select(node, scope.child());
      if (node.node !== 'SelectSetQuery') fail(node, `Expected a SELECT, got ${node.node}`);
      const first = this.selectOrSet(asNode(node.initial_select_query)!, scope);
      const parts = [`(${first.sql})`];
      for (const next of nodes(node.subsequent_select_queries)) {
        const operator = text(next.set_operator);
        if (!['UNION ALL', 'UNION DISTINCT', 'INTERSECT', 'INTERSECT DISTINCT', 'EXCEPT'].includes(operator))
          fail(next, `Unsupported set operator ${operator}`);
        parts.push(operator, `(${this.selectOrSet(asNode(next.select_query)!, scope).sql})`);
      }
      return { sql: parts.join(' '), columns: first.columns, outputs: first.outputs };
    } finally {
      this.depth--;
    }
  }

  private select(node: AstNode, scope: Scope): { sql: string; columns: string[]; outputs: Record<string, Column> } {
    for (const cte of nodes(node.ctes)) {
      const name = text(cte.name);
      if (cte.cte_type === 'column') scope.columnCtes.set(name, asNode(cte.expr)!);
      else scope.ctes.set(name, { node: asNode(cte.expr)!, scope });
    }
    for (const unsupported of ['qualify', 'array_join_op', 'array_join_list', 'sample']) {
      if (node[unsupported]) fail(node, `Unsupported: ${unsupported.toUpperCase().replace(/_/g, ' ')}`, 'not_implemented');
    }
    if (node.window_exprs && typeof node.window_exprs === 'object') for (const name of Object.keys(node.window_exprs)) scope.windows.add(name);
    const from = node.select_from ? this.joins(asNode(node.select_from)!, scope) : '';

    const items = this.expandStar(nodes(node.select), scope);
    for (const item of items) if (item.node === 'Alias') scope.aliases.add(text(item.alias));
    const columns: string[] = [];
    const outputs: Record<string, Column> = {};
    const printed = items.map((item) => {
      const { sql, name, column } = this.selectItem(item, scope);
      columns.push(name);
      if (column && !Object.hasOwn(outputs, name)) outputs[name] = column;
      return sql;
    });

    const parts = [`SELECT ${node.distinct ? 'DISTINCT ' : ''}${printed.join(', ')}`];
    if (from) parts.push(`FROM ${from}`);
    if (node.prewhere) parts.push(`PREWHERE ${this.expr(asNode(node.prewhere)!, scope)}`);
    if (node.where) parts.push(`WHERE ${this.expr(asNode(node.where)!, scope)}`);
    if (node.group_by)
      parts.push(
        `GROUP BY ${nodes(node.group_by)
          .map((expr) => this.expr(expr, scope))
          .join(', ')}`,
      );
    if (node.having) parts.push(`HAVING ${this.expr(asNode(node.having)!, scope)}`);
    if (node.window_exprs && typeof node.window_exprs === 'object') {
      const windows = Object.entries(node.window_exprs as Record<string, AstNode>).map(
        ([name, expr]) => `${quoteIdentifier(name)} AS (${this.window(expr, scope)})`,
      );
      if (windows.length > 0) parts.push(`WINDOW ${windows.join(', ')}`);
    }
    if (node.order_by) parts.push(`ORDER BY ${this.orderBy(nodes(node.order_by), scope)}`);
    const limitBy = asNode(node.limit_by);
    if (limitBy) {
      const offset = limitBy.offset_value ? `${this.integer(asNode(limitBy.offset_value)!, scope)}, ` : '';
      parts.push(
        `LIMIT ${offset}${this.integer(asNode(limitBy.n)!, scope)} BY ${nodes(limitBy.exprs)
          .map((expr) => this.expr(expr, scope))
          .join(', ')}`,
      );
    }
    if (node.limit) parts.push(`LIMIT ${this.integer(asNode(node.limit)!, scope)}${node.limit_with_ties ? ' WITH TIES' : ''}`);
    if (node.offset) parts.push(`OFFSET ${this.integer(asNode(node.offset)!, scope)}`);
    return { sql: parts.join(' '), columns, outputs };
  }

  /** `*` and `t.*` as the columns they stand for. */
  private expandStar(items: AstNode[], scope: Scope): AstNode[] {
    const out: AstNode[] = [];
    for (const item of items) {
      const chain = item.node === 'Field' ? chainOf(item) : [];
      if (chain.at(-1) !== '*') {
        out.push(item);
        continue;
      }
      if (chain.length > 2) fail(item, `Cannot expand ${chain.join('.')}`);
      const tables = chain.length === 2 ? [[chain[0]!, scope.tables.get(chain[0]!)] as const] : [...scope.tables.entries()];
      if (tables.length === 0) fail(item, 'SELECT * needs a FROM');
      for (const [name, table] of tables) {
        if (!table) fail(item, `Unknown table "${name}".`, 'resolution_error');
        const names = table.virtual ? table.virtual.table.star : Object.keys(table.columns);
        for (const column of names) out.push({ node: 'Field', chain: [name, column], start: item.start, end: item.end });
      }
    }
    return out;
  }

  private selectItem(item: AstNode, scope: Scope): { sql: string; name: string; column?: Column } {
    if (item.node === 'Alias') {
      const name = text(item.alias);
      scope.resolving.add(name);
      try {
        const inner = asNode(item.expr)!;
        return { sql: `${this.expr(inner, scope)} AS ${quoteIdentifier(name)}`, name, column: this.passThrough(inner, scope) };
      } finally {
        scope.resolving.delete(name);
      }
    }
    if (item.node === 'Field') {
      const name = chainOf(item).at(-1)!;
      return { sql: `${this.expr(item, scope)} AS ${quoteIdentifier(name)}`, name, column: this.passThrough(item, scope) };
    }
    const start = item.start?.offset;
    const end = item.end?.offset;
    const name = start !== undefined && end !== undefined ? this.text.slice(start, end) : item.node;
    return { sql: this.expr(item, scope), name };
  }

  /** The column a subquery's output is, for queries over the subquery: JSON passes through as JSON. */
  private passThrough(expr: AstNode, scope: Scope): Column {
    if (expr.node === 'Field') {
      const resolved = this.findColumn(chainOf(expr), scope);
      if (resolved && resolved.rest.length === 0 && 'sql' in resolved.column && resolved.column.json) return { sql: '', json: true };
    }
    return { sql: '' };
  }

  private joins(first: AstNode, scope: Scope): string {
    const parts: string[] = [];
    for (let join: AstNode | undefined = first; join; join = asNode(join.next_join)) {
      if (join.sample) fail(join, 'Unsupported: SAMPLE', 'not_implemented');
      const table = join.table_args ? this.numbers(asNode(join.table)!, nodes(join.table_args)) : this.tableExpr(asNode(join.table)!, scope);
      // A subquery without an alias can only be reached by its columns' names.
      const name = join.alias ? text(join.alias) : (table.defaultName ?? table.entry.sqlAlias);
      if (scope.tables.has(name)) fail(join, `Table alias "${name}" is used twice`);
      scope.tables.set(name, table.entry);
      const printed = `${table.sql} AS ${table.entry.sqlAlias}`;
      if (join === first) {
        parts.push(printed);
        continue;
      }
      parts.push(`${this.joinType(join)} ${printed}`);
      const constraint = asNode(join.constraint);
      if (constraint) parts.push(this.joinConstraint(constraint, scope));
    }
    return parts.join(' ');
  }

  private joinType(join: AstNode): string {
    const type = text(join.join_type ?? 'JOIN')
      .trim()
      .toUpperCase();
    if (type === ',') return 'CROSS JOIN';
    const words = type.split(/\s+/);
    if (words.some((word) => !JOIN_WORDS.has(word)) || words.at(-1) !== 'JOIN') fail(join, `Unsupported join type ${type}`);
    return words.filter((word) => word !== 'GLOBAL').join(' ');
  }

  private joinConstraint(constraint: AstNode, scope: Scope): string {
    const expr = asNode(constraint.expr)!;
    if (constraint.constraint_type === 'USING') {
      const fields = expr.node === 'Tuple' ? nodes(expr.exprs) : [expr];
      const names = fields.map((field) => {
        const chain = field.node === 'Field' ? chainOf(field) : [];
        if (chain.length !== 1) fail(field, 'USING takes column names');
        const name = chain[0]!;
        const holders = [...scope.tables.values()].filter((table) => Object.hasOwn(table.columns, name));
        if (holders.length < 2) fail(field, `USING column "${name}" must be in both tables`, 'resolution_error');
        for (const table of holders) table.virtual?.used.add(name);
        return quoteIdentifier(name);
      });
      return `USING (${names.join(', ')})`;
    }
    return `ON ${this.expr(expr, scope)}`;
  }

  /** A table reference in FROM/JOIN as SQL: always a subquery. */
  private tableExpr(node: AstNode, scope: Scope): { sql: string; entry: ScopeTable; defaultName?: string } {
    const sqlAlias = `hogql_t${this.tableCount++}`;
    if (node.node === 'SelectQuery' || node.node === 'SelectSetQuery') {
      const { sql, outputs } = this.selectOrSet(node, scope);
      return { sql: `(${sql})`, entry: { sqlAlias, columns: outputs } };
    }
    if (node.node !== 'Field') fail(node, `Unsupported table expression ${node.node}`, 'not_implemented');
    const chain = chainOf(node);
    if (chain.length !== 1) fail(node, `Unknown table "${chain.join('.')}".`, 'resolution_error');
    const name = chain[0]!;
    const cte = scope.findCte(name);
    // Inside its own body a CTE's name means what it would without the CTE (`WITH events AS (… FROM events …)`).
    if (cte && !this.expanding.has(cte)) {
      // Printed where it is used, as a subquery: a name given by the query never reaches ClickHouse as a table.
      this.expanding.add(cte);
      try {
        const { sql, outputs } = this.selectOrSet(cte.node, cte.scope);
        return { sql: `(${sql})`, entry: { sqlAlias, columns: outputs }, defaultName: name };
      } finally {
        this.expanding.delete(cte);
      }
    }
    const table = VIRTUAL_TABLES.get(name);
    if (!table) fail(node, `Unknown table "${name}".`, 'resolution_error');
    const used = new Set<string>();
    const entry: ScopeTable = { sqlAlias, columns: table.columns, virtual: { table, used } };
    // The subquery is written once the whole query is resolved and its used columns are known.
    const marker = `\u0000${sqlAlias}\u0000`;
    this.pending.set(marker, entry);
    return { sql: marker, entry, defaultName: name };
  }

  private readonly pending = new Map<string, ScopeTable>();
  private readonly expanding = new Set<Cte>();

  /** Replaces each virtual table's marker by its subquery, now that its used columns are known. */
  private finish(printed: PrintedQuery): PrintedQuery {
    let sql = printed.sql;
    for (const [marker, entry] of this.pending) sql = sql.replace(marker, () => `(${entry.virtual!.table.source([...entry.virtual!.used])})`);
    return { ...printed, sql };
  }

  /** `numbers(n)` / `numbers(offset, n)`: a bounded counter, the one table function allowed. */
  private numbers(node: AstNode, argNodes: AstNode[]): { sql: string; entry: ScopeTable; defaultName: string } {
    const name = node.node === 'Field' ? chainOf(node).join('.') : node.node;
    if (name !== 'numbers') fail(node, `Unknown table function "${name}".`, 'resolution_error');
    const sqlAlias = `hogql_t${this.tableCount++}`;
    const args = argNodes.map((arg) => (arg.node === 'Constant' ? arg.value : undefined));
    if (args.length < 1 || args.length > 2 || args.some((value) => typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)) {
      fail(node, 'numbers() takes one or two non-negative integers');
    }
    const count = args.at(-1) as number;
    if (count > NUMBERS_MAX) fail(node, `numbers() is limited to ${NUMBERS_MAX} rows`);
    return {
      sql: `(SELECT number FROM numbers(${(args as number[]).join(', ')}))`,
      entry: { sqlAlias, columns: { number: { sql: '' } } },
      defaultName: 'numbers',
    };
  }

  /** Where a chain's first names lead: a table's column and the names left over (JSON keys). */
  private findColumn(chain: string[], scope: Scope): { table: ScopeTable; column: Column; path: string; rest: string[] } | undefined {
    const [head] = chain;
    const qualified = scope.tables.get(head!);
    if (qualified && chain.length > 1) {
      const found = lookupColumn(qualified.columns, chain.slice(1));
      if (!found) return undefined;
      return { table: qualified, column: found.leaf, path: found.path, rest: chain.slice(1 + found.used) };
    }
    const matches = [...scope.tables.values()].flatMap((table) => {
      const found = lookupColumn(table.columns, chain);
      return found ? [{ table, column: found.leaf, path: found.path, rest: chain.slice(found.used) }] : [];
    });
    if (matches.length > 1) fail(undefined, `Ambiguous column "${head}": qualify it with a table name`, 'resolution_error');
    return matches[0];
  }

  private field(node: AstNode, scope: Scope): string {
    const chain = chainOf(node);
    const [head] = chain;
    if (chain.length === 1 && head === '*') fail(node, '* is only allowed in the select list and count(*)');
    if (chain.length === 1 && scope.lambdaArgs.has(head!)) return quoteIdentifier(head!);
    if (chain.length === 1 && scope.aliases.has(head!) && !scope.resolving.has(head!)) return quoteIdentifier(head!);
    const found = this.findColumn(chain, scope);
    if (!found) {
      const cte = chain.length === 1 ? scope.findColumnCte(head!) : undefined;
      if (cte) return `(${this.expr(cte, scope)})`;
      fail(node, `Unable to resolve field: ${chain.join('.')}`, 'resolution_error');
    }
    const { table, column, path, rest } = found;
    table.virtual?.used.add(path);
    const ref = `${table.sqlAlias}.${quoteIdentifier(path)}`;
    const { timezone } = this.options;
    if (rest.length === 0)
      return 'time' in column && column.time === true && timezone && timezone !== 'UTC' ? `toTimeZone(${ref}, ${this.param(timezone)})` : ref;
    if (!('sql' in column) || !column.json) fail(node, `Can not access property "${rest[0]}" on field "${path}"`, 'resolution_error');
    const keys = rest.map((key) => this.param(key)).join(', ');
    // A JSON value as text without its quotes; NULL when the key is missing or null.
    return `replaceRegexpAll(nullIf(nullIf(JSONExtractRaw(${ref}, ${keys}), ''), 'null'), '^"|"$', '')`;
  }

  private param(value: string): string {
    const name = `hogql_val_${this.paramCount++}`;
    this.params[name] = value;
    return `{${name}:String}`;
  }

  private constant(value: unknown, node: AstNode): string {
    if (value === null || value === undefined) return 'NULL';
    if (typeof value === 'boolean') return value ? 'true' : 'false';
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) fail(node, 'Numbers must be finite');
      return Number.isInteger(value) ? BigInt(value).toString() : String(value);
    }
    if (typeof value === 'string') return this.param(value);
    if (Array.isArray(value)) return `[${value.map((item) => this.constant(item, node)).join(', ')}]`;
    fail(node, 'Unsupported constant');
  }

  private placeholderValue(node: AstNode, _scope: Scope): unknown {
    const expr = asNode(node.expr);
    const chain = expr?.node === 'Field' ? chainOf(expr) : [];
    const name = chain.join('.');
    const values = this.options.values ?? {};
    if ((chain.length !== 1 && !(chain.length === 2 && chain[0] === 'variables')) || !Object.hasOwn(values, name))
      fail(node, `Placeholder {${name || '?'}} is not available: pass it in "values"`, 'resolution_error');
    return values[name];
  }

  private expr(node: AstNode, scope: Scope): string {
    if (++this.depth > 256) fail(node, 'The query nests too deeply');
    try {
      return this.exprInner(node, scope);
    } finally {
      this.depth--;
    }
  }

  private exprInner(node: AstNode, scope: Scope): string {
    const sub = (child: unknown) => this.expr(asNode(child)!, scope);
    const list = (children: unknown) => nodes(children).map((child) => this.expr(child, scope));
    switch (node.node) {
      case 'Constant':
        return this.constant(node.value, node);
      case 'Placeholder': {
        const expr = asNode(node.expr);
        const name = expr?.node === 'Field' ? chainOf(expr).join('.') : '';
        const built = this.options.expressions ?? {};
        if (Object.hasOwn(built, name)) return this.expr(built[name]!, scope);
        return this.constant(this.placeholderValue(node, scope), node);
      }
      case 'Field':
        return this.field(node, scope);
      case 'Alias':
        scope.aliases.add(text(node.alias));
        return `(${sub(node.expr)} AS ${quoteIdentifier(text(node.alias))})`;
      case 'And':
      case 'Or': {
        const parts = list(node.exprs);
        return parts.length === 1 ? parts[0]! : `${node.node === 'And' ? 'and' : 'or'}(${parts.join(', ')})`;
      }
      case 'Not':
        return `not(${sub(node.expr)})`;
      case 'ArithmeticOperation': {
        const fn = ARITHMETIC[text(node.op)];
        if (!fn) fail(node, `Unsupported operator ${text(node.op)}`);
        return `${fn}(${sub(node.left)}, ${sub(node.right)})`;
      }
      case 'CompareOperation':
        return this.compare(node, scope);
      case 'BetweenExpr':
        return `(${sub(node.expr)} ${node.negated ? 'NOT ' : ''}BETWEEN ${sub(node.low)} AND ${sub(node.high)})`;
      case 'Array':
        return `[${list(node.exprs).join(', ')}]`;
      case 'Tuple':
        return `tuple(${list(node.exprs).join(', ')})`;
      case 'ArrayAccess':
        return `arrayElement(${sub(node.array)}, ${sub(node.property)})`;
      case 'TupleAccess': {
        const index = node.index;
        if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 1) fail(node, 'A tuple index is a positive integer');
        return `tupleElement(${sub(node.tuple)}, ${index})`;
      }
      case 'TypeCast': {
        const fn = CASTS[text(node.type_name).toLowerCase()];
        if (!fn) fail(node, `Unsupported type ${text(node.type_name)}`);
        return `${fn}(${sub(node.expr)})`;
      }
      case 'Lambda': {
        const args = (node.args as unknown[]).map(String);
        if (args.some((arg) => !LAMBDA_ARG.test(arg))) fail(node, 'Invalid lambda argument');
        const inner = scope.child();
        for (const [name, table] of scope.tables) inner.tables.set(name, table);
        for (const alias of scope.aliases) inner.aliases.add(alias);
        for (const arg of args) inner.lambdaArgs.add(arg);
        return `(${args.map(quoteIdentifier).join(', ')}) -> ${this.expr(asNode(node.expr)!, inner)}`;
      }
      case 'Call':
        return this.call(node, scope);
      case 'WindowFunction':
        return this.windowFunction(node, scope);
      case 'SelectQuery':
      case 'SelectSetQuery':
        return `(${this.selectOrSet(node, scope).sql})`;
      default:
        fail(node, `Unsupported: ${node.node}`, 'not_implemented');
    }
  }

  private compare(node: AstNode, scope: Scope): string {
    const op = text(node.op);
    const left = this.expr(asNode(node.left)!, scope);
    const rightNode = asNode(node.right)!;
    if (node.is_null_comparison_style && rightNode.node === 'Constant' && rightNode.value === null) {
      return op === '==' ? `isNull(${left})` : `isNotNull(${left})`;
    }
    const fn = COMPARE[op];
    if (!fn) fail(node, `Unsupported comparison ${op}`, 'not_implemented');
    let right: string;
    if (fn === 'in' || fn === 'notIn') {
      const literal = ['SelectQuery', 'SelectSetQuery', 'Tuple', 'Array'].includes(rightNode.node);
      // identity() keeps ClickHouse from reading a bare name after IN as a table.
      right = literal ? this.expr(rightNode, scope) : `identity(${this.expr(rightNode, scope)})`;
    } else {
      right = this.expr(rightNode, scope);
    }
    if (op === '=~*' || op === '!~*') right = `concat('(?i)', ${right})`;
    const sql = `${fn}(${left}, ${right})`;
    return op.startsWith('!~') ? `not(${sql})` : sql;
  }

  private call(node: AstNode, scope: Scope): string {
    const name = text(node.name);
    if (name === MATCHES_ACTION) return this.matchesAction(node, scope);
    const resolved = resolveFunction(name);
    if (!resolved) {
      const suggestion = closestFunction(name);
      fail(node, `Unsupported function call '${name}(...)'.${suggestion ? ` Perhaps you meant '${suggestion}(...)'?` : ''}`, 'resolution_error');
    }
    const args = nodes(node.args);
    const printedArgs =
      resolved.name === 'count' && args.length === 1 && args[0]!.node === 'Field' && chainOf(args[0]!).join('.') === '*'
        ? ''
        : args.map((arg) => this.expr(arg, scope)).join(', ');
    const params = node.params
      ? `(${nodes(node.params)
          .map((param) => this.expr(param, scope))
          .join(', ')})`
      : '';
    if (params && resolved.kind !== 'aggregate') fail(node, `Function '${name}' takes no parameters`);
    return `${resolved.name}${params}(${node.distinct ? 'DISTINCT ' : ''}${printedArgs})`;
  }

  /** `matchesAction(id or name)`: the event's uuid among the team's events that match the action. */
  private matchesAction(node: AstNode, scope: Scope): string {
    const ref = actionRefOf(node);
    if (ref === undefined) fail(node, `${MATCHES_ACTION}() takes one argument: an action id or name.`);
    const actions = this.options.actions;
    const condition = actions?.conditions.get(actionKey(ref));
    if (actions === undefined || condition === undefined) fail(node, `Could not find action ${JSON.stringify(ref)}.`, 'resolution_error');
    Object.assign(this.params, actions.params);
    const uuid = this.expr({ node: 'Field', chain: ['uuid'], start: node.start, end: node.end }, scope);
    return `in(${uuid}, (SELECT uuid FROM events WHERE team_id = {${TEAM_PARAM}:Int64} AND ${condition}))`;
  }

  private windowFunction(node: AstNode, scope: Scope): string {
    const name = text(node.name);
    const resolved = resolveFunction(name, true);
    if (!resolved) fail(node, `Unsupported window function '${name}(...)'`, 'resolution_error');
    const args = [...nodes(node.exprs), ...nodes(node.args)].map((arg) => this.expr(arg, scope));
    if (node.over_identifier !== undefined && node.over_identifier !== null) {
      const window = text(node.over_identifier);
      if (!scope.windows.has(window)) fail(node, `Unknown window "${window}"`, 'resolution_error');
      return `${resolved.name}(${args.join(', ')}) OVER ${quoteIdentifier(window)}`;
    }
    return `${resolved.name}(${args.join(', ')}) OVER (${this.window(asNode(node.over_expr) ?? { node: 'WindowExpr' }, scope)})`;
  }

  private window(node: AstNode, scope: Scope): string {
    const parts: string[] = [];
    if (node.partition_by)
      parts.push(
        `PARTITION BY ${nodes(node.partition_by)
          .map((expr) => this.expr(expr, scope))
          .join(', ')}`,
      );
    if (node.order_by) parts.push(`ORDER BY ${this.orderBy(nodes(node.order_by), scope)}`);
    if (node.frame_method) {
      const method = text(node.frame_method);
      if (method !== 'ROWS' && method !== 'RANGE') fail(node, `Unsupported frame ${method}`);
      const start = this.frame(asNode(node.frame_start)!);
      parts.push(node.frame_end ? `${method} BETWEEN ${start} AND ${this.frame(asNode(node.frame_end)!)}` : `${method} ${start}`);
    }
    return parts.join(' ');
  }

  private frame(node: AstNode): string {
    const type = text(node.frame_type);
    if (!FRAME_TYPES.has(type)) fail(node, `Unsupported frame bound ${type}`);
    if (type === 'CURRENT ROW') return type;
    const value = node.frame_value;
    if (value === null || value === undefined) return `UNBOUNDED ${type}`;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) fail(node, 'A frame offset is a non-negative integer');
    return `${value} ${type}`;
  }

  private orderBy(items: AstNode[], scope: Scope): string {
    return items
      .map((item) => {
        const order = text(item.order ?? 'ASC').toUpperCase();
        if (order !== 'ASC' && order !== 'DESC') fail(item, `Unsupported order ${order}`);
        return `${this.expr(asNode(item.expr)!, scope)} ${order}`;
      })
      .join(', ');
  }
}
