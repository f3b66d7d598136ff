/**
 * Real SDKs against decide: posthog-node 4.10.2 (`POST /decide/?v=3`, local evaluation at
 * `/api/feature_flag/local_evaluation`) and 5.70.0 (`POST /flags/?v=2`, `/flags/definitions`). Decide runs in
 * this process on PGlite, and (with Postgres) as distributed mode's `main.ts` with DECIDE_WORKERS=2.
 */
import { PostHog as PostHogNode4 } from 'posthog-node-4';
import { PostHog as PostHogNode5 } from 'posthog-node-5';
import request from 'supertest';
import type { Credentials } from '@plover/accounts';
import { listen } from '@plover/http';
import type { Sql } from '@plover/postgres';
import { openMigratedPGlite, openMigratedPostgres } from '../../../packages/postgres/test/support/backends';
import { startService } from '../../../test/support/processes';
import { buildApp, createGroup, createPerson, postgres, setup } from './support/harness';

interface Client {
  isFeatureEnabled(key: string, distinctId: string, options?: Record<string, unknown>): Promise<boolean | undefined>;
  getFeatureFlag(key: string, distinctId: string, options?: Record<string, unknown>): Promise<string | boolean | undefined>;
  getFeatureFlagPayload(key: string, distinctId: string, matchValue?: string | boolean, options?: Record<string, unknown>): Promise<unknown>;
  getAllFlags(distinctId: string, options?: Record<string, unknown>): Promise<Record<string, string | boolean>>;
  reloadFeatureFlags(): Promise<void>;
  shutdown(): Promise<void> | void;
}

const FLAGS = [
  { key: 'beta', filters: { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"color":"blue"}' } } },
  { key: 'half', filters: { groups: [{ properties: [], rollout_percentage: 50 }] } },
  { key: 'pro', filters: { groups: [{ properties: [{ key: 'plan', type: 'person', value: ['pro'], operator: 'exact' }], rollout_percentage: 100 }] } },
  {
    key: 'multi',
    filters: {
      groups: [{ properties: [], rollout_percentage: 100 }],
      multivariate: {
        variants: [
          { key: 'control', rollout_percentage: 34 },
          { key: 'test', rollout_percentage: 33 },
          { key: 'other', rollout_percentage: 33 },
        ],
      },
      payloads: { control: '[1,2]', test: '{"t":true}', other: '"o"' },
    },
  },
  {
    key: 'big-company',
    filters: {
      aggregation_group_type_index: 0,
      groups: [{ properties: [{ key: 'size', type: 'group', group_type_index: 0, value: 100, operator: 'gt' }], rollout_percentage: 100 }],
    },
  },
  {
    key: 'email-rollout',
    filters: { groups: [{ properties: [{ key: 'email', type: 'person', value: '@example.com', operator: 'icontains' }], rollout_percentage: 30 }] },
  },
];

/** The project, its flags, a stored person and a group, written through the flag management routes. */
async function seed(sql: Sql): Promise<Credentials> {
  const credentials = await setup(sql);
  const app = buildApp(sql);
  for (const flag of FLAGS) await request(app).post(`/api/projects/${credentials.project.id}/feature_flags/`).send(flag).expect(201);
  await createPerson(sql, credentials.project.id, ['stored-pro'], { plan: 'pro' });
  await createGroup(sql, credentials.project.id, 'company', 0, 'acme', { size: 500 });
  return credentials;
}

interface Decide {
  credentials: Credentials;
  host: string;
  close(): Promise<void>;
}

const oneProcess = async (): Promise<Decide> => {
  const database = await openMigratedPGlite();
  const credentials = await seed(database.sql);
  const server = await listen(buildApp(database.sql), { port: 0, host: '127.0.0.1' });
  return {
    credentials,
    host: `http://127.0.0.1:${server.port}`,
    async close() {
      await server.close();
      await database.close();
    },
  };
};

const twoWorkers = async (): Promise<Decide> => {
  const database = await openMigratedPostgres(postgres.url!, 2);
  const credentials = await seed(database.sql);
  const service = await startService('decide', { DATABASE_URL: database.url, PORT: '0', HOST: '127.0.0.1', DECIDE_WORKERS: '2', DECIDE_GEOIP: 'false' });
  return {
    credentials,
    host: `http://127.0.0.1:${service.port}`,
    async close() {
      await service.stop();
      await database.close();
    },
  };
};

const targets: [string, () => Promise<Decide>][] = [
  ['in this process (PGlite)', oneProcess],
  ...(postgres.url ? [['DECIDE_WORKERS=2 (main.ts, Postgres)', twoWorkers] as [string, () => Promise<Decide>]] : []),
];

describe.each(targets)('posthog-node against decide %s', (_target, open) => {
  let credentials: Credentials;
  let host: string;
  let decide: Decide;

  beforeAll(async () => {
    decide = await open();
    ({ credentials, host } = decide);
  }, 120_000);
  afterAll(() => decide?.close());

  const sdks: [string, (key: string, options: Record<string, unknown>) => Client][] = [
    ['posthog-node 4.10.2 (/decide/?v=3)', (key, options) => new PostHogNode4(key, options)],
    ['posthog-node 5.70.0 (/flags/?v=2)', (key, options) => new PostHogNode5(key, options)],
  ];

  describe.each(sdks)('%s', (_name, create) => {
    it('evaluates remotely with person and group overrides', async () => {
      const client = create(credentials.project.api_token, { host, flushAt: 1, fetchRetryCount: 0 });
      try {
        expect(await client.isFeatureEnabled('beta', 'u1')).toBe(true);
        expect(await client.getFeatureFlagPayload('beta', 'u1')).toEqual({ color: 'blue' });
        expect(await client.getFeatureFlag('pro', 'u1', { personProperties: { plan: 'pro' } })).toBe(true);
        expect(await client.getFeatureFlag('pro', 'u1')).toBe(false);
        expect(await client.getFeatureFlag('pro', 'stored-pro')).toBe(true);
        const variant = await client.getFeatureFlag('multi', 'u1');
        expect(['control', 'test', 'other']).toContain(variant);
        expect(await client.getFeatureFlagPayload('multi', 'u1')).toEqual({ control: [1, 2], test: { t: true }, other: 'o' }[variant as string]);
        expect(await client.getFeatureFlag('big-company', 'u1', { groups: { company: 'acme' } })).toBe(true);
        expect(await client.getFeatureFlag('big-company', 'u1', { groups: { company: 'acme' }, groupProperties: { company: { size: 3 } } })).toBe(false);
        const all = await client.getAllFlags('u1', { personProperties: { plan: 'pro' } });
        expect(Object.keys(all).sort()).toEqual(FLAGS.map((flag) => flag.key).sort());
        expect(all).toMatchObject({ beta: true, pro: true, 'big-company': false });
      } finally {
        await client.shutdown();
      }
    });

    it('gives the same answers with local evaluation for 500 distinct ids', async () => {
      const remote = create(credentials.project.api_token, { host, flushAt: 1, fetchRetryCount: 0 });
      const local = create(credentials.project.api_token, {
        host,
        flushAt: 1,
        fetchRetryCount: 0,
        personalApiKey: credentials.personal_api_key.value,
        featureFlagsPollingInterval: 60_000,
      });
      try {
        await local.reloadFeatureFlags();
        for (let i = 0; i < 500; i++) {
          const distinctId = `user-${i}`;
          const options = {
            personProperties: { plan: i % 3 === 0 ? 'pro' : 'free', email: `u${i}@example.com` },
            groups: { company: 'acme' },
            groupProperties: { company: { size: i } },
          };
          const locally = await local.getAllFlags(distinctId, { ...options, onlyEvaluateLocally: true });
          const remotely = await remote.getAllFlags(distinctId, options);
          expect(locally).toEqual(remotely);
        }
      } finally {
        await local.shutdown();
        await remote.shutdown();
      }
    });
  });
});
