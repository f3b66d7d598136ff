/**
 * The web console's size as a browser downloads it: builds apps/console into a fresh directory (as `npm run build`
 * does) and prints one JSON line with each file's bytes and gzip bytes (level 6, what management serves), and
 * their sums. The replay player is a separate page and not counted.
 *
 *   node --conditions=plover-source --import tsx bench/console-bundle.ts
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

const root = path.resolve(__dirname, '..');
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'plover-console-bench-'));
try {
  const started = performance.now();
  execFileSync(process.execPath, [path.join(root, 'apps/console/build.mjs'), path.join(out, 'app')], { stdio: 'ignore' });
  const buildSeconds = (performance.now() - started) / 1000;
  const dir = path.join(out, 'app');
  const files = fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.(html|js|css)$/.test(name))
    .sort()
    .map((name) => {
      const contents = fs.readFileSync(path.join(dir, name));
      return { name, bytes: contents.length, gzipBytes: gzipSync(contents).length };
    });
  const sum = (key: 'bytes' | 'gzipBytes') => files.reduce((total, file) => total + file[key], 0);
  console.log(
    JSON.stringify({ bench: 'console-bundle', buildSeconds: Number(buildSeconds.toFixed(1)), files, bytes: sum('bytes'), gzipBytes: sum('gzipBytes') }),
  );
} finally {
  fs.rmSync(out, { recursive: true, force: true });
}
