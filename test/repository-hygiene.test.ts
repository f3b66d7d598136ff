/**
 * The repository stands on its own: no comment or document in a tracked file points at something a clone
 * does not have — a directory beside the checkout, notes or a specification kept elsewhere, an issue
 * tracker's numbers, or a Markdown link to a file that is not tracked. Upstream projects' public issues,
 * written `owner/repo#N`, are sources anyone can read, and stay allowed. In TypeScript and JavaScript only
 * the comments are read: string literals are data (this file's own examples among them).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..');

/** Phrases that refer to what lies outside the repository, each with what it refers to. */
const OUTSIDE: Array<[RegExp, string]> = [
  [/\.\.\/shared\b/g, 'a directory beside the checkout'],
  [/\bSPEC\b/g, 'a specification kept outside the repository'],
  [/\breference\/[\w.-]+\.md\b/g, 'notes kept outside the repository'],
  [/\bissues?\s*#?\d+|(?<![\w/.-])#\d+\b/gi, 'an issue tracker'],
  [/\b(?:the|this|that|see)\s+(?:[\w`'"-]+\s+){0,4}issue\b/gi, 'an issue tracker'],
];

/**
 * Where `text`, the content of the repository-relative `file`, refers outside the repository, as
 * `file:line: 'match' refers to …`. `tracked` holds every tracked file and every directory above one.
 */
function outsideReferences(file: string, text: string, tracked: ReadonlySet<string>): string[] {
  const found: string[] = [];
  const dir = path.posix.dirname(file);
  text.split('\n').forEach((line, index) => {
    const at = (match: string, what: string) => found.push(`${file}:${index + 1}: '${match}' refers to ${what}`);
    for (const [pattern, what] of OUTSIDE) for (const [match] of line.matchAll(pattern)) at(match, what);
    for (const [match] of line.matchAll(/(?<![\w.])(?:\.\.\/)+[\w.@/-]*/g)) {
      if (path.posix.join(dir, match).startsWith('..')) at(match, 'a path above the repository');
    }
    if (!file.endsWith('.md')) return;
    for (const [, target] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const linked = target!.split('#')[0]!;
      if (!linked || /^[a-z][\w+.-]*:/i.test(linked)) continue; // an anchor on the same page, or a URL
      const resolved = (linked.startsWith('/') ? linked.slice(1) : path.posix.join(dir, linked)).replace(/\/$/, '');
      if (!tracked.has(resolved)) at(target!, 'a file the repository does not track');
    }
  });
  return found;
}

/**
 * `text` with everything but its comments blanked out, line breaks kept, so lines keep their numbers. The
 * scanner reads the comments; the parse tells it where a `/` starts a regular expression and where a `}`
 * goes on with a template, which it cannot tell alone.
 */
function commentsOf(file: string, text: string): string {
  const regexes = new Set<number>();
  const templates = new Set<number>();
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const visit = (node: ts.Node) => {
    if (ts.isRegularExpressionLiteral(node)) regexes.add(node.getStart(source));
    else if (ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) templates.add(node.getStart(source));
    ts.forEachChild(node, visit);
  };
  visit(source);
  const kept = text.replace(/[^\n]/g, ' ').split('');
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text);
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    const start = scanner.getTokenStart();
    if (regexes.has(start)) scanner.reScanSlashToken();
    else if (templates.has(start)) scanner.reScanTemplateToken(false);
    else if (kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia) {
      for (let at = start; at < scanner.getTokenEnd(); at++) kept[at] = text[at]!;
    }
  }
  return kept.join('');
}

/** Every tracked file, and every directory that holds one, relative to the root. */
function trackedPaths(files: string[]): Set<string> {
  const paths = new Set<string>();
  for (const file of files) for (let at = file; at !== '.'; at = path.posix.dirname(at)) paths.add(at);
  return paths;
}

describe('the tracked files', () => {
  it('refer to nothing outside the repository', () => {
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
    const tracked = trackedPaths(files);
    const found = files
      .filter((file) => !file.split('/').includes('node_modules'))
      .flatMap((file) => {
        const text = readFileSync(path.join(ROOT, file), 'utf8');
        if (text.includes('\0')) return [];
        return outsideReferences(file, /\.[cm]?[jt]s$/.test(file) ? commentsOf(file, text) : text, tracked);
      });
    expect(found).toEqual([]);
  });
});

describe('commentsOf', () => {
  it('keeps the comments of a source, on their lines, and blanks its code and strings', () => {
    const source = [
      "/** Doc. */ const a = '// not a comment';",
      'f(a); // trailing',
      '/* block',
      ' end */ const b = /x\\/\\/* y/;',
      'const c = `${a} // ${b} /* no */`; // last',
    ].join('\n');
    expect(
      commentsOf('x.ts', source)
        .split('\n')
        .map((line) => line.trim()),
    ).toEqual(['/** Doc. */', '// trailing', '/* block', 'end */', '// last']);
  });
});

describe('outsideReferences', () => {
  const tracked = trackedPaths(['README.md', 'docs/capture.md', 'services/capture/src/app.ts']);
  const check = (file: string, text: string) => outsideReferences(file, text, tracked);

  it('accepts links and paths inside the repository, URLs, anchors and upstream issues', () => {
    const text = [
      'See [capture](capture.md#limits), [the README](../README.md), [the app](/services/capture/src/app.ts), [its sources](../services/capture/src/) and [top](#top).',
      'Upstream: [PostHog](https://posthog.com/docs), PostHog/posthog#5527 and posthog-js-lite#244; the `../README.md` file.',
      'An issue of ordering is not the tracker; colours like #fff are not numbers.',
    ].join('\n');
    expect(check('docs/capture.md', text)).toEqual([]);
  });

  it('names the file, line and phrase of each reference to elsewhere', () => {
    const text = ['// Decided in ../shared/notes.md, SPEC §4.2 and reference/posthog-capture.md.', '// Fixes issue #12; see #7 and the flag-store issue.'].join(
      '\n',
    );
    expect(check('services/capture/src/app.ts', text)).toEqual([
      "services/capture/src/app.ts:1: '../shared' refers to a directory beside the checkout",
      "services/capture/src/app.ts:1: 'SPEC' refers to a specification kept outside the repository",
      "services/capture/src/app.ts:1: 'reference/posthog-capture.md' refers to notes kept outside the repository",
      "services/capture/src/app.ts:2: 'issue #12' refers to an issue tracker",
      "services/capture/src/app.ts:2: '#7' refers to an issue tracker",
      "services/capture/src/app.ts:2: 'the flag-store issue' refers to an issue tracker",
    ]);
  });

  it('reports a relative path that climbs above the repository, and a Markdown link to an untracked file', () => {
    const text = 'Read ../../../work/notes.md and [the design](design.md), [old](../services/old/README.md#x).';
    expect(check('docs/capture.md', text)).toEqual([
      "docs/capture.md:1: '../../../work/notes.md' refers to a path above the repository",
      "docs/capture.md:1: 'design.md' refers to a file the repository does not track",
      "docs/capture.md:1: '../services/old/README.md#x' refers to a file the repository does not track",
    ]);
  });
});
