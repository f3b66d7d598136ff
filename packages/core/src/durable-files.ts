/**
 * fsync on the host for files other code wrote without syncing (an unpacked tarball, a copied tree, an engine
 * that does not sync its directories). A file or directory survives a power loss once it is synced and so is
 * the directory entry naming it, i.e. its parent.
 */
import { open, readdir } from 'node:fs/promises';
import path from 'node:path';

/** fsyncs one file or directory. */
export async function fsyncPath(file: string): Promise<void> {
  const handle = await open(file, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** fsyncs every file and directory under `dir`, and `dir` itself: children before the directory naming them. */
export async function syncTree(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) await syncTree(child);
    else if (entry.isFile()) await fsyncPath(child);
  }
  await fsyncPath(dir);
}

/** syncTree, then the parent: `dir` and everything under it survive a power loss. */
export async function syncTreeAndParent(dir: string): Promise<void> {
  await syncTree(dir);
  await fsyncPath(path.dirname(path.resolve(dir)));
}
