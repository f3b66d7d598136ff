/**
 * A feature flag's editor, for a new flag and a saved one: key and description, status, what it is matched by
 * (users or a group type), variants with their split and payloads, release conditions (property and cohort filters
 * with a rollout percentage, and a variant override), and deletion (PATCH `deleted: true`).
 */
import { useRef, useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { Cohort, FeatureFlag, GroupType } from '../api/types';
import { Async } from '../components/async';
import { ConfirmDialog } from '../components/dialog';
import { PageHeader } from '../components/page-header';
import { Problem } from '../components/problem';
import { PropertyFilters } from '../components/property-filters';
import { useConsole } from '../context';
import {
  distributeEqually,
  flagForm,
  flagProblem,
  flagWrite,
  newCondition,
  newFlagForm,
  variantTotal,
  withAggregation,
  type ConditionForm,
  type FlagForm,
  type VariantForm,
} from '../flags/flag-form';
import { FLAG_OPERATORS } from '../filters/property-filter';
import { useLoad } from '../hooks';
import { projectPath } from '../paths';
import { navigate } from '../router';
import type { ScreenProps } from '../screen-props';
import { loadGroupTypes } from './feature-flags';

const COHORTS = 1000;

export function FeatureFlagScreen({ params }: ScreenProps) {
  const { client, projectId } = useConsole();
  const id = params.id;
  const flag = useLoad(
    (signal) => (id ? client.call(operations.getFlag, { project_id: projectId, id }, { signal }) : Promise.resolve(null)),
    [client, projectId, id],
  );
  const cohorts = useLoad(
    (signal) =>
      client.call(operations.listCohorts, { project_id: projectId }, { query: { limit: COHORTS }, signal }).then(
        (page) => page.results,
        () => [],
      ),
    [client, projectId],
  );
  const groupTypes = useLoad((signal) => loadGroupTypes(client, projectId, signal), [client, projectId]);
  return (
    <Async value={flag} onRetry={flag.reload}>
      {(saved) => (
        <FlagEditor
          key={saved?.id ?? 'new'}
          saved={saved}
          cohorts={cohorts.status === 'ok' ? cohorts.data : []}
          groupTypes={groupTypes.status === 'ok' ? groupTypes.data : []}
        />
      )}
    </Async>
  );
}

function replaceAt<T>(items: readonly T[], index: number, item: T): T[] {
  return items.map((existing, position) => (position === index ? item : existing));
}

function FlagEditor({ saved, cohorts, groupTypes }: { saved: FeatureFlag | null; cohorts: Cohort[]; groupTypes: GroupType[] }) {
  const { client, projectId } = useConsole();
  const [form, setForm] = useState<FlagForm>(() => (saved ? flagForm(saved) : newFlagForm()));
  const [status, setStatus] = useState<{ busy: boolean; error?: unknown; message?: string; tried?: boolean }>({ busy: false });
  const [deleting, setDeleting] = useState(false);
  const problemRef = useRef<HTMLParagraphElement>(null);
  const problem = flagProblem(form);
  const set = <K extends keyof FlagForm>(key: K, value: FlagForm[K]) => setForm({ ...form, [key]: value });

  const save = async (event: Event) => {
    event.preventDefault();
    if (problem) {
      setStatus({ busy: false, tried: true });
      requestAnimationFrame(() => problemRef.current?.focus());
      return;
    }
    setStatus({ busy: true });
    try {
      const body = flagWrite(form);
      if (saved) {
        const updated = await client.call(operations.updateFlag, { project_id: projectId, id: saved.id }, { body });
        setForm(flagForm(updated));
        setStatus({ busy: false, message: `Saved ${updated.key}.` });
      } else {
        const created = await client.call(operations.createFlag, { project_id: projectId }, { body });
        navigate(projectPath(projectId, `feature_flags/${created.id}`), { replace: true });
      }
    } catch (error) {
      setStatus({ busy: false, error });
    }
  };

  const groupType = groupTypes.find((type) => String(type.group_type_index) === form.aggregation);
  const subject = groupType ? groupType.name_plural || groupType.group_type : 'users';

  return (
    <>
      <PageHeader title={saved ? saved.key : 'New feature flag'} subtitle={saved?.name || undefined}>
        {saved && (
          <button type="button" class="danger" onClick={() => setDeleting(true)}>
            Delete flag
          </button>
        )}
      </PageHeader>
      <form class="flag-editor" id="flag-form" onSubmit={(event) => void save(event)} noValidate>
        <fieldset class="panel">
          <legend>Flag</legend>
          <div class="row">
            <label class="grow">
              <span>Key</span>
              <input
                value={form.key}
                required
                spellcheck={false}
                autocomplete="off"
                aria-describedby="flag-key-help"
                onInput={(event) => set('key', event.currentTarget.value)}
              />
            </label>
            <label class="grow">
              <span>Description</span>
              <input value={form.name} onInput={(event) => set('name', event.currentTarget.value)} />
            </label>
          </div>
          <p id="flag-key-help" class="muted small">
            Your code asks for the flag by its key: letters, digits, hyphens and underscores.
          </p>
          <label class="checkbox">
            <input type="checkbox" role="switch" checked={form.active} onChange={(event) => set('active', event.currentTarget.checked)} />
            <span>Enabled</span>
          </label>
          <label class="checkbox">
            <input type="checkbox" checked={form.ensureContinuity} onChange={(event) => set('ensureContinuity', event.currentTarget.checked)} />
            <span>Keep the value a user had before they signed in (experience continuity)</span>
          </label>
          {groupTypes.length > 0 && (
            <label>
              <span>Match by</span>
              <select value={form.aggregation} onChange={(event) => setForm(withAggregation(form, event.currentTarget.value))}>
                <option value="">Users</option>
                {groupTypes.map((type) => (
                  <option key={type.group_type_index} value={String(type.group_type_index)}>
                    {type.name_plural || type.group_type}
                  </option>
                ))}
              </select>
            </label>
          )}
        </fieldset>

        <Variants form={form} onChange={setForm} />

        <fieldset class="panel">
          <legend>Release conditions</legend>
          <p class="muted small">
            The flag is on for {subject} who match any condition set, within its rollout percentage. No condition set: off for everyone.
          </p>
          {form.conditions.map((condition, index) => (
            <Condition
              key={index}
              index={index}
              condition={condition}
              form={form}
              cohorts={cohorts}
              groupType={groupType}
              onChange={(next) => set('conditions', replaceAt(form.conditions, index, next))}
              onRemove={() =>
                set(
                  'conditions',
                  form.conditions.filter((_, position) => position !== index),
                )
              }
            />
          ))}
          <button type="button" class="secondary" onClick={() => set('conditions', [...form.conditions, newCondition()])}>
            Add condition set
          </button>
        </fieldset>

        <div class="save-bar">
          <button type="submit" disabled={status.busy}>
            {status.busy ? 'Saving…' : saved ? 'Save' : 'Create flag'}
          </button>
          <span role="status" class="muted">
            {status.message}
          </span>
        </div>
        {status.tried && problem && (
          <p class="form-error" role="alert" tabIndex={-1} ref={problemRef}>
            {problem}
          </p>
        )}
        {status.error !== undefined && <Problem error={status.error} />}
      </form>
      {saved && <DeleteFlag flag={saved} open={deleting} onClose={() => setDeleting(false)} />}
    </>
  );
}

function Variants({ form, onChange }: { form: FlagForm; onChange: (form: FlagForm) => void }) {
  const multivariate = form.variants.length > 0;
  const setVariants = (variants: VariantForm[]) =>
    onChange({
      ...form,
      variants,
      // An override of a variant that is gone would make the flag unsavable.
      conditions: form.conditions.map((condition) =>
        variants.some((variant) => variant.key === condition.variant) ? condition : { ...condition, variant: '' },
      ),
    });
  const total = variantTotal(form.variants);
  return (
    <fieldset class="panel">
      <legend>Served value</legend>
      <div class="segmented" role="radiogroup" aria-label="Served value">
        <label>
          <input type="radio" name="flag-kind" checked={!multivariate} onChange={() => setVariants([])} />
          <span>On or off</span>
        </label>
        <label>
          <input
            type="radio"
            name="flag-kind"
            checked={multivariate}
            onChange={() =>
              setVariants([
                { key: 'control', name: '', rollout: '50', payload: '' },
                { key: 'test', name: '', rollout: '50', payload: '' },
              ])
            }
          />
          <span>Variants</span>
        </label>
      </div>
      {multivariate ? (
        <>
          {form.variants.map((variant, index) => {
            const setField = (field: keyof VariantForm, value: string) => setVariants(replaceAt(form.variants, index, { ...variant, [field]: value }));
            return (
              <div class="filter-row" role="group" aria-label={`Variant ${index + 1}`} key={index}>
                <label>
                  <span>Key</span>
                  <input value={variant.key} spellcheck={false} size={12} onInput={(event) => setField('key', event.currentTarget.value)} />
                </label>
                <label class="grow">
                  <span>Description</span>
                  <input value={variant.name} onInput={(event) => setField('name', event.currentTarget.value)} />
                </label>
                <Rollout value={variant.rollout} onChange={(value) => setField('rollout', value)} />
                <label class="grow">
                  <span>Payload (JSON)</span>
                  <input value={variant.payload} spellcheck={false} onInput={(event) => setField('payload', event.currentTarget.value)} />
                </label>
                <button
                  type="button"
                  class="icon"
                  aria-label={`Remove variant ${variant.key || index + 1}`}
                  disabled={form.variants.length === 1}
                  onClick={() => setVariants(form.variants.filter((_, position) => position !== index))}
                >
                  ×
                </button>
              </div>
            );
          })}
          <div class="row">
            <button
              type="button"
              class="secondary"
              onClick={() =>
                setVariants(distributeEqually([...form.variants, { key: `variant-${form.variants.length + 1}`, name: '', rollout: '0', payload: '' }]))
              }
            >
              Add variant
            </button>
            <button type="button" class="secondary" onClick={() => setVariants(distributeEqually(form.variants))}>
              Distribute equally
            </button>
            <span class={total === 100 ? 'muted' : 'form-error'} aria-live="polite">
              Total {total}%
            </span>
          </div>
        </>
      ) : (
        <label class="block">
          <span>Payload when on (JSON, optional)</span>
          <textarea rows={3} spellcheck={false} value={form.payload} onInput={(event) => onChange({ ...form, payload: event.currentTarget.value })} />
        </label>
      )}
    </fieldset>
  );
}

/** A percentage from 0 to 100, as typed. */
function Rollout({ value, onChange }: { value: string; onChange: (value: string) => void }) {
  return (
    <label>
      <span>Rollout %</span>
      <input type="number" min={0} max={100} step="any" class="percent" value={value} onInput={(event) => onChange(event.currentTarget.value)} />
    </label>
  );
}

function Condition({
  index,
  condition,
  form,
  cohorts,
  groupType,
  onChange,
  onRemove,
}: {
  index: number;
  condition: ConditionForm;
  form: FlagForm;
  cohorts: Cohort[];
  groupType: GroupType | undefined;
  onChange: (condition: ConditionForm) => void;
  onRemove: () => void;
}) {
  const name = `Condition set ${index + 1}`;
  return (
    <fieldset class="condition">
      <legend>{name}</legend>
      {condition.filters.length === 0 && condition.kept.length === 0 && <p class="muted small">No filter: every {groupType ? 'group' : 'user'}.</p>}
      <PropertyFilters
        filters={condition.filters}
        onChange={(filters) => onChange({ ...condition, filters })}
        types={groupType ? ['group'] : ['person', 'cohort']}
        operators={FLAG_OPERATORS}
        cohorts={cohorts}
        groupTypes={groupType ? [groupType] : []}
        label={`${name} filter`}
      />
      {condition.kept.length > 0 && (
        <p class="muted small">
          Also {condition.kept.length} {condition.kept.length === 1 ? 'filter' : 'filters'} this editor does not show (kept as they are).
        </p>
      )}
      <div class="row">
        <Rollout value={condition.rollout} onChange={(rollout) => onChange({ ...condition, rollout })} />
        {form.variants.length > 0 && (
          <label>
            <span>Variant</span>
            <select value={condition.variant} onChange={(event) => onChange({ ...condition, variant: event.currentTarget.value })}>
              <option value="">Split as above</option>
              {form.variants.map((variant) => (
                <option key={variant.key} value={variant.key}>
                  Everyone gets {variant.key}
                </option>
              ))}
            </select>
          </label>
        )}
        <button type="button" class="secondary" onClick={onRemove}>
          Remove {name.toLowerCase()}
        </button>
      </div>
    </fieldset>
  );
}

function DeleteFlag({ flag, open, onClose }: { flag: FeatureFlag; open: boolean; onClose: () => void }) {
  const { client, projectId } = useConsole();
  const remove = async () => {
    await client.call(operations.updateFlag, { project_id: projectId, id: flag.id }, { body: { deleted: true } });
    navigate(projectPath(projectId, 'feature_flags'));
  };
  return (
    <ConfirmDialog open={open} title={`Delete ${flag.key}?`} confirm="Delete flag" onConfirm={remove} onClose={onClose}>
      <p>
        Your app gets <code>false</code> for <code>{flag.key}</code> from now on, as for a flag that does not exist.
      </p>
    </ConfirmDialog>
  );
}
