/**
 * Experiments (`/experiments/` under a project), PostHog's A/B tests on a multivariate flag (docs/experiments.md):
 * CRUD with soft delete (DELETE → 405), the derived status, and the lifecycle actions — launch, pause, resume,
 * end, ship a variant, reset, duplicate, archive. The flag is created, activated and rewritten through the flag
 * store, in the same transaction that bumps the project's definitions version decide polls.
 */
import type { Request } from 'express';
import { Type, type Static, type TObject } from '@sinclair/typebox';
import { CONTROL_VARIANT_KEY } from '@plover/insights';
import type { SqlExecutor } from '@plover/postgres';
import type { ManagementDeps } from '../http/deps';
import { callerOf } from '../http/access';
import { found, idParam, pageOf, resourceRoutes } from '../http/resource-routes';
import { route, type Route } from '../http/route-table';
import type { Caller } from '../shared/access-store';
import { errors } from '../shared/errors';
import { experimentById, statusOf, variantKeys, type ExperimentRow } from '../shared/experiment-store';
import { checkFlagKey, isObject, validateFilters } from '../shared/flag-filters';
import { FlagsStore, type FlagRow } from '../shared/flags-store';
import { ExperimentsStore, type ExperimentFields } from './experiments-store';
import { DuplicateExperiment, EligibleFlags, EndExperiment, Experiment, ExperimentAction, ExperimentListQuery, ExperimentWrite, ShipVariant } from './schemas';

const ITEM = '/experiments/:id';

interface Variant {
  key: string;
  name?: string;
  rollout_percentage: number;
}

/** A new experiment's variants when its parameters name none. */
const DEFAULT_VARIANTS: Variant[] = [
  { key: CONTROL_VARIANT_KEY, name: 'Control Group', rollout_percentage: 50 },
  { key: 'test', name: 'Test Variant', rollout_percentage: 50 },
];

function serializeExperiment(row: ExperimentRow): Static<typeof Experiment> {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    start_date: row.start_date?.toISOString() ?? null,
    end_date: row.end_date?.toISOString() ?? null,
    feature_flag_key: row.flag_key,
    feature_flag: {
      id: row.feature_flag_id,
      team_id: row.project_id,
      name: row.flag_name,
      key: row.flag_key,
      filters: row.flag_filters,
      deleted: row.flag_deleted,
      active: row.flag_active,
      ensure_experience_continuity: row.flag_ensure_experience_continuity,
      version: row.flag_version,
    },
    holdout: null,
    holdout_id: null,
    exposure_cohort: null,
    parameters: row.parameters,
    secondary_metrics: row.secondary_metrics as Record<string, unknown>[],
    saved_metrics: [],
    saved_metrics_ids: [],
    filters: row.filters,
    archived: row.archived,
    deleted: row.deleted,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    type: row.type,
    exposure_criteria: row.exposure_criteria,
    metrics: row.metrics as Record<string, unknown>[],
    metrics_secondary: row.metrics_secondary as Record<string, unknown>[],
    stats_config: row.stats_config,
    scheduling_config: row.scheduling_config,
    allow_unknown_events: false,
    conclusion: row.conclusion as Static<typeof Experiment>['conclusion'],
    conclusion_comment: row.conclusion_comment,
    primary_metrics_ordered_uuids: row.primary_metrics_ordered_uuids,
    secondary_metrics_ordered_uuids: row.secondary_metrics_ordered_uuids,
    only_count_matured_users: row.only_count_matured_users,
    status: statusOf(row),
    user_access_level: 'editor',
  };
}

/**
 * `parameters.feature_flag_variants`, checked and normalized as PostHog does (`split_percent` is an alias of
 * `rollout_percentage`, a `Control` key is `control`); undefined when the parameters name none.
 */
function variantsOf(parameters: Record<string, unknown> | null | undefined): Variant[] | undefined {
  const raw = parameters?.feature_flag_variants;
  if (raw === undefined || raw === null) return undefined;
  const attr = 'parameters';
  if (!Array.isArray(raw)) throw errors.validation('feature_flag_variants must be a list.', attr);
  const variants = raw.map((variant: unknown, i): Variant => {
    if (!isObject(variant)) throw errors.validation(`Feature flag variant at index ${i} must be an object`, attr);
    if (typeof variant.key !== 'string') throw errors.validation(`Feature flag variant at index ${i} must have a 'key' field`, attr);
    const percent = variant.split_percent ?? variant.rollout_percentage;
    if (typeof percent !== 'number') {
      throw errors.validation('Each variant must include split_percent (recommended) or rollout_percentage (deprecated).', attr);
    }
    return {
      key: variant.key === 'Control' ? CONTROL_VARIANT_KEY : variant.key,
      ...(typeof variant.name === 'string' ? { name: variant.name } : {}),
      rollout_percentage: percent,
    };
  });
  if (variants.length === 0) return undefined;
  if (variants.length >= 21) throw errors.validation('Feature flag variants must be less than 21', attr);
  if (variants.length < 2) throw errors.validation('Feature flag must have at least 2 variants (control and at least one test variant)', attr);
  if (!variants.some((variant) => variant.key === CONTROL_VARIANT_KEY)) {
    throw errors.validation(`Feature flag variants must contain a variant with key 'control'. Got keys: ${variants.map((v) => v.key).join(', ')}.`, attr);
  }
  return variants;
}

/** Why an existing flag cannot run an experiment (null: it can): multivariate, ≥ 2 variants, `control` first. */
function ineligibility(filters: Record<string, unknown>): string | null {
  const keys = variantKeys(filters);
  if (keys.length < 2) return 'Feature flag must be multivariate with at least 2 variants.';
  if (keys[0] !== CONTROL_VARIANT_KEY) return "Feature flag must have 'control' as its first variant.";
  return null;
}

/** A flag's filters with every variant's rollout at 0 but `key`'s at 100 (PostHog's ship_variant rewrite). */
function shippedFilters(filters: Record<string, unknown>, key: string, releaseToEveryone: boolean): Record<string, unknown> {
  const groups: unknown[] = Array.isArray(filters.groups) ? filters.groups : [];
  const variants = (filters.multivariate as { variants: Variant[] }).variants;
  return {
    aggregation_group_type_index: filters.aggregation_group_type_index ?? null,
    payloads: filters.payloads ?? {},
    multivariate: {
      variants: variants.map((variant) => ({
        key: variant.key,
        rollout_percentage: variant.key === key ? 100 : 0,
        ...(variant.name ? { name: variant.name } : {}),
      })),
    },
    groups: releaseToEveryone
      ? [{ properties: [], rollout_percentage: 100, description: 'Added automatically when the experiment was ended to keep only one variant.' }, ...groups]
      : groups,
  };
}

/** The routes of experiments under a project. */
export function experimentRoutes({ sql }: Pick<ManagementDeps, 'sql'>): Route[] {
  const store = new ExperimentsStore(sql);
  const flags = new FlagsStore(sql);

  async function read(req: Request, id = idParam(req), db: SqlExecutor = sql, includeDeleted = false): Promise<ExperimentRow> {
    return found(await experimentById(db, callerOf(req).projectId, id, includeDeleted));
  }

  /** The caller must be able to edit the flag an experiment writes (flags carry object-level access). */
  function editableFlag(flag: FlagRow | undefined): FlagRow {
    if (!flag || flag.user_access_level === 'none') throw errors.notFound();
    if (flag.user_access_level !== 'editor') throw errors.forbidden('You do not have editor access to this feature flag.');
    return flag;
  }

  /** Writes the flag's `fields` (filters checked as the flag routes check them) inside `tx`. */
  async function writeFlag(tx: SqlExecutor, caller: Caller, id: number, fields: { active?: boolean; filters?: Record<string, unknown> }): Promise<void> {
    if (fields.filters !== undefined) validateFilters(fields.filters);
    await flags.updateFlag(tx, caller, id, fields);
  }

  /**
   * The flag an experiment named `name` runs on: the live flag `key` when the project has one (eligible), else a
   * new multivariate flag of `variants`, inactive until the experiment starts.
   */
  async function flagFor(
    req: Request,
    tx: SqlExecutor,
    key: string,
    name: string,
    parameters: Record<string, unknown> | null | undefined,
    active: boolean,
  ): Promise<number> {
    const caller = callerOf(req);
    checkFlagKey(key, 'feature_flag_key');
    const existing = await flags.flag(caller, key, 'f.key = $4 AND NOT f.deleted', tx);
    if (existing) {
      const problem = ineligibility(existing.filters);
      if (problem) throw errors.validation(problem, 'feature_flag_key');
      return editableFlag(existing).id;
    }
    const group = parameters?.aggregation_group_type_index;
    const filters = {
      groups: [{ properties: [], rollout_percentage: 100 }],
      multivariate: { variants: variantsOf(parameters) ?? DEFAULT_VARIANTS },
      aggregation_group_type_index: typeof group === 'number' ? group : null,
    };
    validateFilters(filters);
    return flags.createFlag(tx, caller, { key, name: `Feature Flag for Experiment ${name}`, filters, active });
  }

  /** Runs `change` on experiment `:id` in one definitions write, and answers the experiment as it then is. */
  async function changed(req: Request, change: (row: ExperimentRow, tx: SqlExecutor, caller: Caller) => Promise<void>): Promise<Static<typeof Experiment>> {
    const caller = callerOf(req);
    const id = idParam(req);
    return serializeExperiment(
      await flags.write(caller.projectId, async (tx) => {
        await change(await read(req, id, tx), tx, caller);
        // A soft delete answers the experiment it deleted.
        return read(req, id, tx, true);
      }),
    );
  }

  /** Sets the flag of `row` active or not, after checking the caller may edit it. */
  async function activate(tx: SqlExecutor, caller: Caller, row: ExperimentRow, active: boolean): Promise<void> {
    editableFlag(await flags.flag(caller, row.feature_flag_id, undefined, tx));
    await writeFlag(tx, caller, row.feature_flag_id, { active });
  }

  function checkDates(fields: ExperimentFields): void {
    const start = fields.start_date ? new Date(fields.start_date) : null;
    const end = fields.end_date ? new Date(fields.end_date) : null;
    if (start && end && start >= end) throw errors.validation('End date must be after start date', 'end_date');
  }

  /** `POST /experiments/:id/<path>/`: `change` the experiment (and its flag), answer it as it then is. */
  function action<B extends TObject>(
    path: string,
    summary: string,
    body: B,
    change: (row: ExperimentRow, tx: SqlExecutor, caller: Caller, body: Static<B>) => Promise<void>,
  ): Route {
    // The route is declared over TObject (a generic body type is too deep to infer); `body` validated the input.
    return route<TObject, undefined, typeof Experiment>({
      method: 'post',
      path: `${ITEM}/${path}`,
      scope: 'experiment:write',
      summary,
      body,
      response: { status: 200, schema: Experiment },
      handler: (req, input) => changed(req, (row, tx, caller) => change(row, tx, caller, input.body)),
    });
  }

  const crud = resourceRoutes({
    base: '/experiments',
    object: 'experiment',
    schema: Experiment,
    body: ExperimentWrite,
    names: ['an experiment', 'experiments'],
    file: ['experiment', 'experiments'],
    query: ExperimentListQuery,
    async list(req, { page, query }) {
      const { rows, count } = await store.list(callerOf(req).projectId, query, page);
      return pageOf(rows.map(serializeExperiment), count, page.offset, page.limit);
    },
    async create(req, { body }) {
      const { feature_flag_key: key, ...fields } = body;
      if (!fields.name?.trim()) throw errors.required('name');
      if (!key) throw errors.required('feature_flag_key');
      variantsOf(fields.parameters);
      checkDates(fields);
      const caller = callerOf(req);
      const row = await flags.write(caller.projectId, async (tx) => {
        const flagId = await flagFor(req, tx, key, fields.name!, fields.parameters, Boolean(fields.start_date));
        return read(req, await store.create(tx, caller, flagId, fields), tx);
      });
      return serializeExperiment(row);
    },
    retrieve: async (req) => serializeExperiment(await read(req)),
    update: (req, { body }) =>
      changed(req, async (row, tx, caller) => {
        const { feature_flag_key: key, ...fields } = body;
        if (key !== undefined && key !== row.flag_key) throw errors.validation("Can't update keys on an experiment", 'feature_flag_key');
        if (fields.name !== undefined && !fields.name.trim()) throw errors.validation('This field may not be blank.', 'name', 'blank');
        checkDates({
          start_date: fields.start_date === undefined ? row.start_date : fields.start_date,
          end_date: fields.end_date === undefined ? row.end_date : fields.end_date,
        });
        const variants = variantsOf(fields.parameters);
        // A draft's variants follow its parameters; a launched experiment's flag is left alone.
        if (variants && row.start_date === null) {
          const group = fields.parameters?.aggregation_group_type_index;
          editableFlag(await flags.flag(caller, row.feature_flag_id, undefined, tx));
          await writeFlag(tx, caller, row.feature_flag_id, {
            filters: { ...row.flag_filters, multivariate: { variants }, aggregation_group_type_index: typeof group === 'number' ? group : null },
          });
        }
        // Giving a draft its start date launches it.
        if (row.start_date === null && fields.start_date) await activate(tx, caller, row, true);
        await store.update(tx, row.id, fields);
      }),
  });

  return [
    // Before `/experiments/:id`, which would take its name for an id.
    route({
      method: 'get',
      path: '/experiments/eligible_feature_flags',
      scope: 'experiment:read',
      summary: "The project's flags an experiment can run on: multivariate, at least 2 variants, `control` first",
      query: Type.Object({ search: Type.Optional(Type.String()) }),
      response: { status: 200, schema: EligibleFlags },
      async handler(req, { query }) {
        const caller = callerOf(req);
        // Flags are few per project: read them all, keep the eligible ones.
        const eligible: Record<string, unknown>[] = [];
        for (let offset = 0; ; offset += 1000) {
          const { rows } = await flags.listFlags(caller, { search: query.search }, { limit: 1000, offset });
          for (const flag of rows) {
            if (ineligibility(flag.filters) === null)
              eligible.push({ id: flag.id, key: flag.key, name: flag.name, filters: flag.filters, active: flag.active });
          }
          if (rows.length < 1000) break;
        }
        return { results: eligible, count: eligible.length };
      },
    }),
    ...crud,
    action('launch', 'Launch a draft: its start date is now and its flag is activated', ExperimentAction, async (row, tx, caller) => {
      if (row.start_date !== null) throw errors.validation('Experiment has already been launched.');
      await activate(tx, caller, row, true);
      await store.update(tx, row.id, { start_date: new Date() });
    }),
    action('pause', 'Pause a running experiment: its flag is deactivated', ExperimentAction, async (row, tx, caller) => {
      if (statusOf(row) !== 'running') throw errors.validation('Experiment is not running.');
      await activate(tx, caller, row, false);
    }),
    action('resume', 'Resume a paused experiment: its flag is activated again', ExperimentAction, async (row, tx, caller) => {
      if (statusOf(row) !== 'paused') throw errors.validation('Experiment is not paused.');
      await activate(tx, caller, row, true);
    }),
    action('end', 'End a launched experiment with an optional conclusion; its flag is left as it is', EndExperiment, async (row, tx, _caller, body) => {
      if (row.start_date === null) throw errors.validation('Experiment has not been launched yet.');
      if (row.end_date !== null) throw errors.validation('Experiment has already ended.');
      await store.update(tx, row.id, { end_date: new Date(), conclusion: body.conclusion, conclusion_comment: body.conclusion_comment });
    }),
    action(
      'ship_variant',
      "Ship a variant: the flag's variant rollout becomes 100% for it (0 for the others); a running experiment ends",
      ShipVariant,
      async (row, tx, caller, body) => {
        if (row.start_date === null) throw errors.validation('Experiment has not been launched yet.');
        if (!variantKeys(row.flag_filters).includes(body.variant_key)) {
          throw errors.validation(`Variant '${body.variant_key}' not found on feature flag.`, 'variant_key');
        }
        editableFlag(await flags.flag(caller, row.feature_flag_id, undefined, tx));
        await writeFlag(tx, caller, row.feature_flag_id, { filters: shippedFilters(row.flag_filters, body.variant_key, body.release_to_everyone ?? false) });
        await store.update(tx, row.id, {
          ...(row.end_date === null ? { end_date: new Date() } : {}),
          conclusion: body.conclusion,
          conclusion_comment: body.conclusion_comment,
        });
      },
    ),
    action('reset', 'Reset an experiment to a draft: no dates, no conclusion, its flag inactive', ExperimentAction, async (row, tx, caller) => {
      if (row.start_date === null) throw errors.validation('Experiment is already a draft.');
      await activate(tx, caller, row, false);
      await store.update(tx, row.id, { start_date: null, end_date: null, archived: false, conclusion: null, conclusion_comment: null });
    }),
    action('archive', 'Archive an experiment (hidden from the default listing)', ExperimentAction, async (row, tx) => {
      if (statusOf(row) === 'running') throw errors.validation('A running experiment cannot be archived: end it first.');
      await store.update(tx, row.id, { archived: true });
    }),
    action('unarchive', 'Unarchive an experiment', ExperimentAction, async (row, tx) => {
      await store.update(tx, row.id, { archived: false });
    }),
    route({
      method: 'post',
      path: `${ITEM}/duplicate`,
      scope: 'experiment:write',
      summary: 'A draft copy of an experiment (same flag unless `feature_flag_key` names another)',
      body: DuplicateExperiment,
      response: { status: 201, schema: Experiment },
      async handler(req, { body }) {
        const caller = callerOf(req);
        const source = await read(req);
        const name = `${source.name} (Copy)`.slice(0, 400);
        const row = await flags.write(caller.projectId, async (tx) => {
          const flagId = body.feature_flag_key ? await flagFor(req, tx, body.feature_flag_key, name, source.parameters, false) : source.feature_flag_id;
          const id = await store.create(tx, caller, flagId, {
            name,
            description: source.description,
            parameters: source.parameters,
            secondary_metrics: source.secondary_metrics,
            filters: source.filters,
            type: source.type,
            exposure_criteria: source.exposure_criteria,
            metrics: source.metrics,
            metrics_secondary: source.metrics_secondary,
            primary_metrics_ordered_uuids: source.primary_metrics_ordered_uuids,
            secondary_metrics_ordered_uuids: source.secondary_metrics_ordered_uuids,
            stats_config: source.stats_config,
            scheduling_config: source.scheduling_config,
            only_count_matured_users: source.only_count_matured_users,
          });
          return read(req, id, tx);
        });
        return serializeExperiment(row);
      },
    }),
  ];
}
