/**
 * The player's browser bundle (`player.js`, `player.css`), built with esbuild from `browser/`. A build of the
 * service writes it beside the compiled code (`npm run build`, the management image); running from the
 * TypeScript sources, it is built in memory at the first request instead, so it always matches the sources.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

export type PlayerAssets = ReadonlyMap<string, Uint8Array>;

/** Where the built bundle lives: beside this module, so only a compiled service finds one. */
export const BUILT_ASSETS_DIR = path.join(__dirname, 'assets');
const ENTRY = path.resolve(__dirname, '../../src/replay-player/browser/main.ts');
const NAMES = ['player.js', 'player.css'];

/** Bundles the page's script and styles (esbuild is a build-time dependency, loaded only here). */
export async function bundlePlayer(): Promise<PlayerAssets> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: { player: ENTRY },
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['es2022'],
    outdir: 'out',
    write: false,
    logLevel: 'silent',
  });
  return new Map(result.outputFiles.map((file) => [path.basename(file.path), file.contents]));
}

/** The built bundle from `dir`, or undefined when it was not built there. */
export async function readBuiltPlayer(dir = BUILT_ASSETS_DIR): Promise<PlayerAssets | undefined> {
  try {
    return new Map(await Promise.all(NAMES.map(async (name) => [name, await fs.readFile(path.join(dir, name))] as const)));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Writes the bundle into `dir` (the build step). */
export async function writePlayer(dir = BUILT_ASSETS_DIR): Promise<void> {
  const assets = await bundlePlayer();
  await fs.mkdir(dir, { recursive: true });
  await Promise.all([...assets].map(([name, contents]) => fs.writeFile(path.join(dir, name), contents)));
}
