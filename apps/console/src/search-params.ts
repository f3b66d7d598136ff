import { navigate, useLocation } from './router';

/**
 * A screen's state kept in its address's query string (a search, a page), so that going back to the screen, a
 * reload or a shared link shows the same thing. Changes replace the history entry rather than add one.
 */
export function useSearchParams(): [URLSearchParams, (changes: Record<string, string | undefined>) => void] {
  const { path, search } = useLocation();
  const update = (changes: Record<string, string | undefined>) => {
    const next = new URLSearchParams(window.location.search);
    for (const [name, value] of Object.entries(changes)) {
      if (value === undefined || value === '') next.delete(name);
      else next.set(name, value);
    }
    const query = next.toString();
    navigate(query === '' ? path : `${path}?${query}`, { replace: true });
  };
  return [search, update];
}
