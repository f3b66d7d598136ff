/**
 * The console's files (apps/console, built by Vite). A build of the service writes them beside the compiled
 * code (`npm run build`, the management image); running from the TypeScript sources, the console is built into
 * its own `dist/` at the first request instead, and only when its sources changed since the last build there
 * (apps/console/build.mjs keeps a hash of them). Files are held in memory, with their gzip.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';

export interface ConsoleFile {
  contents: Buffer;
  gzip: Buffer;
  type: string;
}

/** By URL path: `/index.html`, `/assets/index-<hash>.js`, … */
export type ConsoleAssets = ReadonlyMap<string, ConsoleFile>;

/** Where a compiled service keeps the console: beside this module, so running from the sources never finds one. */
export const BUILT_CONSOLE_DIR = path.join(__dirname, 'app');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** The console's built files in `dir`, or undefined when it holds no build. */
export async function readConsole(dir: string): Promise<ConsoleAssets | undefined> {
  let names: string[];
  try {
    names = await fs.readdir(dir, { recursive: true, encoding: 'utf8' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (!names.includes('index.html')) return undefined;
  const assets = new Map<string, ConsoleFile>();
  for (const name of names) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    const contents = await fs.readFile(path.join(dir, name));
    assets.set(`/${name.split(path.sep).join('/')}`, { contents, gzip: gzipSync(contents), type });
  }
  return assets;
}

/**
 * The console workspace: linked by a full `npm install` and installed beside management in the image's build
 * stage, never in its runtime stage, which carries the built files instead.
 */
function consoleSources(): string {
  return path.dirname(require.resolve('@plover/console/package.json'));
}

/** Runs the console's build script (in its own process: Vite stays out of the server's heap) into `outDir`. */
export async function buildConsole(outDir: string): Promise<void> {
  const script = path.join(consoleSources(), 'build.mjs');
  await promisify(execFile)(process.execPath, [script, outDir], { timeout: 300_000 });
}

/** The compiled service's console, else the console built (when its sources changed) from the sources. */
export async function loadConsole(): Promise<ConsoleAssets> {
  const built = await readConsole(BUILT_CONSOLE_DIR);
  if (built) return built;
  const dir = path.join(consoleSources(), 'dist');
  await buildConsole(dir);
  const assets = await readConsole(dir);
  if (!assets) throw new Error(`the console build left no index.html in ${dir}`);
  return assets;
}
