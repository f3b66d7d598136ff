/**
 * The workspaces' import graph and the rules it must keep (docs/architecture.md, "Dependency rules"):
 * services never import each other, except the standalone composition root, which wires the others through
 * the entry points they export; packages never import services; a relative import stays in its workspace;
 * every `@plover/*` import is declared in the importing workspace's package.json; and no file reaches itself
 * through its imports. The tree is read from disk by `readTree`; `checkTree` works on any in-memory tree, so
 * the rules can be tested on small graphs of their own.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** The composition root of embedded mode: the one service allowed to import other services. */
export const COMPOSITION_ROOT = 'services/standalone';

export interface Workspace {
  /** Repository-relative directory, e.g. `packages/core` or `services/capture`. */
  dir: string;
  /** The package name, e.g. `@plover/core`. */
  name: string;
  /** Names in package.json `dependencies`. */
  dependencies: string[];
  /** package.json `exports`: subpath (`.`, `./app`) to the repository-relative source file it resolves to. */
  exports: Record<string, string>;
}

export interface SourceImport {
  /** The module specifier, or the source text of the expression that computes it. */
  specifier: string;
  line: number;
  computed?: true;
}

export interface Tree {
  workspaces: Workspace[];
  /** Every checked source file (repository-relative, `/`-separated) and the module specifiers it imports. */
  imports: Map<string, SourceImport[]>;
  /** The other files under the workspaces' `src` (stylesheets, JSON): importable, but outside the graph. */
  assets: Set<string>;
}

export interface Findings {
  /** Imports between workspaces that the layering forbids, or that leave a workspace by a relative path. */
  boundaries: string[];
  /** `@plover/*` imports missing from the importing workspace's package.json dependencies. */
  undeclared: string[];
  /** Imports of the tree's own code that resolve to no source file or to no declared export. */
  unresolved: string[];
  /** One cycle per strongly connected set of files, as a path that ends where it starts. */
  cycles: string[];
}

/**
 * The module specifiers a TypeScript source imports, however it imports them: import and export-from
 * declarations (type-only too), `import x = require()`, `import()` and `require()` calls and `import('…')`
 * types. A call whose specifier is computed is returned as its source text, marked `computed`.
 */
export function importsOf(fileName: string, text: string): SourceImport[] {
  const kind = fileName.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, kind);
  const found: SourceImport[] = [];
  const add = (node: ts.Node) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    found.push(ts.isStringLiteralLike(node) ? { specifier: node.text, line } : { specifier: node.getText(source), line, computed: true });
  };
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) add(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) add(node.moduleReference.expression);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    else if (ts.isCallExpression(node) && isModuleCall(node.expression) && node.arguments[0]) add(node.arguments[0]);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function isModuleCall(callee: ts.Expression): boolean {
  return callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require');
}

/** A TypeScript source: `.ts`, or `.tsx` where a file holds JSX (the console's components). */
const SOURCE = /\.tsx?$/;

/** The workspaces under `packages/`, `services/` and `apps/` of `root`, and the imports of every `.ts` and `.tsx` file in their `src`. */
export function readTree(root: string): Tree {
  const workspaces: Workspace[] = [];
  const imports = new Map<string, SourceImport[]>();
  const assets = new Set<string>();
  for (const group of ['packages', 'services', 'apps']) {
    for (const entry of readdirSync(path.join(root, group), { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const dir = `${group}/${entry.name}`;
      workspaces.push(readWorkspace(root, dir));
      for (const name of readdirSync(path.join(root, dir, 'src'), { recursive: true, encoding: 'utf8' })) {
        const file = `${dir}/src/${name.split(path.sep).join('/')}`;
        if (SOURCE.test(file)) imports.set(file, importsOf(file, readFileSync(path.join(root, file), 'utf8')));
        else if (statSync(path.join(root, file)).isFile()) assets.add(file);
      }
    }
  }
  return { workspaces, imports, assets };
}

interface PackageJson {
  name: string;
  dependencies?: Record<string, string>;
  exports?: Record<string, { 'plover-source'?: string }>;
}

function readWorkspace(root: string, dir: string): Workspace {
  const manifest = JSON.parse(readFileSync(path.join(root, dir, 'package.json'), 'utf8')) as PackageJson;
  const exports: Record<string, string> = {};
  for (const [subpath, conditions] of Object.entries(manifest.exports ?? {})) {
    const source = conditions['plover-source'];
    if (source) exports[subpath] = path.posix.join(dir, source);
  }
  return { dir, name: manifest.name, dependencies: Object.keys(manifest.dependencies ?? {}), exports };
}

/** Every rule over `tree`; each finding names the importing file and line. */
export function checkTree(tree: Tree): Findings {
  const findings: Findings = { boundaries: [], undeclared: [], unresolved: [], cycles: [] };
  const byName = new Map(tree.workspaces.map((workspace) => [workspace.name, workspace]));
  const workspaceOf = (file: string) => tree.workspaces.find((workspace) => file.startsWith(`${workspace.dir}/`));
  const edges = new Map<string, string[]>();

  for (const [file, imports] of tree.imports) {
    const from = workspaceOf(file);
    const targets: string[] = [];
    edges.set(file, targets);
    for (const { specifier, line, computed } of imports) {
      const at = `${file}:${line} imports '${specifier}'`;
      if (computed) {
        findings.unresolved.push(`${at}: a computed specifier cannot be checked`);
        continue;
      }
      const relative = specifier.startsWith('.');
      let target: string | undefined;
      let to: Workspace | undefined;
      if (relative) {
        const base = path.posix.join(path.posix.dirname(file), specifier);
        const stem = base.replace(/\.js$/, '');
        target = [base, ...['.ts', '.tsx', '/index.ts', '/index.tsx'].map((end) => stem + end)].find((candidate) => tree.imports.has(candidate));
        to = workspaceOf(target ?? base);
        if (to !== from) findings.boundaries.push(`${at}: a relative import must stay inside ${from?.dir}; import ${to?.name ?? 'it'} by name`);
        if (!target && tree.assets.has(base)) continue;
      } else {
        const name = /^@plover\/[^/]+/.exec(specifier)?.[0];
        if (!name) continue; // a Node built-in or a third-party package
        to = byName.get(name);
        target = to?.exports[`.${specifier.slice(name.length)}`];
        if (to === from) findings.boundaries.push(`${at}: a workspace imports its own files by relative path`);
        else if (from && !from.dependencies.includes(name)) findings.undeclared.push(`${at}: ${name} is not in ${from.dir}/package.json dependencies`);
      }
      if (!target) {
        const why = relative ? 'no source file has that path' : to ? `it is not an export of ${to.name}` : 'no workspace has that name';
        findings.unresolved.push(`${at}: ${why}`);
        continue;
      }
      targets.push(target);
      const crossing = from && to && from !== to ? layeringViolation(from, to) : folderViolation(file, target);
      if (crossing) findings.boundaries.push(`${at}: ${crossing}`);
    }
  }
  findings.cycles = findCycles(edges);
  return findings;
}

/** The management service's source, whose folders are layered. */
const MANAGEMENT = 'services/management/src/';

/**
 * The management service's folders: `shared/` imports only itself and packages, `http/` (the frame of every route)
 * only itself, `shared/` and packages, and a feature folder only itself, `shared/`, `http/` and packages — never
 * another feature folder, nor the files at the root of src/ that wire them (docs/architecture.md).
 */
function folderViolation(file: string, target: string): string | undefined {
  if (!file.startsWith(MANAGEMENT) || !target.startsWith(MANAGEMENT)) return undefined;
  const folderOf = (source: string) => {
    const parts = source.slice(MANAGEMENT.length).split('/');
    return parts.length > 1 ? parts[0] : undefined;
  };
  const [from, to] = [folderOf(file), folderOf(target)];
  if (from === undefined || from === to) return undefined;
  const allowed = from === 'shared' ? ['shared'] : from === 'http' ? ['shared'] : ['shared', 'http'];
  if (to !== undefined && allowed.includes(to)) return undefined;
  const what = to === undefined ? `${target.slice(MANAGEMENT.length)} at the root of src/` : `${to}/`;
  const rule =
    from === 'shared'
      ? 'shared/ imports only shared/ and packages'
      : from === 'http'
        ? 'http/ imports only http/, shared/ and packages'
        : `a feature folder (${from}/) imports only shared/, http/ and packages`;
  return `${rule}, not ${what}`;
}

function layeringViolation(from: Workspace, to: Workspace): string | undefined {
  if (!to.dir.startsWith('services/')) return undefined;
  if (from.dir.startsWith('packages/')) return `packages never import services (${to.dir})`;
  if (to.dir === COMPOSITION_ROOT) return `no service imports the composition root ${COMPOSITION_ROOT}`;
  if (from.dir !== COMPOSITION_ROOT) return `services never import each other (${to.dir}); only ${COMPOSITION_ROOT} wires them`;
  return undefined;
}

/**
 * Tarjan's strongly connected components over `edges`; each component that holds a cycle is reported as
 * the shortest cycle through its first file in sorted order, e.g. `a.ts → b.ts → a.ts`.
 */
export function findCycles(edges: Map<string, string[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of edges.get(file) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || edges.get(file)?.includes(file)) components.push(component.sort());
  };
  for (const file of [...edges.keys()].sort()) if (!index.has(file)) connect(file);
  return components.map((component) => {
    const cycle = shortestCycle(component[0]!, new Set(component), edges).join(' → ');
    return component.length > 2 ? `${cycle} (${component.length} files import each other in a cycle)` : cycle;
  });
}

/** A breadth-first search from `start` back to itself, inside `within`. */
function shortestCycle(start: string, within: Set<string>, edges: Map<string, string[]>): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const file = queue[head]!;
    for (const next of edges.get(file) ?? []) {
      if (next === start) {
        const path = [start];
        for (let at: string | undefined = file; at !== undefined && at !== start; at = previous.get(at)) path.unshift(at);
        return [start, ...path];
      }
      if (within.has(next) && !previous.has(next)) {
        previous.set(next, file);
        queue.push(next);
      }
    }
  }
  return [start];
}
