/**
 * An experiment end to end, as a team runs one: embedded Plover (`npm start`) in a child process, the experiment
 * created and launched through the management API, the real posthog-node SDK assigning variants through `/flags`
 * (sending `$feature_flag_called`) and capturing conversions, the results through `/query/`; then shipping the
 * winner makes `/flags` serve it to everyone.
 */
import { PostHog } from 'posthog-node';
import { startEmbedded, type EmbeddedPlover } from './support/embedded';

jest.setTimeout(300_000);

const FLAG = 'checkout-redesign';
const USERS = 240;

/** Waits (polling, at most 60 s) until `check` answers a value. */
async function until<T>(check: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('an experiment with posthog-node (embedded Plover)', () => {
  let plover: EmbeddedPlover;
  let api: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: Record<string, unknown> }>;

  beforeAll(async () => {
    plover = await startEmbedded();
    const base = `http://127.0.0.1:${plover.port}/api/projects/${plover.credentials.projectId}`;
    api = async (method, path, body) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { Authorization: `Bearer ${plover.credentials.personalKey}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
  });

  afterAll(async () => {
    await plover?.stop();
  });

  it('assigns variants, counts exposures and conversions, finds the winner, and ships it to everyone', async () => {
    const created = await api('post', '/experiments/', { name: 'Checkout redesign', feature_flag_key: FLAG });
    expect(created.status).toBe(201);
    const id = created.body.id as number;
    expect((await api('post', `/experiments/${id}/launch/`)).status).toBe(200);

    const client = new PostHog(plover.credentials.token, { host: `http://127.0.0.1:${plover.port}`, flushAt: 50, flushInterval: 0, fetchRetryCount: 0 });
    const assigned = new Map<string, number>();
    const converted = new Map<string, number>();
    // The redesign converts half its users, control one in ten: assignment is the SDK's, conversion the test's.
    for (let i = 0; i < USERS; i++) {
      const user = `user-${i}`;
      const variant = await client.getFeatureFlag(FLAG, user);
      expect(variant === 'control' || variant === 'test').toBe(true);
      assigned.set(String(variant), (assigned.get(String(variant)) ?? 0) + 1);
      const converts = variant === 'test' ? i % 2 === 0 : i % 10 === 0;
      if (converts) {
        client.capture({ distinctId: user, event: 'purchase' });
        converted.set(String(variant), (converted.get(String(variant)) ?? 0) + 1);
      }
    }
    await client.shutdown();
    expect(assigned.get('control')).toBeGreaterThan(USERS * 0.3);
    expect(assigned.get('test')).toBeGreaterThan(USERS * 0.3);

    const query = (node: Record<string, unknown>) => api('post', '/query/', { query: { ...node, experiment_id: id }, refresh: 'force_blocking' });
    const exposures = await until(async () => {
      const res = await query({ kind: 'ExperimentExposureQuery' });
      const totals = res.body.total_exposures as Record<string, number> | undefined;
      return totals && (totals.control ?? 0) + (totals.test ?? 0) === USERS ? totals : undefined;
    }, `${USERS} exposures`);
    expect(exposures).toEqual({ control: assigned.get('control'), test: assigned.get('test') });

    const metric = { kind: 'ExperimentMetric', metric_type: 'funnel', goal: 'increase', series: [{ kind: 'EventsNode', event: 'purchase' }] };
    const results = await until(async () => {
      const res = await query({ kind: 'ExperimentQuery', metric });
      const baseline = res.body.baseline as { sum: number } | undefined;
      const [variant] = (res.body.variant_results ?? []) as { sum: number }[];
      // Every conversion stored and counted in its variant.
      return baseline?.sum === converted.get('control') && variant?.sum === converted.get('test') ? res.body : undefined;
    }, 'every conversion');
    const [test] = results.variant_results as Record<string, unknown>[];
    expect(results.baseline).toMatchObject({ key: 'control', number_of_samples: assigned.get('control'), validation_failures: [] });
    expect(test).toMatchObject({ key: 'test', number_of_samples: assigned.get('test'), method: 'bayesian', significant: true, validation_failures: [] });
    expect(test!.chance_to_win as number).toBeGreaterThan(0.95);

    const shipped = await api('post', `/experiments/${id}/ship_variant/`, { variant_key: 'test', conclusion: 'won' });
    expect(shipped.body).toMatchObject({ status: 'stopped', conclusion: 'won' });
    const after = new PostHog(plover.credentials.token, { host: `http://127.0.0.1:${plover.port}`, flushAt: 50, flushInterval: 0, fetchRetryCount: 0 });
    // Decide picks up the definitions change within its poll interval.
    await until(async () => ((await after.getFeatureFlag(FLAG, 'someone-new')) === 'test' ? true : undefined), 'the shipped variant');
    const served = await Promise.all([...Array(40).keys()].map((i) => after.getFeatureFlag(FLAG, `new-user-${i}`)));
    expect(new Set(served)).toEqual(new Set(['test']));
    await after.shutdown();
  });
});
