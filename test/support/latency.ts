/**
 * `/flags` latency beside a load: what the reliability suites (fuzz, expensive queries) compare with the same
 * process's idle latency, measured in the same run (the machine running the tests is shared, so no absolute time).
 */

/** The `q` quantile of `values` (0.5: the median). */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/**
 * Which answers of `/flags` count: 200 by default. A load that may change the project's token (the fuzz suite's
 * management calls) takes any answer below 500: the request thread answered.
 */
export type Answered = (status: number) => boolean;

/** One `/flags` call's latency in ms; a failure or an answer `answered` refuses throws. */
export async function flagsLatency(port: number, token: string, answered: Answered = (status) => status === 200): Promise<number> {
  const started = performance.now();
  const response = await fetch(`http://127.0.0.1:${port}/flags/?v=2`, {
    method: 'POST',
    body: JSON.stringify({ token, distinct_id: `reader-${Math.floor(Math.random() * 100)}` }),
  });
  await response.arrayBuffer();
  if (!answered(response.status)) throw new Error(`/flags answered ${response.status}`);
  return performance.now() - started;
}

/** `/flags` latencies while `load` runs, one call after another; with `load`'s result. */
export async function flagsBeside<T>(port: number, token: string, load: () => Promise<T>, answered?: Answered): Promise<{ result: T; latencies: number[] }> {
  let running = true;
  const latencies: number[] = [];
  const beside = (async () => {
    while (running) latencies.push(await flagsLatency(port, token, answered));
  })();
  try {
    return { result: await load(), latencies };
  } finally {
    running = false;
    await beside;
  }
}

/**
 * Whether `/flags` stayed responsive: its p90 beside the load within a generous multiple of idle (a request thread
 * stalled behind the load is hundreds of times slower). The text says the figures either way.
 */
export function flagsVerdict(idle: readonly number[], during: readonly number[]): { ok: boolean; text: string } {
  const bound = Math.max(20 * quantile(idle, 0.9), 50 * quantile(idle, 0.5));
  const p90 = quantile(during, 0.9);
  const text =
    `/flags idle p50 ${quantile(idle, 0.5).toFixed(1)} ms p90 ${quantile(idle, 0.9).toFixed(1)} ms; beside the load ${during.length} calls ` +
    `p50 ${quantile(during, 0.5).toFixed(1)} ms p90 ${p90.toFixed(1)} ms max ${Math.max(...during).toFixed(1)} ms (bound for p90 ${bound.toFixed(0)} ms)`;
  return { ok: during.length > 5 && p90 < bound, text };
}
