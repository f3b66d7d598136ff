/**
 * `work`, or a rejection with `timedOut()` once `ms` milliseconds have passed, whichever comes first. The error is
 * built when the time is up, so it can describe that moment. The timer is cleared either way; `work` goes on, and
 * a failure of it after the timeout is handled here (nobody waits for it then).
 */
export function withTimeout<T>(work: Promise<T> | T, ms: number, timedOut: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut()), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
