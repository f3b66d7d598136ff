/**
 * A load that runs at most once at a time and, once it succeeded, never again: the first call starts it, later
 * calls share its promise. A failed load is forgotten, so the next call tries again (a page bundle that failed
 * to build is built again at the next request, not answered with the old failure forever).
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => {
    loaded ??= load().catch((error: unknown) => {
      loaded = undefined;
      throw error;
    });
    return loaded;
  };
}
