/**
 * Client-side routes over the History API: the server answers every console path with index.html, and the
 * console picks the screen from screens.ts by its path.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<() => void>();
const notify = () => listeners.forEach((listener) => listener());
window.addEventListener('popstate', notify);

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  notify();
}

/** The current location; re-renders the caller when it changes. */
export function useLocation(): { path: string; search: URLSearchParams } {
  const [, setVersion] = useState(0);
  useEffect(() => {
    const listener = () => setVersion((version) => version + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return { path: window.location.pathname, search: new URLSearchParams(window.location.search) };
}

/** A link that changes screens without reloading the page (a modified click still opens a new tab). */
export function Link({ href, children, ...rest }: { href: string; children: ComponentChildren; class?: string; 'aria-current'?: 'page' }) {
  const onClick = (event: MouseEvent) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} onClick={onClick} {...rest}>
      {children}
    </a>
  );
}
