/** Real files with injected faults: a wrapper over node's fs that fails the calls a test picks as the kernel would. */
import { nodeFileSystem, type LogFile, type LogFileSystem } from '../../src/local-log/file-system';

export type Call = 'open' | 'writev' | 'datasync' | 'fsyncDir';

function errno(code: string, call: string): Error {
  return Object.assign(new Error(`${code}: ${call}`), { code });
}

/** node's fs, except that `fault` may fail a call with an errno code; a failing writev writes half its bytes first. */
export function faultyFileSystem(fault: (call: Call, file: string) => string | undefined): LogFileSystem {
  const wrap = (file: string, handle: LogFile): LogFile => ({
    read: (...args) => handle.read(...args),
    write: (...args) => handle.write(...args),
    truncate: (length) => handle.truncate(length),
    stat: () => handle.stat(),
    close: () => handle.close(),
    async writev(buffers, position) {
      const code = fault('writev', file);
      if (!code) return handle.writev(buffers, position);
      const all = Buffer.concat(buffers);
      await handle.write(all, 0, Math.floor(all.length / 2), position);
      throw errno(code, `writev ${file}`);
    },
    async datasync() {
      await handle.datasync();
      const code = fault('datasync', file);
      if (code) throw errno(code, `fdatasync ${file}`);
    },
  });
  return {
    ...nodeFileSystem,
    async open(file, flags) {
      const code = fault('open', file);
      if (code) throw errno(code, `open ${file}`);
      return wrap(file, await nodeFileSystem.open(file, flags));
    },
    async fsyncDir(dir) {
      const code = fault('fsyncDir', dir);
      if (code) throw errno(code, `fsync ${dir}`);
      await nodeFileSystem.fsyncDir(dir);
    },
  };
}
