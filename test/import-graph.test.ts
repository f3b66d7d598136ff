/**
 * The layering of the workspaces, checked over every source file of the tree (docs/architecture.md,
 * "Dependency rules"), and the checker itself on small graphs where each rule must fire.
 */
import path from 'node:path';
import { checkTree, findCycles, importsOf, readTree, type SourceImport, type Tree, type Workspace } from './support/import-graph';

describe('the import graph of packages/*/src, services/*/src and apps/*/src', () => {
  const tree = readTree(path.resolve(__dirname, '..'));
  const findings = checkTree(tree);

  it('reads every workspace and the imports of its sources', () => {
    expect(tree.workspaces.map((workspace) => workspace.name)).toEqual(expect.arrayContaining(['@plover/core', '@plover/standalone']));
    expect(tree.imports.get('services/standalone/src/app.ts')?.map((found) => found.specifier)).toContain('@plover/capture/app');
  });

  it('reads the console’s .tsx components too, so a cycle through them is found', () => {
    expect(tree.workspaces.map((workspace) => workspace.name)).toContain('@plover/console');
    expect(tree.imports.get('apps/console/src/screens.ts')?.map((found) => found.specifier)).toContain('./screens/person');
    expect(tree.imports.has('apps/console/src/screens/person.tsx')).toBe(true);
  });

  it('resolves every import of the tree’s own code to a source file', () => {
    expect(findings.unresolved).toEqual([]);
  });

  it('keeps packages off services, services off each other, and relative imports inside their workspace', () => {
    expect(findings.boundaries).toEqual([]);
  });

  it('declares every @plover/* import in the importing workspace’s package.json', () => {
    expect(findings.undeclared).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(findings.cycles).toEqual([]);
  });

  it('has the management folders the rule below is about', () => {
    const folders = new Set([...tree.imports.keys()].flatMap((file) => /^services\/management\/src\/([^/]+)\//.exec(file)?.[1] ?? []));
    expect([...folders]).toEqual(expect.arrayContaining(['shared', 'http', 'persons', 'feature-flags', 'cohorts', 'early-access', 'surveys', 'recordings']));
  });
});

const workspace = (dir: string, dependencies: string[] = [], exports: Record<string, string> = {}): Workspace => ({
  dir,
  name: `@plover/${dir.split('/')[1]}`,
  dependencies,
  exports,
});

const imports = (...specifiers: string[]): SourceImport[] => specifiers.map((specifier, line) => ({ specifier, line: line + 1 }));

describe('checkTree', () => {
  const core = workspace('packages/core', [], { '.': 'packages/core/src/index.ts' });
  const capture = workspace('services/capture', ['@plover/core'], { './app': 'services/capture/src/app.ts' });
  const decide = workspace('services/decide', ['@plover/core', '@plover/capture'], { './app': 'services/decide/src/app.ts' });
  const standalone = workspace('services/standalone', ['@plover/capture', '@plover/decide']);

  /** A tree of core, capture, decide and standalone whose files import nothing unless `extra` says so. */
  const treeWith = (extra: Record<string, SourceImport[]>, workspaces = [core, capture, decide, standalone]): Tree => ({
    workspaces,
    imports: new Map(
      Object.entries({
        'packages/core/src/index.ts': [],
        'services/capture/src/app.ts': imports('@plover/core', 'express'),
        'services/decide/src/app.ts': imports('@plover/core'),
        'services/standalone/src/app.ts': imports('@plover/capture/app', '@plover/decide/app'),
        ...extra,
      }),
    ),
    assets: new Set(['services/capture/src/page.css']),
  });

  it('finds nothing in a tree that keeps the rules', () => {
    expect(checkTree(treeWith({}))).toEqual({ boundaries: [], undeclared: [], unresolved: [], cycles: [] });
  });

  it('names the file and line of a service importing another service, by name or by relative path', () => {
    const findings = checkTree(
      treeWith({ 'services/decide/src/app.ts': imports('@plover/core', '@plover/capture/app', '../../capture/src/app', '../../capture/src/page.css') }),
    );
    expect(findings.boundaries).toEqual([
      "services/decide/src/app.ts:2 imports '@plover/capture/app': services never import each other (services/capture); only services/standalone wires them",
      "services/decide/src/app.ts:3 imports '../../capture/src/app': a relative import must stay inside services/decide; import @plover/capture by name",
      "services/decide/src/app.ts:3 imports '../../capture/src/app': services never import each other (services/capture); only services/standalone wires them",
      "services/decide/src/app.ts:4 imports '../../capture/src/page.css': a relative import must stay inside services/decide; import @plover/capture by name",
    ]);
  });

  it('rejects a service importing the composition root, and a package importing a service', () => {
    const withStandaloneExport = { ...standalone, exports: { './app': 'services/standalone/src/app.ts' } };
    const coreOnCapture = { ...core, dependencies: ['@plover/capture'] };
    const capturesStandalone = { ...capture, dependencies: ['@plover/core', '@plover/standalone'] };
    const findings = checkTree(
      treeWith({ 'packages/core/src/index.ts': imports('@plover/capture/app'), 'services/capture/src/app.ts': imports('@plover/standalone/app') }, [
        coreOnCapture,
        capturesStandalone,
        decide,
        withStandaloneExport,
      ]),
    );
    expect(findings.boundaries).toEqual([
      "packages/core/src/index.ts:1 imports '@plover/capture/app': packages never import services (services/capture)",
      "services/capture/src/app.ts:1 imports '@plover/standalone/app': no service imports the composition root services/standalone",
    ]);
  });

  it('lets the composition root reach other services only through what they export', () => {
    const findings = checkTree(treeWith({ 'services/standalone/src/app.ts': imports('@plover/capture', '@plover/decide/src/app') }));
    expect(findings.unresolved).toEqual([
      "services/standalone/src/app.ts:1 imports '@plover/capture': it is not an export of @plover/capture",
      "services/standalone/src/app.ts:2 imports '@plover/decide/src/app': it is not an export of @plover/decide",
    ]);
  });

  it('names an @plover/* import missing from package.json dependencies', () => {
    const findings = checkTree(treeWith({ 'services/standalone/src/app.ts': imports('@plover/core') }));
    expect(findings.undeclared).toEqual([
      "services/standalone/src/app.ts:1 imports '@plover/core': @plover/core is not in services/standalone/package.json dependencies",
    ]);
  });

  it('reports a relative import of no file (an asset beside the sources is a file) and a name that is no workspace', () => {
    const findings = checkTree(treeWith({ 'services/capture/src/app.ts': imports('./missing', '@plover/nothing', './page.css', './page') }));
    expect(findings.unresolved).toEqual([
      "services/capture/src/app.ts:1 imports './missing': no source file has that path",
      "services/capture/src/app.ts:2 imports '@plover/nothing': no workspace has that name",
      "services/capture/src/app.ts:4 imports './page': no source file has that path",
    ]);
  });

  it('rejects a workspace importing itself by name', () => {
    const findings = checkTree(treeWith({ 'services/capture/src/main.ts': imports('@plover/capture/app') }));
    expect(findings.boundaries).toEqual(["services/capture/src/main.ts:1 imports '@plover/capture/app': a workspace imports its own files by relative path"]);
  });

  it('reports a cycle through relative imports, index files, `.js` specifiers and package exports as a path of files', () => {
    const http = workspace('packages/http', ['@plover/core'], { '.': 'packages/http/src/index.ts' });
    const coreOnHttp = { ...core, dependencies: ['@plover/http'] };
    const findings = checkTree(
      treeWith(
        {
          'services/capture/src/app.ts': imports('./routes'),
          'services/capture/src/routes/index.ts': imports('../app.js'),
          'packages/core/src/index.ts': imports('@plover/http'),
          'packages/http/src/index.ts': imports('@plover/core'),
        },
        [coreOnHttp, http, capture, decide, standalone],
      ),
    );
    expect(findings.cycles).toEqual([
      'packages/core/src/index.ts → packages/http/src/index.ts → packages/core/src/index.ts',
      'services/capture/src/app.ts → services/capture/src/routes/index.ts → services/capture/src/app.ts',
    ]);
    expect(findings.boundaries).toEqual([]);
  });

  it('resolves an extensionless import to a .tsx file, and reports a cycle through one', () => {
    const consoleApp = workspace('apps/console');
    const findings = checkTree(
      treeWith(
        {
          'apps/console/src/screens.ts': imports('./screens/person', './screen-props'),
          'apps/console/src/screen-props.ts': [],
          'apps/console/src/screens/person.tsx': imports('../screens'),
        },
        [core, capture, decide, standalone, consoleApp],
      ),
    );
    expect(findings.unresolved).toEqual([]);
    expect(findings.cycles).toEqual(['apps/console/src/screens.ts → apps/console/src/screens/person.tsx → apps/console/src/screens.ts']);
  });

  it('keeps a management feature folder off other feature folders and the root of src/, and shared/ off http/', () => {
    const management = workspace('services/management', ['@plover/core']);
    const findings = checkTree(
      treeWith(
        {
          'services/management/src/routes.ts': imports('./persons/routes'),
          'services/management/src/persons/routes.ts': imports('./store', '../shared/body', '../http/table', '../recordings/store', '../routes'),
          'services/management/src/persons/store.ts': [],
          'services/management/src/recordings/store.ts': [],
          'services/management/src/shared/body.ts': imports('../http/table'),
          'services/management/src/http/table.ts': imports('../shared/errors', '../persons/store'),
          'services/management/src/shared/errors.ts': [],
        },
        [core, capture, decide, standalone, management],
      ),
    );
    expect(findings.boundaries).toEqual([
      "services/management/src/persons/routes.ts:4 imports '../recordings/store': a feature folder (persons/) imports only shared/, http/ and packages, not recordings/",
      "services/management/src/persons/routes.ts:5 imports '../routes': a feature folder (persons/) imports only shared/, http/ and packages, not routes.ts at the root of src/",
      "services/management/src/shared/body.ts:1 imports '../http/table': shared/ imports only shared/ and packages, not http/",
      "services/management/src/http/table.ts:2 imports '../persons/store': http/ imports only http/, shared/ and packages, not persons/",
    ]);
  });

  it('reports an import whose specifier is computed, which no rule could check', () => {
    const findings = checkTree(treeWith({ 'services/capture/src/app.ts': [{ specifier: 'name', line: 4, computed: true }] }));
    expect(findings.unresolved).toEqual(["services/capture/src/app.ts:4 imports 'name': a computed specifier cannot be checked"]);
  });
});

describe('findCycles', () => {
  const graph = (edges: Record<string, string[]>) => new Map(Object.entries(edges));

  it('finds none in a graph without one, however many paths join', () => {
    expect(findCycles(graph({ a: ['b', 'c'], b: ['d'], c: ['d'], d: [] }))).toEqual([]);
  });

  it('reports a file that imports itself', () => {
    expect(findCycles(graph({ a: ['a'] }))).toEqual(['a → a']);
  });

  it('reports the shortest cycle through the first file of a larger set, and its size', () => {
    expect(findCycles(graph({ d: ['a'], a: ['b'], b: ['c', 'a'], c: ['d'], e: ['a'] }))).toEqual(['a → b → a (4 files import each other in a cycle)']);
  });
});

describe('importsOf', () => {
  it('finds every form of import with its line, type-only ones included', () => {
    const source = [
      "import fs from 'node:fs';",
      "import type { A } from './a';",
      "import './side-effect';",
      "export { b } from './b';",
      "export * from './c';",
      "export type { D } from './d';",
      "import e = require('./e');",
      'type F = import("./f").F;',
      "const g = () => import('./g');",
      "const h = require('./h');",
      'const i = (name: string) => import(name);',
      "const j = 'not an import';",
    ].join('\n');
    expect(importsOf('x.ts', source)).toEqual([
      { specifier: 'node:fs', line: 1 },
      { specifier: './a', line: 2 },
      { specifier: './side-effect', line: 3 },
      { specifier: './b', line: 4 },
      { specifier: './c', line: 5 },
      { specifier: './d', line: 6 },
      { specifier: './e', line: 7 },
      { specifier: './f', line: 8 },
      { specifier: './g', line: 9 },
      { specifier: './h', line: 10 },
      { specifier: 'name', line: 11, computed: true },
    ]);
  });
});
