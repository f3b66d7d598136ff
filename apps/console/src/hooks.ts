import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

/** What an asynchronous load has come to. */
export type Loaded<T> = { status: 'loading' } | { status: 'ok'; data: T } | { status: 'error'; error: unknown };

export type Load<T> = Loaded<T> & {
  /** A run is in flight (the state may still show the previous answer). */
  pending: boolean;
  reload: () => void;
};

/**
 * Runs `load` now and whenever `deps` change (aborting the previous run), and again on `reload()`. While a run
 * is in flight the state keeps the last answer on `reload()`, and also on a change of `deps` with `keep` (an
 * edited chart stays on screen until the new one arrives); otherwise it goes back to loading. A superseded run
 * never updates the state.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[], { keep = false } = {}): Load<T> {
  const [state, setState] = useState<Loaded<T>>({ status: 'loading' });
  const [pending, setPending] = useState(true);
  const [version, setVersion] = useState(0);
  const lastDeps = useRef<readonly unknown[] | null>(null);
  useEffect(() => {
    const previous = lastDeps.current;
    lastDeps.current = deps;
    const changed = !previous || previous.length !== deps.length || deps.some((dep, index) => !Object.is(dep, previous[index]));
    if (changed && !keep) setState({ status: 'loading' });
    setPending(true);
    const controller = new AbortController();
    const settle = (next: Loaded<T>) => {
      if (controller.signal.aborted) return;
      setState(next);
      setPending(false);
    };
    load(controller.signal).then(
      (data) => settle({ status: 'ok', data }),
      (error: unknown) => settle({ status: 'error', error }),
    );
    return () => controller.abort();
  }, [...deps, version]);
  const reload = useCallback(() => setVersion((value) => value + 1), []);
  return { ...state, pending, reload };
}

/** `value`, once it has stayed the same for `ms`. */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/** Calls `tick` every `ms` while the page is visible. */
export function useInterval(tick: () => void, ms: number): void {
  useEffect(() => {
    const timer = setInterval(() => document.visibilityState === 'visible' && tick(), ms);
    return () => clearInterval(timer);
  }, [tick, ms]);
}
