/**
 * Real SDKs against decide: posthog-node 4.10.2 (`POST /decide/?v=3`, local evaluation at
 * `/api/feature_flag/local_evaluation`) and 5.70.0 (`POST /flags/?v=2`, `/flags/definitions`).
 */
import { PostHog as PostHogNode4 } from 'posthog-node-4';
import { PostHog as PostHogNode5 } from 'posthog-node-5';
import request from 'supertest';
import type { Credentials } from '@plover/accounts';
import { listen, type RunningServer } from '@plover/http';
import { migrate, type Sql } from '@plover/postgres';
import { PGliteSql } from '@plover/postgres/pglite';
import { buildApp, createGroup, createPerson, setup } from './support/harness';

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

describe('posthog-node against decide', () => {
  let sql: Sql;
  let credentials: Credentials;
  let server: RunningServer;
  let host: string;

  beforeAll(async () => {
    sql = await PGliteSql.open();
    await migrate(sql);
    credentials = await setup(sql);
    const app = buildApp(sql);
    for (const flag of FLAGS) await request(app).post(`/api/projects/${credentials.project.id}/feature_flags/`).send(flag).expect(201);
    await createPerson(sql, credentials.project.id, ['stored-pro'], { plan: 'pro' });
    await createGroup(sql, credentials.project.id, 'company', 0, 'acme', { size: 500 });
    server = await listen(app, { port: 0, host: '127.0.0.1' });
    host = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server.close();
    await sql.close();
  });

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
