import { useState } from 'preact/hooks';

/** Hands `blob` to the browser as a download named `name`. */
export function saveFile(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

/** Starts a download of the file `file` fetches (a CSV export); the error of the last one, if it failed. */
export function useDownload(): [download: (file: () => Promise<{ name: string; blob: Blob }>) => void, error: unknown] {
  const [error, setError] = useState<unknown>();
  const download = (file: () => Promise<{ name: string; blob: Blob }>) => {
    setError(undefined);
    file().then(({ name, blob }) => saveFile(blob, name), setError);
  };
  return [download, error];
}
