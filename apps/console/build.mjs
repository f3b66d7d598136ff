/**
 * Builds the console with Vite: `node apps/console/build.mjs <output dir>`. The output holds `source-hash`, the
 * sha256 of every input (index.html, src/, this file, package.json, which pins the bundled libraries, and the
 * TypeScript settings src/tsconfig.json extends); when it matches the sources, nothing is built, so a start that
 * finds a current build costs one hash. A new build is written beside the output and renamed into place, so a
 * reader never sees half of one.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.dirname(fileURLToPath(import.meta.url));
// src/tsconfig.json extends the repository's base config, which Vite's transform reads too.
const INPUTS = ['index.html', 'package.json', 'build.mjs', 'src', '../../tsconfig.base.json'];
export const HASH_FILE = 'source-hash';

async function filesOf(entry) {
  const full = path.join(ROOT, entry);
  if (!(await fs.stat(full)).isDirectory()) return [entry];
  const names = await fs.readdir(full, { recursive: true, withFileTypes: true });
  return names.filter((name) => name.isFile()).map((name) => path.relative(ROOT, path.join(name.parentPath, name.name)));
}

/** The sha256 of the inputs' relative paths and contents, in path order. */
export async function sourceHash() {
  const files = (await Promise.all(INPUTS.map(filesOf))).flat().sort();
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(`${file.split(path.sep).join('/')}\0`);
    hash.update(await fs.readFile(path.join(ROOT, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

async function readHash(dir) {
  try {
    return (await fs.readFile(path.join(dir, HASH_FILE), 'utf8')).trim();
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Builds into `outDir` unless it already holds the build of these sources; true when it built. */
export async function buildConsole(outDir) {
  const hash = await sourceHash();
  if ((await readHash(outDir)) === hash) return false;
  const { build } = await import('vite');
  const staging = `${outDir}.building-${process.pid}`;
  await build({
    root: ROOT,
    configFile: false,
    envDir: false,
    logLevel: 'warn',
    base: '/',
    oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
    build: {
      outDir: staging,
      emptyOutDir: true,
      assetsDir: 'assets',
      // Nothing inline: the page's Content-Security-Policy allows scripts and styles from files only.
      assetsInlineLimit: 0,
      modulePreload: { polyfill: false },
      reportCompressedSize: false,
      target: 'es2022',
    },
  });
  await fs.writeFile(path.join(staging, HASH_FILE), `${hash}\n`);
  await swapIn(staging, outDir, hash);
  return true;
}

/**
 * Moves the staged build to `outDir`, the old one aside first. Two processes may build the same sources at once
 * (two servers started together): when the other one's build lands in between, it is the same, and ours goes.
 */
async function swapIn(staging, outDir, hash) {
  const previous = `${outDir}.previous-${process.pid}`;
  try {
    await fs.rename(outDir, previous).catch((error) => {
      if (error.code !== 'ENOENT') throw error;
    });
    await fs.rename(staging, outDir);
  } catch (error) {
    if ((error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') || (await readHash(outDir)) !== hash) throw error;
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
    await fs.rm(previous, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outDir = path.resolve(process.argv[2] ?? path.join(ROOT, 'dist'));
  const built = await buildConsole(outDir);
  console.log(built ? `console built into ${outDir}` : `console in ${outDir} is up to date`);
}
