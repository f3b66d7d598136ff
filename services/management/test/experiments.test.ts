import { insertEvents } from '@plover/clickhouse';
import { eventRow } from '../../../packages/insights/test/support/event-row';
import { backends, tenantOf, useWorld } from './support/app';
import { useChdb } from './support/recordings';

type Body = Record<string, unknown>;

const clickhouse = useChdb();

/** ClickHouse DateTime64 text of an instant. */
const chTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

describe.each(backends)('experiments on $name', (backend) => {
  const world = useWorld(backend, { clickhouse });

  it('creates the multivariate flag of a new key (control first, inactive while a draft), under both prefixes', async () => {
    const s = await tenantOf(world);
    const created = await s.call('post', '/experiments/', { name: 'Checkout', description: 'New checkout', feature_flag_key: 'new-checkout' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Checkout',
      description: 'New checkout',
      feature_flag_key: 'new-checkout',
      start_date: null,
      end_date: null,
      status: 'draft',
      archived: false,
      deleted: false,
      type: 'product',
      metrics: [],
      saved_metrics: [],
      holdout: null,
      conclusion: null,
    });
    expect(created.body.feature_flag).toMatchObject({ key: 'new-checkout', active: false, deleted: false });
    expect(created.body.feature_flag.filters).toMatchObject({
      groups: [{ properties: [], rollout_percentage: 100 }],
      multivariate: {
        variants: [
          { key: 'control', rollout_percentage: 50 },
          { key: 'test', rollout_percentage: 50 },
        ],
      },
    });
    const flag = await s.call('get', `/feature_flags/${created.body.feature_flag.id}/`);
    expect(flag.body).toMatchObject({ key: 'new-checkout', active: false, experiment_set: [created.body.id] });

    const viaEnvironments = await s.call('get', `/experiments/${created.body.id}/`, undefined, s.key, 'environments');
    expect(viaEnvironments.status).toBe(200);
    expect(viaEnvironments.body.id).toBe(created.body.id);

    // Variants from the parameters: split_percent is rollout_percentage, `Control` is control.
    const three = await s.call('post', '/experiments/', {
      name: 'Three',
      feature_flag_key: 'three-way',
      parameters: {
        feature_flag_variants: [
          { key: 'Control', split_percent: 34 },
          { key: 'a', split_percent: 33 },
          { key: 'b', split_percent: 33 },
        ],
      },
    });
    expect(three.status).toBe(201);
    expect((three.body.feature_flag.filters.multivariate.variants as Body[]).map((v: Body) => [v.key, v.rollout_percentage])).toEqual([
      ['control', 34],
      ['a', 33],
      ['b', 33],
    ]);
    for (const [variants, attr] of [
      [[{ key: 'control', rollout_percentage: 100 }], 'parameters'],
      [
        [
          { key: 'a', rollout_percentage: 50 },
          { key: 'b', rollout_percentage: 50 },
        ],
        'parameters',
      ],
    ] as const) {
      const refused = await s.call('post', '/experiments/', { name: 'Bad', feature_flag_key: 'bad-variants', parameters: { feature_flag_variants: variants } });
      expect({ status: refused.status, attr: refused.body.attr }).toEqual({ status: 400, attr });
    }
    expect((await s.call('post', '/experiments/', { name: 'No key' })).body.attr).toBe('feature_flag_key');
    expect((await s.call('post', '/experiments/', { feature_flag_key: 'no-name' })).body.attr).toBe('name');
  });

  it('reuses an eligible flag only (multivariate, two variants or more, control first); eligible_feature_flags lists those', async () => {
    const s = await tenantOf(world);
    const flag = (key: string, filters: Body) => s.call('post', '/feature_flags/', { key, filters });
    const group = [{ properties: [], rollout_percentage: 100 }];
    await flag('plain', { groups: group });
    await flag('test-first', {
      groups: group,
      multivariate: {
        variants: [
          { key: 'test', rollout_percentage: 50 },
          { key: 'control', rollout_percentage: 50 },
        ],
      },
    });
    const eligible = await flag('eligible', {
      groups: group,
      multivariate: {
        variants: [
          { key: 'control', rollout_percentage: 50 },
          { key: 'test', rollout_percentage: 50 },
        ],
      },
    });
    for (const key of ['plain', 'test-first']) {
      const refused = await s.call('post', '/experiments/', { name: key, feature_flag_key: key });
      expect({ key, status: refused.status, attr: refused.body.attr }).toEqual({ key, status: 400, attr: 'feature_flag_key' });
    }
    const listed = await s.call('get', '/experiments/eligible_feature_flags/');
    expect(listed.status).toBe(200);
    expect((listed.body.results as Body[]).map((f) => f.key)).toEqual(['eligible']);

    const reused = await s.call('post', '/experiments/', { name: 'Reuse', feature_flag_key: 'eligible' });
    expect(reused.status).toBe(201);
    expect(reused.body.feature_flag.id).toBe(eligible.body.id);

    // A flag an experiment uses cannot be deleted, until the experiment is.
    const deleteFlag = () => s.call('patch', `/feature_flags/${eligible.body.id}/`, { deleted: true });
    expect((await deleteFlag()).status).toBe(400);
    expect((await s.call('patch', `/experiments/${reused.body.id}/`, { deleted: true })).status).toBe(200);
    expect((await deleteFlag()).status).toBe(200);
  });

  it('launch, pause, resume, end, ship a variant, reset, duplicate, archive; list filters; soft delete only', async () => {
    const s = await tenantOf(world);
    const exp = (await s.call('post', '/experiments/', { name: 'Pricing page', feature_flag_key: 'pricing' })).body as Body & {
      id: number;
      feature_flag: { id: number };
    };
    const act = (action: string, body: Body = {}) => s.call('post', `/experiments/${exp.id}/${action}/`, body);
    const flag = async () => (await s.call('get', `/feature_flags/${exp.feature_flag.id}/`)).body as Body & { filters: Body };

    expect((await act('pause')).status).toBe(400);
    expect((await act('ship_variant', { variant_key: 'test' })).status).toBe(400);
    const launched = await act('launch');
    expect(launched.body).toMatchObject({ status: 'running' });
    expect(typeof launched.body.start_date).toBe('string');
    expect((await flag()).active).toBe(true);
    expect((await act('launch')).status).toBe(400);

    expect((await act('pause')).body.status).toBe('paused');
    expect((await flag()).active).toBe(false);
    expect((await act('pause')).status).toBe(400);
    expect((await act('resume')).body.status).toBe('running');
    expect((await flag()).active).toBe(true);

    const ended = await act('end', { conclusion: 'won', conclusion_comment: 'Clear win' });
    expect(ended.body).toMatchObject({ status: 'stopped', conclusion: 'won', conclusion_comment: 'Clear win' });
    expect((await flag()).active).toBe(true);
    expect((await act('end')).status).toBe(400);

    expect((await act('ship_variant', { variant_key: 'nope' })).status).toBe(400);
    const shipped = await act('ship_variant', { variant_key: 'test', release_to_everyone: true });
    expect(shipped.status).toBe(200);
    const shippedFlag = await flag();
    expect(shippedFlag.filters.multivariate).toEqual({
      variants: [
        { key: 'control', name: 'Control Group', rollout_percentage: 0 },
        { key: 'test', name: 'Test Variant', rollout_percentage: 100 },
      ],
    });
    expect((shippedFlag.filters.groups as Body[])[0]).toMatchObject({ properties: [], rollout_percentage: 100 });
    expect(shippedFlag.filters.groups).toHaveLength(2);

    const copy = await act('duplicate');
    expect(copy.status).toBe(201);
    expect(copy.body).toMatchObject({ name: 'Pricing page (Copy)', status: 'draft', feature_flag_key: 'pricing' });

    const archived = await act('archive');
    expect(archived.body.archived).toBe(true);
    const names = async (query: string) => ((await s.call('get', `/experiments/?${query}`)).body.results as Body[]).map((e) => e.name);
    expect(await names('')).toEqual(['Pricing page (Copy)']);
    expect(await names('archived=true')).toEqual(['Pricing page']);
    expect(await names('archived=true&status=stopped')).toEqual(['Pricing page']);
    expect(await names('status=draft')).toEqual(['Pricing page (Copy)']);
    expect(await names('status=running')).toEqual([]);
    expect(await names('search=copy')).toEqual(['Pricing page (Copy)']);
    expect(await names(`feature_flag_id=${exp.feature_flag.id}`)).toEqual(['Pricing page (Copy)']);
    expect((await act('unarchive')).body.archived).toBe(false);
    expect(await names('order=name')).toEqual(['Pricing page', 'Pricing page (Copy)']);
    expect(await names('order=-name')).toEqual(['Pricing page (Copy)', 'Pricing page']);

    const reset = await act('reset');
    expect(reset.body).toMatchObject({ status: 'draft', start_date: null, end_date: null, conclusion: null });
    expect((await flag()).active).toBe(false);

    expect((await s.call('delete', `/experiments/${exp.id}/`)).status).toBe(405);
    expect((await s.call('patch', `/experiments/${exp.id}/`, { deleted: true })).status).toBe(200);
    expect((await s.call('get', `/experiments/${exp.id}/`)).status).toBe(404);
    expect(await names('')).toEqual(['Pricing page (Copy)']);
  });

  it('checks the experiment scopes', async () => {
    const s = await tenantOf(world);
    const reader = await world.newKey(s.userId, ['experiment:read']);
    expect((await s.call('get', '/experiments/', undefined, reader)).status).toBe(200);
    const refused = await s.call('post', '/experiments/', { name: 'X', feature_flag_key: 'x' }, reader);
    expect(refused.status).toBe(403);
  });

  it('ExperimentExposureQuery and ExperimentQuery: exposures per variant and day, statistics after the first exposure, compared with control', async () => {
    const s = await tenantOf(world);
    const exp = (await s.call('post', '/experiments/', { name: 'Signup', feature_flag_key: 'signup-flow' })).body as { id: number };
    expect((await s.call('post', `/experiments/${exp.id}/launch/`)).status).toBe(200);
    const start = Date.now() - 3 * 3_600_000;
    await s.call('patch', `/experiments/${exp.id}/`, { start_date: new Date(start).toISOString() });

    let n = 0;
    const uuid = () => `00000000-0000-7000-8000-${(++n).toString(16).padStart(12, '0')}`;
    const person = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
    const event = (who: number, name: string, at: number, properties: Body = {}) =>
      eventRow({ uuid: uuid(), projectId: s.projectId, event: name, at: chTime(at), person: person(who), properties });
    const exposure = (who: number, variant: string, at: number) =>
      event(who, '$feature_flag_called', at, { $feature_flag: 'signup-flow', $feature_flag_response: variant });
    const rows = [];
    // 60 units per variant exposed an hour after the start; 6 control and 30 test units sign up after it.
    for (let i = 0; i < 120; i++) {
      const variant = i < 60 ? 'control' : 'test';
      rows.push(exposure(i, variant, start + 3_600_000));
      const converts = variant === 'control' ? i < 6 : i < 90;
      if (converts) rows.push(event(i, 'signed up', start + 3_600_000 + 60_000));
    }
    // Ignored: a sign-up before the exposure, an exposure before the start, another flag, a value that is no variant,
    // and a unit seen in both variants.
    rows.push(event(10, 'signed up', start + 60_000), exposure(200, 'test', start - 60_000), exposure(201, 'false', start + 60_000));
    rows.push(event(202, '$feature_flag_called', start + 60_000, { $feature_flag: 'other', $feature_flag_response: 'test' }));
    rows.push(exposure(203, 'control', start + 60_000), exposure(203, 'test', start + 120_000), event(203, 'signed up', start + 180_000));
    await insertEvents(clickhouse(), rows);

    const exposures = await s.call('post', '/query/', { query: { kind: 'ExperimentExposureQuery', experiment_id: exp.id } });
    expect(exposures.status).toBe(200);
    expect(exposures.body.total_exposures).toEqual({ control: 60, test: 60, $multiple: 1 });
    expect((exposures.body.timeseries as Body[]).map((series) => series.variant)).toEqual(['control', 'test', '$multiple']);
    const control = exposures.body.timeseries[0] as { days: string[]; exposure_counts: number[] };
    expect(control.exposure_counts.at(-1)).toBe(60);
    expect(control.days.length).toBe(control.exposure_counts.length);

    const metric = { kind: 'ExperimentMetric', metric_type: 'funnel', goal: 'increase', series: [{ kind: 'EventsNode', event: 'signed up' }] };
    const result = await s.call('post', '/query/', { query: { kind: 'ExperimentQuery', experiment_id: exp.id, metric } });
    expect(result.status).toBe(200);
    expect(result.body.baseline).toEqual({
      key: 'control',
      number_of_samples: 60,
      sum: 6,
      sum_squares: 6,
      step_counts: [6],
      validation_failures: [],
    });
    const [test] = result.body.variant_results as Body[];
    expect(test).toMatchObject({ key: 'test', number_of_samples: 60, sum: 30, step_counts: [30], method: 'bayesian', significant: true });
    // 50 % against 10 % of 60 units: a relative lift of 4 whose delta-method deviation is about 2.
    expect(test!.chance_to_win as number).toBeGreaterThan(0.95);

    const mean = await s.call('post', '/query/', {
      query: {
        kind: 'ExperimentQuery',
        experiment_id: exp.id,
        metric: { kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'signed up' } },
      },
    });
    expect(mean.body.baseline).toMatchObject({ number_of_samples: 60, sum: 6, sum_squares: 6 });
    // An action's events, as insights match them.
    const action = (await s.call('post', '/actions/', { name: 'Signed up', steps: [{ event: 'signed up' }] })).body as { id: number };
    const byAction = await s.call('post', '/query/', {
      query: { kind: 'ExperimentQuery', experiment_id: exp.id, metric: { ...metric, series: [{ kind: 'ActionsNode', id: action.id }] } },
    });
    expect(byAction.body.baseline).toMatchObject({ number_of_samples: 60, sum: 6, step_counts: [6] });

    const badMetric = await s.call('post', '/query/', {
      query: { kind: 'ExperimentQuery', experiment_id: exp.id, metric: { kind: 'ExperimentMetric', metric_type: 'nope' } },
    });
    expect({ status: badMetric.status, attr: badMetric.body.attr }).toEqual({ status: 400, attr: 'metric__metric_type' });
    const draft = (await s.call('post', '/experiments/', { name: 'Draft', feature_flag_key: 'draft-flow' })).body as { id: number };
    expect((await s.call('post', '/query/', { query: { kind: 'ExperimentQuery', experiment_id: draft.id, metric } })).status).toBe(400);
  });
});
