import request from 'supertest';
import { backends, useWorld } from './support/app';

/** Filters with an id or a number no flag can hold: each must be a 400 naming it, never a 5xx. */
const oneFilter = (extra: Record<string, unknown>) => ({
  groups: [{ properties: [{ key: 'plan', type: 'person', value: 'pro', ...extra }], rollout_percentage: 100 }],
});
const cohort = (value: unknown) => ({ groups: [{ properties: [{ key: 'id', type: 'cohort', value }] }] });
const BAD_FILTERS: [string, Record<string, unknown>, string][] = [
  ['a cohort id past 2^53', cohort(1e20), 'filters__groups__0__properties__0__value'],
  ['a cohort id past Postgres integers', cohort(2_147_483_648), 'filters__groups__0__properties__0__value'],
  ['a cohort id of 20 digits as text', cohort('99999999999999999999'), 'filters__groups__0__properties__0__value'],
  ['a fractional cohort id', cohort(1.5), 'filters__groups__0__properties__0__value'],
  ['a cohort id of true', cohort(true), 'filters__groups__0__properties__0__value'],
  ['a cohort id of an array', cohort([7]), 'filters__groups__0__properties__0__value'],
  [
    'a fractional group_type_index',
    { groups: [{ properties: [{ key: 'size', type: 'group', group_type_index: 1.5, value: 1 }] }] },
    'filters__groups__0__properties__0__group_type_index',
  ],
  ['an aggregation_group_type_index past 2^53', { aggregation_group_type_index: 1e20, groups: [] }, 'filters'],
  [
    'a variant over 100 percent balanced by a negative one',
    {
      multivariate: {
        variants: [
          { key: 'a', rollout_percentage: 150 },
          { key: 'b', rollout_percentage: -50 },
        ],
      },
    },
    'filters',
  ],
  ['a condition rollout of 1e20', { groups: [{ properties: [], rollout_percentage: 1e20 }] }, 'filters__groups__0__rollout_percentage'],
  [
    'a group filter with a negative group_type_index',
    oneFilter({ type: 'group', group_type_index: -1 }),
    'filters__groups__0__properties__0__group_type_index',
  ],
];

describe.each(backends)('flag and cohort filters with out-of-range numbers on $name', (backend) => {
  const world = useWorld(backend);

  it.each(BAD_FILTERS)('refuses %s with a 400 naming the field, on create and on update', async (_why, filters, attr) => {
    const t = await world.tenant();
    const flags = `/api/projects/${t.projectId}/feature_flags/`;
    const created = await request(world.app).post(flags).set(t.auth).send({ key: 'bad', filters });
    expect([created.status, created.body.type, created.body.attr]).toEqual([400, 'validation_error', attr]);
    const flag = await request(world.app).post(flags).set(t.auth).send({ key: 'good' }).expect(201);
    const updated = await request(world.app).patch(`${flags}${flag.body.id}/`).set(t.auth).send({ filters });
    expect([updated.status, updated.body.attr]).toEqual([400, attr]);
  });

  it('refuses a cohort nesting a cohort id past Postgres integers with 400', async () => {
    const t = await world.tenant();
    const filters = { properties: { type: 'AND', values: [{ key: 'id', type: 'cohort', value: 1e20 }] } };
    const res = await request(world.app).post(`/api/projects/${t.projectId}/cohorts/`).set(t.auth).send({ name: 'c', filters });
    expect([res.status, res.body.attr]).toEqual([400, 'filters__properties__values__0__value']);
  });

  it('refuses a cohort loop through other cohorts (A -> B -> C -> A) on PATCH with 400, and leaves the cohort as it was', async () => {
    const t = await world.tenant();
    const cohorts = `/api/projects/${t.projectId}/cohorts/`;
    const nesting = (id: number) => ({ properties: { type: 'AND', values: [{ key: 'id', type: 'cohort', value: id }] } });
    const plain = { properties: { type: 'AND', values: [{ key: 'plan', type: 'person', value: 'pro' }] } };
    const a = await request(world.app).post(cohorts).set(t.auth).send({ name: 'a', filters: plain }).expect(201);
    const b = await request(world.app)
      .post(cohorts)
      .set(t.auth)
      .send({ name: 'b', filters: nesting(a.body.id) })
      .expect(201);
    const c = await request(world.app)
      .post(cohorts)
      .set(t.auth)
      .send({ name: 'c', filters: nesting(b.body.id) })
      .expect(201);
    for (const target of [b.body.id, c.body.id]) {
      const loop = await request(world.app)
        .patch(`${cohorts}${a.body.id}/`)
        .set(t.auth)
        .send({ filters: nesting(target) });
      expect([loop.status, loop.body.type, loop.body.attr]).toEqual([400, 'validation_error', 'filters']);
    }
    const kept = await request(world.app).get(`${cohorts}${a.body.id}/`).set(t.auth).expect(200);
    expect(kept.body.filters).toEqual(plain);
    // Two cohorts may share a third without forming a loop.
    await request(world.app)
      .patch(`${cohorts}${c.body.id}/`)
      .set(t.auth)
      .send({ filters: nesting(a.body.id) })
      .expect(200);
  });

  it('still accepts a cohort id as a number or as digits', async () => {
    const t = await world.tenant();
    const made = await request(world.app).post(`/api/projects/${t.projectId}/cohorts/`).set(t.auth).send({ name: 'c', is_static: true }).expect(201);
    for (const [key, value] of [
      ['by-number', made.body.id],
      ['by-text', String(made.body.id)],
    ]) {
      await request(world.app)
        .post(`/api/projects/${t.projectId}/feature_flags/`)
        .set(t.auth)
        .send({ key, filters: cohort(value) })
        .expect(201);
    }
  });
});

describe.each(backends)('behavioral cohorts and flags on $name', (backend) => {
  const world = useWorld(backend);
  const performed = {
    key: '$pageview',
    type: 'behavioral',
    value: 'performed_event_multiple',
    event_type: 'events',
    operator: 'gte',
    operator_value: 3,
    time_value: 30,
    time_interval: 'day',
  };
  const group = (...values: unknown[]) => ({ properties: { type: 'OR', values: [{ type: 'AND', values }] } });
  const plan = { key: 'plan', type: 'person', value: 'pro', operator: 'exact' };

  it('a cohort takes behavioral criteria in AND/OR groups; an incomplete one is a 400 naming it', async () => {
    const t = await world.tenant();
    const cohorts = `/api/projects/${t.projectId}/cohorts/`;
    const made = await request(world.app)
      .post(cohorts)
      .set(t.auth)
      .send({ name: 'Power users', filters: group(performed, plan) });
    expect(made.status).toBe(201);
    expect(made.body.filters).toEqual(group(performed, plan));
    const cases: [Record<string, unknown>, string][] = [
      [{ ...performed, operator_value: undefined }, 'filters__properties__values__0__values__0'],
      [{ ...performed, time_value: undefined }, 'filters__properties__values__0__values__0'],
      [{ ...performed, value: 'performed_often' }, 'filters__properties__values__0__values__0__value'],
      [{ ...performed, event_type: 'clicks' }, 'filters__properties__values__0__values__0__event_type'],
      [{ ...performed, time_interval: 'fortnight' }, 'filters__properties__values__0__values__0__time_interval'],
      [{ ...performed, value: 'stopped_performing_event', operator_value: undefined }, 'filters__properties__values__0__values__0'],
    ];
    for (const [criterion, attr] of cases) {
      const res = await request(world.app)
        .post(cohorts)
        .set(t.auth)
        .send({ name: 'bad', filters: group(criterion) });
      expect({ criterion, status: res.status, attr: res.body.attr }).toEqual({ criterion, status: 400, attr });
    }
    const window = { ...performed, value: 'performed_event_first_time', time_value: undefined, time_interval: undefined, explicit_datetime: '-30d' };
    expect(
      (
        await request(world.app)
          .post(cohorts)
          .set(t.auth)
          .send({ name: 'first', filters: group(window) })
      ).status,
    ).toBe(201);
  });

  it('a flag refuses a behavioral cohort, also through a nested cohort; a cohort a flag uses cannot become behavioral', async () => {
    const t = await world.tenant();
    const cohorts = `/api/projects/${t.projectId}/cohorts/`;
    const flags = `/api/projects/${t.projectId}/feature_flags/`;
    const behavioral = await request(world.app)
      .post(cohorts)
      .set(t.auth)
      .send({ name: 'Power users', filters: group(performed) })
      .expect(201);
    const outer = await request(world.app)
      .post(cohorts)
      .set(t.auth)
      .send({ name: 'Outer', filters: group({ key: 'id', type: 'cohort', value: behavioral.body.id }) })
      .expect(201);
    const personal = await request(world.app)
      .post(cohorts)
      .set(t.auth)
      .send({ name: 'Pro', filters: group(plan) })
      .expect(201);
    for (const id of [behavioral.body.id, outer.body.id]) {
      const res = await request(world.app)
        .post(flags)
        .set(t.auth)
        .send({ key: `f${String(id)}`, filters: cohort(id) });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        type: 'validation_error',
        code: 'behavioral_cohort_found',
        detail: "Cohort 'Power users' with filters on events cannot be used in feature flags.",
        attr: 'filters',
      });
    }
    const flag = await request(world.app)
      .post(flags)
      .set(t.auth)
      .send({ key: 'pro', filters: cohort(personal.body.id) })
      .expect(201);
    const patched = await request(world.app)
      .patch(`${flags}${String(flag.body.id)}/`)
      .set(t.auth)
      .send({ filters: cohort(outer.body.id) });
    expect([patched.status, patched.body.code]).toEqual([400, 'behavioral_cohort_found']);
    const turned = await request(world.app)
      .patch(`${cohorts}${String(personal.body.id)}/`)
      .set(t.auth)
      .send({ filters: group(plan, performed) });
    expect([turned.status, turned.body.code, turned.body.attr]).toEqual([400, 'behavioral_cohort_found', 'filters']);
    const kept = await request(world.app)
      .get(`${cohorts}${String(personal.body.id)}/`)
      .set(t.auth)
      .expect(200);
    expect(kept.body.filters).toEqual(group(plan));
  });
});
