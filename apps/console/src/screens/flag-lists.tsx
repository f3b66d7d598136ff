/**
 * The lists beside feature flags: cohorts (who flags can target), early access features and surveys (each of
 * which may own a flag), each with a form above it that creates one (flags/create-forms.ts maps the forms).
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Operation } from '../api/operations';
import { operations } from '../api/operations';
import type { Cohort, CohortCreate, EarlyAccessFeatureCreate, Page, SurveyCreate } from '../api/types';
import { Async } from '../components/async';
import { BehaviorFilters } from '../components/behavior-filters';
import { EmptyState } from '../components/empty-state';
import { FieldMessage, fieldError, FormField, FormProblem } from '../components/form-field';
import { PageHeader } from '../components/page-header';
import { Pagination } from '../components/pagination';
import { PropertyFilters } from '../components/property-filters';
import { DataTable, type Column } from '../components/table';
import { useConsole } from '../context';
import {
  cohortBody,
  FEATURE_STAGES,
  featureBody,
  newCohortForm,
  newFeatureForm,
  newSurveyForm,
  SURVEY_TYPES,
  surveyBody,
  type Checked,
} from '../flags/create-forms';
import { SectionTabs } from '../flags/section-tabs';
import { surveyStatus } from '../flags/survey-status';
import { FLAG_OPERATORS } from '../filters/property-filter';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import { projectPath } from '../paths';
import { Link } from '../router';

const PAGE_SIZE = 50;

/** Called with the name of what a form created. */
type OnCreated = (name: string) => void;

function ListScreen<T extends { id: number | string }>({
  title,
  operation,
  columns,
  empty,
  create,
}: {
  title: string;
  operation: Operation<Page<T>, undefined, string>;
  columns: Column<T>[];
  empty: { title: string; body: ComponentChildren };
  /** The create form, told when it created something. */
  create: (onCreated: OnCreated) => ComponentChildren;
}) {
  const { client, projectId } = useConsole();
  const [offset, setOffset] = useState(0);
  const [created, setCreated] = useState('');
  const rows = useLoad(
    (signal) => client.call(operation, { project_id: projectId }, { query: { limit: PAGE_SIZE, offset }, signal }),
    [client, projectId, operation, offset],
    { keep: true },
  );
  return (
    <>
      <PageHeader title="Feature flags" />
      <SectionTabs />
      {create((name) => {
        setCreated(`Created ${name}.`);
        rows.reload();
      })}
      <section class="panel" aria-labelledby="list-title">
        <h2 id="list-title">{title}</h2>
        <p role="status" class="muted">
          {created}
        </p>
        <Async value={rows} onRetry={rows.reload}>
          {(page) =>
            page.count === 0 ? (
              <EmptyState title={empty.title}>{empty.body}</EmptyState>
            ) : (
              <>
                <DataTable caption={title} rows={page.results} rowKey={(row) => row.id} columns={columns} />
                <Pagination label={`${title} pages`} count={page.count} offset={offset} limit={PAGE_SIZE} onChange={setOffset} />
              </>
            )
          }
        </Async>
      </section>
    </>
  );
}

/**
 * A create form's state: the form as typed, and sending it (its body, or the problem the form found first);
 * the form starts afresh once the API created the object.
 */
function useCreateForm<Form, Body, Created extends { name: string }>(
  fresh: () => Form,
  send: (body: Body) => Promise<Created>,
  onCreated: OnCreated,
): {
  form: Form;
  set: <K extends keyof Form>(key: K, value: Form[K]) => void;
  busy: boolean;
  error: unknown;
  submit: (checked: Checked<Body>) => Promise<void>;
} {
  const [form, setForm] = useState(fresh);
  const [state, setState] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  const submit = async (checked: Checked<Body>) => {
    if ('problem' in checked) return setState({ busy: false, error: checked.problem });
    setState({ busy: true });
    try {
      const created = await send(checked.body);
      setForm(fresh());
      setState({ busy: false });
      onCreated(`“${created.name}”`);
    } catch (error) {
      setState({ busy: false, error });
    }
  };
  return { form, set: (key, value) => setForm({ ...form, [key]: value }), busy: state.busy, error: state.error, submit };
}

/** The panel of a create form: its fields, the button, and any problem no field shows. */
function CreatePanel({
  id,
  title,
  button,
  fields,
  busy,
  error,
  onSubmit,
  children,
}: {
  id: string;
  title: string;
  button: string;
  /** The API's names of the form's fields: an error naming one is shown there. */
  fields: readonly string[];
  busy: boolean;
  error: unknown;
  onSubmit: () => void;
  children: ComponentChildren;
}) {
  return (
    <section class="panel" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      <form
        class="create-form"
        onSubmit={(event) => {
          event.preventDefault();
          onSubmit();
        }}
      >
        {children}
        <div class="save-bar">
          <button type="submit" disabled={busy}>
            {busy ? 'Creating…' : button}
          </button>
        </div>
        <FormProblem error={error} fields={fields} />
      </form>
    </section>
  );
}

/** A text field of a create form; `field` is the API's name for it. */
function TextField({
  id,
  label,
  field,
  value,
  error,
  onInput,
  multiline,
}: {
  id: string;
  label: string;
  field: string;
  value: string;
  error: unknown;
  onInput: (value: string) => void;
  multiline?: boolean;
}) {
  return (
    <FormField id={id} label={label} error={fieldError(error, field)}>
      {(control) =>
        multiline ? (
          <textarea {...control} rows={3} value={value} onInput={(event) => onInput(event.currentTarget.value)} />
        ) : (
          <input {...control} value={value} onInput={(event) => onInput(event.currentTarget.value)} />
        )
      }
    </FormField>
  );
}

/** A choice of a create form; `field` is the API's name for it. */
function ChoiceField({
  id,
  label,
  field,
  value,
  choices,
  error,
  onChange,
}: {
  id: string;
  label: string;
  field: string;
  value: string;
  choices: readonly { value: string; label: string }[];
  error: unknown;
  onChange: (value: string) => void;
}) {
  return (
    <FormField id={id} label={label} error={fieldError(error, field)}>
      {(control) => (
        <select {...control} value={value} onChange={(event) => onChange(event.currentTarget.value)}>
          {choices.map((choice) => (
            <option key={choice.value} value={choice.value}>
              {choice.label}
            </option>
          ))}
        </select>
      )}
    </FormField>
  );
}

const COHORT_FIELDS = ['name', 'description', 'is_static', 'filters', 'distinct_ids'] as const;

function NewCohort({ onCreated }: { onCreated: OnCreated }) {
  const { client, projectId } = useConsole();
  const { form, set, busy, error, submit } = useCreateForm(
    newCohortForm,
    (body: CohortCreate) => client.call(operations.createCohort, { project_id: projectId }, { body }),
    onCreated,
  );
  const filtersError = fieldError(error, 'filters');
  return (
    <CreatePanel
      id="new-cohort"
      title="New cohort"
      button="Create cohort"
      fields={COHORT_FIELDS}
      busy={busy}
      error={error}
      onSubmit={() => void submit(cohortBody(form))}
    >
      <TextField id="cohort-name" label="Name" field="name" value={form.name} error={error} onInput={(value) => set('name', value)} />
      <TextField
        id="cohort-description"
        label="Description"
        field="description"
        value={form.description}
        error={error}
        onInput={(value) => set('description', value)}
      />
      <div class="segmented" role="radiogroup" aria-label="Members">
        <label>
          <input type="radio" name="cohort-kind" checked={form.kind === 'properties'} onChange={() => set('kind', 'properties')} />
          <span>By properties and behavior</span>
        </label>
        <label>
          <input type="radio" name="cohort-kind" checked={form.kind === 'list'} onChange={() => set('kind', 'list')} />
          <span>Fixed list</span>
        </label>
      </div>
      {form.kind === 'properties' ? (
        <fieldset class="condition" aria-describedby={filtersError === undefined ? undefined : 'cohort-filters-error'}>
          <legend>Persons matching</legend>
          <div class="segmented" role="radiogroup" aria-label="Match">
            <label>
              <input type="radio" name="cohort-match" checked={form.match === 'AND'} onChange={() => set('match', 'AND')} />
              <span>all of</span>
            </label>
            <label>
              <input type="radio" name="cohort-match" checked={form.match === 'OR'} onChange={() => set('match', 'OR')} />
              <span>any of</span>
            </label>
          </div>
          <PropertyFilters
            filters={form.filters}
            onChange={(filters) => set('filters', filters)}
            types={['person']}
            operators={FLAG_OPERATORS}
            label="Condition"
          />
          <BehaviorFilters behaviors={form.behaviors} onChange={(behaviors) => set('behaviors', behaviors)} />
          <FieldMessage id="cohort-filters-error" error={filtersError} />
        </fieldset>
      ) : (
        <TextField
          id="cohort-distinct-ids"
          label="Distinct ids (one per line, or separated by commas)"
          field="distinct_ids"
          value={form.distinctIds}
          error={error}
          onInput={(value) => set('distinctIds', value)}
          multiline
        />
      )}
    </CreatePanel>
  );
}

/** A cohort's size as the list shows it: calculating, failing, not yet calculated, or its count. */
function cohortSize(cohort: Cohort): string {
  if (cohort.is_calculating) return 'Calculating…';
  if (cohort.count === null) return cohort.errors_calculating > 0 ? 'Calculation failed' : '—';
  return cohort.count.toLocaleString();
}

export function Cohorts() {
  return (
    <ListScreen
      title="Cohorts"
      operation={operations.listCohorts}
      create={(onCreated) => <NewCohort onCreated={onCreated} />}
      empty={{
        title: 'No cohorts yet',
        body: (
          <p>
            A cohort is a group of persons: by their properties and what they did (recalculated every few minutes), or a fixed list. Flag conditions can target
            those without behaviors; insights can filter and break down by any. Create one above.
          </p>
        ),
      }}
      columns={[
        { label: 'Name', cell: (cohort) => cohort.name },
        { label: 'Kind', cell: (cohort) => (cohort.is_static ? 'Fixed list' : 'Dynamic') },
        { label: 'Persons', numeric: true, cell: (cohort) => cohortSize(cohort) },
        { label: 'Created', cell: (cohort) => dateTime(cohort.created_at) },
      ]}
    />
  );
}

const FEATURE_FIELDS = ['name', 'description', 'stage', 'documentation_url', 'feature_flag_key'] as const;
const STAGE_CHOICES = FEATURE_STAGES.map((stage) => ({ value: stage, label: stage }));

function NewFeature({ onCreated }: { onCreated: OnCreated }) {
  const { client, projectId } = useConsole();
  const { form, set, busy, error, submit } = useCreateForm(
    newFeatureForm,
    (body: EarlyAccessFeatureCreate) => client.call(operations.createEarlyAccessFeature, { project_id: projectId }, { body }),
    onCreated,
  );
  return (
    <CreatePanel
      id="new-feature"
      title="New early access feature"
      button="Create feature"
      fields={FEATURE_FIELDS}
      busy={busy}
      error={error}
      onSubmit={() => void submit(featureBody(form))}
    >
      <TextField id="feature-name" label="Name" field="name" value={form.name} error={error} onInput={(value) => set('name', value)} />
      <TextField
        id="feature-description"
        label="Description"
        field="description"
        value={form.description}
        error={error}
        onInput={(value) => set('description', value)}
      />
      <ChoiceField
        id="feature-stage"
        label="Stage"
        field="stage"
        value={form.stage}
        choices={STAGE_CHOICES}
        error={error}
        onChange={(value) => set('stage', value)}
      />
      <TextField
        id="feature-docs"
        label="Documentation URL"
        field="documentation_url"
        value={form.documentationUrl}
        error={error}
        onInput={(value) => set('documentationUrl', value)}
      />
      <TextField
        id="feature-flag-key"
        label="Flag key (empty: made from the name)"
        field="feature_flag_key"
        value={form.flagKey}
        error={error}
        onInput={(value) => set('flagKey', value)}
      />
    </CreatePanel>
  );
}

export function EarlyAccessFeatures() {
  const { projectId } = useConsole();
  return (
    <ListScreen
      title="Early access features"
      operation={operations.listEarlyAccessFeatures}
      create={(onCreated) => <NewFeature onCreated={onCreated} />}
      empty={{
        title: 'No early access features yet',
        body: (
          <p>
            Users opt in to an early access feature from your app (posthog-js's early access API); its flag turns the feature on for them. Create one above.
          </p>
        ),
      }}
      columns={[
        { label: 'Name', cell: (feature) => feature.name },
        { label: 'Stage', cell: (feature) => feature.stage },
        {
          label: 'Flag',
          cell: (feature) =>
            feature.feature_flag ? (
              <Link href={projectPath(projectId, `feature_flags/${feature.feature_flag.id}`)} class="cell-name">
                {feature.feature_flag.key}
              </Link>
            ) : (
              '—'
            ),
        },
        { label: 'Created', cell: (feature) => dateTime(feature.created_at) },
      ]}
    />
  );
}

const SURVEY_FIELDS = ['name', 'description', 'type', 'questions', 'start_date'] as const;

function NewSurvey({ onCreated }: { onCreated: OnCreated }) {
  const { client, projectId } = useConsole();
  const { form, set, busy, error, submit } = useCreateForm(
    newSurveyForm,
    (body: SurveyCreate) => client.call(operations.createSurvey, { project_id: projectId }, { body }),
    onCreated,
  );
  return (
    <CreatePanel
      id="new-survey"
      title="New survey"
      button="Create survey"
      fields={SURVEY_FIELDS}
      busy={busy}
      error={error}
      onSubmit={() => void submit(surveyBody(form))}
    >
      <TextField id="survey-name" label="Name" field="name" value={form.name} error={error} onInput={(value) => set('name', value)} />
      <TextField
        id="survey-description"
        label="Description"
        field="description"
        value={form.description}
        error={error}
        onInput={(value) => set('description', value)}
      />
      <ChoiceField
        id="survey-type"
        label="Shown as"
        field="type"
        value={form.type}
        choices={SURVEY_TYPES}
        error={error}
        onChange={(value) => set('type', value)}
      />
      <TextField
        id="survey-question"
        label="Question (open answer)"
        field="questions"
        value={form.question}
        error={error}
        onInput={(value) => set('question', value)}
      />
      <label class="checkbox">
        <input type="checkbox" checked={form.launch} onChange={(event) => set('launch', event.currentTarget.checked)} />
        <span>Launch now (otherwise a draft)</span>
      </label>
    </CreatePanel>
  );
}

export function Surveys() {
  const { projectId } = useConsole();
  return (
    <ListScreen
      title="Surveys"
      operation={operations.listSurveys}
      create={(onCreated) => <NewSurvey onCreated={onCreated} />}
      empty={{
        title: 'No surveys yet',
        body: <p>posthog-js shows a running survey to the users its conditions and targeting flag pick. Create one above.</p>,
      }}
      columns={[
        { label: 'Name', cell: (survey) => <Link href={projectPath(projectId, `feature_flags/surveys/${survey.id}`)}>{survey.name}</Link> },
        { label: 'Type', cell: (survey) => survey.type },
        { label: 'Status', cell: (survey) => surveyStatus(survey) },
        { label: 'Questions', numeric: true, cell: (survey) => survey.questions.length },
        { label: 'Created', cell: (survey) => dateTime(survey.created_at) },
      ]}
    />
  );
}
