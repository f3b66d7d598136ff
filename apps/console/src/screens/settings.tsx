/**
 * Project settings: name and timezone, the project API key with the posthog-js set-up for this server, session
 * replay (recording on or off, sampling, minimum length, console logs, network timing, masking, canvas, a linked
 * flag, retention), logs (the browser console sent to the Logs screen) and the signed-in user's personal API keys
 * (create with scopes, shown once; revoke).
 */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { FeatureFlag, PersonalApiKey, ProjectSettings } from '../api/types';
import { Async } from '../components/async';
import { CodeBlock } from '../components/code-block';
import { ConfirmDialog } from '../components/dialog';
import { PageHeader } from '../components/page-header';
import { Panel } from '../components/panel';
import { Problem } from '../components/problem';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import { storedKey } from '../session';
import { describeScopes, newKeyScopes, SCOPE_OBJECTS, scopesOf, type KeyScopes, type Level } from '../settings/key-scopes';
import { RETENTION_PERIODS, replayForm, replayPatch, replayProblem, type ReplayForm } from '../settings/replay-form';
import { posthogSnippet } from './overview';

type SaveState = { busy: boolean; error?: unknown; message?: string };

export function Settings() {
  const { client, projectId } = useConsole();
  const project = useLoad((signal) => client.call(operations.getProject, { project_id: projectId }, { signal }), [client, projectId]);
  return (
    <>
      <PageHeader title="Settings" subtitle={project.status === 'ok' ? project.data.name : undefined} />
      <Async value={project} onRetry={project.reload}>
        {(data) => (
          <div class="settings">
            <ProjectForm project={data} onSaved={project.reload} />
            <SdkSetup project={data} />
            <ReplaySettingsForm project={data} />
            <LogsSettingsForm project={data} />
            <PersonalKeys />
          </div>
        )}
      </Async>
    </>
  );
}

/** Runs a save, keeping its state for the form's status line and error. */
function useSave(): [SaveState, (action: () => Promise<string>) => Promise<void>] {
  const [state, setState] = useState<SaveState>({ busy: false });
  const run = async (action: () => Promise<string>) => {
    setState({ busy: true });
    try {
      setState({ busy: false, message: await action() });
    } catch (error) {
      setState({ busy: false, error });
    }
  };
  return [state, run];
}

function SaveBar({ state, label, disabled }: { state: SaveState; label: string; disabled?: boolean }) {
  return (
    <>
      <div class="save-bar">
        <button type="submit" disabled={state.busy || disabled}>
          {state.busy ? 'Saving…' : label}
        </button>
        <span role="status" class="muted">
          {state.message}
        </span>
      </div>
      {state.error !== undefined && <Problem error={state.error} />}
    </>
  );
}

function timezones(current: string): string[] {
  const zones = Intl.supportedValuesOf('timeZone');
  return [...new Set(['UTC', current, ...zones])].sort((a, b) => (a === 'UTC' ? -1 : b === 'UTC' ? 1 : a.localeCompare(b)));
}

function ProjectForm({ project, onSaved }: { project: ProjectSettings; onSaved: () => void }) {
  const { client, projectId } = useConsole();
  const [name, setName] = useState(project.name);
  const [timezone, setTimezone] = useState(project.timezone);
  const [state, save] = useSave();
  const submit = (event: Event) => {
    event.preventDefault();
    void save(async () => {
      const saved = await client.call(operations.updateProject, { project_id: projectId }, { body: { name: name.trim(), timezone } });
      onSaved();
      return `Saved. Dates are now read in ${saved.timezone}.`;
    });
  };
  return (
    <Panel id="project-settings" title="Project">
      <form class="settings-form" onSubmit={submit}>
        <label>
          <span>Name</span>
          <input value={name} required maxLength={200} onInput={(event) => setName(event.currentTarget.value)} />
        </label>
        <label>
          <span>Timezone</span>
          <select value={timezone} onChange={(event) => setTimezone(event.currentTarget.value)} aria-describedby="timezone-help">
            {timezones(project.timezone).map((zone) => (
              <option key={zone} value={zone}>
                {zone}
              </option>
            ))}
          </select>
        </label>
        <p id="timezone-help" class="muted small">
          Days in insights, and dates such as “today” in filters, begin at midnight in this timezone.
        </p>
        <SaveBar state={state} label="Save project" disabled={name.trim() === ''} />
      </form>
    </Panel>
  );
}

function SdkSetup({ project }: { project: ProjectSettings }) {
  return (
    <Panel id="sdk-setup" title="Project API key and set-up">
      <p class="muted small">
        SDKs send events with this key. It is not secret: it only lets them capture events and read flags. Keep personal API keys (below) to yourself.
      </p>
      <CodeBlock code={project.api_token} label="Project API key" />
      <p>
        In a web app: <code>npm install posthog-js</code>, then
      </p>
      <CodeBlock code={posthogSnippet(project.api_token, window.location.origin)} label="posthog-js set-up for this server" />
      <p class="muted small">In a distributed deployment, use the capture service's address as api_host.</p>
    </Panel>
  );
}

function ReplaySettingsForm({ project }: { project: ProjectSettings }) {
  const { client, projectId } = useConsole();
  const [current, setCurrent] = useState(project);
  const [form, setForm] = useState<ReplayForm>(() => replayForm(project));
  const [state, save] = useSave();
  const flags = useLoad(
    (signal) =>
      client.call(operations.listFlags, { project_id: projectId }, { query: { limit: 1000 }, signal }).then(
        (page) => page.results,
        (): FeatureFlag[] => [],
      ),
    [client, projectId],
  );
  const flagList = flags.status === 'ok' ? flags.data : [];
  const problem = replayProblem(form);
  const set = <K extends keyof ReplayForm>(key: K, value: ReplayForm[K]) => setForm({ ...form, [key]: value });
  const submit = (event: Event) => {
    event.preventDefault();
    void save(async () => {
      const saved = await client.call(operations.updateProject, { project_id: projectId }, { body: replayPatch(form, current, flagList) });
      setCurrent(saved);
      setForm(replayForm(saved));
      return saved.session_recording_opt_in ? 'Saved. posthog-js picks the settings up on its next page load.' : 'Saved. Sessions are not recorded.';
    });
  };
  const checkbox = (key: 'optIn' | 'consoleLogs' | 'performance' | 'maskAllInputs' | 'recordCanvas', label: string) => (
    <label class="checkbox">
      <input type="checkbox" checked={form[key]} onChange={(event) => set(key, event.currentTarget.checked)} />
      <span>{label}</span>
    </label>
  );
  const linked = current.session_recording_linked_flag;
  return (
    <Panel id="replay-settings" title="Session replay">
      <form class="settings-form" onSubmit={submit}>
        {checkbox('optIn', 'Record sessions')}
        <p class="muted small">posthog-js learns these settings from this server and records by itself; nothing to change in your code.</p>
        <div class="row">
          <label>
            <span>Sample rate (%)</span>
            <input
              type="number"
              min={0}
              max={100}
              step="any"
              class="percent"
              placeholder="100"
              value={form.sampleRate}
              onInput={(event) => set('sampleRate', event.currentTarget.value)}
            />
          </label>
          <label>
            <span>Minimum duration (s)</span>
            <input
              type="number"
              min={0}
              max={30}
              step="any"
              class="percent"
              placeholder="0"
              value={form.minDuration}
              onInput={(event) => set('minDuration', event.currentTarget.value)}
            />
          </label>
          <label>
            <span>Keep recordings for</span>
            <select value={form.retention} onChange={(event) => set('retention', event.currentTarget.value as ReplayForm['retention'])}>
              {RETENTION_PERIODS.map((period) => (
                <option key={period.value} value={period.value}>
                  {period.label}
                </option>
              ))}
            </select>
          </label>
          <label>
            <span>Only when this flag is on</span>
            <select value={form.linkedFlag} onChange={(event) => set('linkedFlag', event.currentTarget.value)}>
              <option value="">No flag</option>
              {linked && !flagList.some((flag) => flag.id === linked.id) && <option value={String(linked.id)}>{linked.key}</option>}
              {flagList.map((flag) => (
                <option key={flag.id} value={String(flag.id)}>
                  {flag.key}
                </option>
              ))}
            </select>
          </label>
        </div>
        {checkbox('consoleLogs', 'Capture console logs')}
        {checkbox('performance', 'Capture network timing')}
        {checkbox('maskAllInputs', 'Mask everything typed into inputs')}
        {checkbox('recordCanvas', 'Record canvas elements')}
        {problem && (
          <p class="form-error" role="alert">
            {problem}
          </p>
        )}
        <SaveBar state={state} label="Save replay settings" disabled={problem !== null} />
      </form>
    </Panel>
  );
}

function LogsSettingsForm({ project }: { project: ProjectSettings }) {
  const { client, projectId } = useConsole();
  const [enabled, setEnabled] = useState(project.logs_settings?.capture_console_logs === true);
  const [state, save] = useSave();
  const submit = (event: Event) => {
    event.preventDefault();
    void save(async () => {
      const saved = await client.call(
        operations.updateProject,
        { project_id: projectId },
        { body: { logs_settings: { ...project.logs_settings, capture_console_logs: enabled } } },
      );
      setEnabled(saved.logs_settings?.capture_console_logs === true);
      return 'Saved. posthog-js picks the setting up on its next page load.';
    });
  };
  return (
    <Panel id="logs-settings" title="Logs">
      <form class="settings-form" onSubmit={submit}>
        <label class="checkbox">
          <input type="checkbox" checked={enabled} onChange={(event) => setEnabled(event.currentTarget.checked)} />
          <span>Send the browser console to Logs</span>
        </label>
        <p class="muted small">posthog-js then sends every console line of your site, with its session and person, to the Logs screen.</p>
        <SaveBar state={state} label="Save logs settings" />
      </form>
    </Panel>
  );
}

function PersonalKeys() {
  const { client } = useConsole();
  const keys = useLoad((signal) => client.call(operations.listPersonalKeys, {}, { signal }), [client]);
  const [created, setCreated] = useState<PersonalApiKey | null>(null);
  const [revoking, setRevoking] = useState<PersonalApiKey | null>(null);
  const signedInWith = storedKey()?.slice(-4);
  return (
    <Panel id="personal-keys" title="Personal API keys">
      <p class="muted small">
        A personal API key acts as you on the management API (this console signs in with one), limited to its scopes. Its value is shown once, when it is
        created.
      </p>
      {created && <NewKey apiKey={created} onDone={() => setCreated(null)} />}
      <Async value={keys} onRetry={keys.reload}>
        {(list) => (
          <DataTable
            caption="Your personal API keys"
            rows={list}
            rowKey={(key) => key.id}
            empty="No personal API keys."
            columns={[
              {
                label: 'Label',
                cell: (key) => (
                  <>
                    {key.label}
                    {signedInWith && key.mask_value.endsWith(signedInWith) && <span class="badge muted-badge">this browser</span>}
                  </>
                ),
              },
              { label: 'Key', cell: (key) => <code class="nowrap">{key.mask_value}</code> },
              { label: 'Scopes', cell: (key) => describeScopes(key.scopes) },
              { label: 'Created', cell: (key) => dateTime(key.created_at) },
              { label: 'Last used', cell: (key) => (key.last_used_at ? dateTime(key.last_used_at) : 'Never') },
              {
                label: 'Actions',
                cell: (key) => (
                  <button type="button" class="secondary small" aria-label={`Revoke ${key.label}`} onClick={() => setRevoking(key)}>
                    Revoke
                  </button>
                ),
              },
            ]}
          />
        )}
      </Async>
      <CreateKey
        onCreated={(key) => {
          setCreated(key);
          keys.reload();
        }}
      />
      <ConfirmDialog
        open={revoking !== null}
        title={`Revoke ${revoking?.label ?? 'key'}?`}
        confirm="Revoke key"
        onConfirm={async () => {
          await client.call(operations.deletePersonalKey, { id: revoking!.id });
          setRevoking(null);
          keys.reload();
        }}
        onClose={() => setRevoking(null)}
      >
        <p>Scripts using this key are refused from now on. Revoking the key this browser signed in with signs you out.</p>
      </ConfirmDialog>
    </Panel>
  );
}

function NewKey({ apiKey, onDone }: { apiKey: PersonalApiKey; onDone: () => void }) {
  return (
    <div class="new-key" role="region" aria-label="New personal API key">
      <strong>Copy the new key “{apiKey.label}” now: it is not shown again.</strong>
      <CodeBlock code={apiKey.value ?? ''} label={`The personal API key ${apiKey.label}`} />
      <button type="button" class="secondary" onClick={onDone}>
        Done
      </button>
    </div>
  );
}

function CreateKey({ onCreated }: { onCreated: (key: PersonalApiKey) => void }) {
  const { client } = useConsole();
  const [label, setLabel] = useState('');
  const [scopes, setScopes] = useState<KeyScopes>(newKeyScopes);
  const [state, save] = useSave();
  const chosen = scopesOf(scopes);
  const submit = (event: Event) => {
    event.preventDefault();
    void save(async () => {
      const key = await client.call(operations.createPersonalKey, {}, { body: { label: label.trim(), scopes: chosen } });
      setLabel('');
      setScopes(newKeyScopes());
      onCreated(key);
      return '';
    });
  };
  return (
    <form class="settings-form create-key" onSubmit={submit} aria-labelledby="create-key-title">
      <h3 id="create-key-title">Create a key</h3>
      <label>
        <span>Label</span>
        <input value={label} required maxLength={40} onInput={(event) => setLabel(event.currentTarget.value)} />
      </label>
      <div class="segmented" role="radiogroup" aria-label="Access">
        <label>
          <input type="radio" name="key-access" checked={!scopes.all} onChange={() => setScopes({ ...scopes, all: false })} />
          <span>Chosen scopes</span>
        </label>
        <label>
          <input type="radio" name="key-access" checked={scopes.all} onChange={() => setScopes({ ...scopes, all: true })} />
          <span>All access</span>
        </label>
      </div>
      {!scopes.all && (
        <fieldset class="scope-grid">
          <legend class="visually-hidden">Scopes</legend>
          {SCOPE_OBJECTS.map(({ object, label: name }) => (
            <label key={object}>
              <span>{name}</span>
              <select
                value={scopes.levels[object]}
                onChange={(event) => setScopes({ ...scopes, levels: { ...scopes.levels, [object]: event.currentTarget.value as Level } })}
              >
                <option value="none">No access</option>
                <option value="read">Read</option>
                <option value="write">Read and write</option>
              </select>
            </label>
          ))}
        </fieldset>
      )}
      <SaveBar state={state} label="Create key" disabled={label.trim() === '' || chosen.length === 0} />
    </form>
  );
}
