/**
 * The personal API key of this tab, in sessionStorage: it lasts until the tab closes, is never sent as a cookie
 * and never appears in a URL. The session replay page (`/replay/…`) reads the same entry, so a signed-in tab
 * opens recordings without asking again.
 */
const KEY_STORAGE = 'plover.apiKey';

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(KEY_STORAGE, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY_STORAGE);
}
