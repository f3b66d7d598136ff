/**
 * One person: properties (edited with `$set` semantics: a change merges the named properties), distinct ids, events
 * newest first, recordings, and deletion with or without the person's events and recordings.
 */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { EventRow, Person } from '../api/types';
import { Async } from '../components/async';
import { ConfirmDialog } from '../components/dialog';
import { PageHeader } from '../components/page-header';
import { Pagination } from '../components/pagination';
import { Panel } from '../components/panel';
import { Problem } from '../components/problem';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { EventTable } from '../events/event-table';
import { EventDialog } from '../events/event-dialog';
import { dateTime, parsePropertyValue, propertyText } from '../format';
import { useLoad } from '../hooks';
import { projectPath } from '../paths';
import { Link, navigate } from '../router';
import type { ScreenProps } from '../screen-props';
import { RecordingTable } from '../recordings/recording-table';

const EVENTS_PAGE = 20;
const RECORDINGS_PAGE = 10;
/** Recordings are kept five years at the most. */
const ALL_RECORDINGS = '-5y';

export function PersonScreen({ params }: ScreenProps) {
  const { client, projectId } = useConsole();
  const person = useLoad((signal) => client.call(operations.getPerson, { project_id: projectId, id: params.id! }, { signal }), [client, projectId, params.id]);
  return <Async value={person}>{(data) => <PersonPage key={data.uuid} initial={data} />}</Async>;
}

function PersonPage({ initial }: { initial: Person }) {
  const [person, setPerson] = useState(initial);
  const [deleting, setDeleting] = useState(false);
  return (
    <>
      <PageHeader
        title={person.name}
        subtitle={
          <>
            <span class="cell-name">{person.uuid}</span> · first seen {dateTime(person.created_at)} · {person.is_identified ? 'identified' : 'anonymous'}
          </>
        }
      >
        <button type="button" class="danger" onClick={() => setDeleting(true)}>
          Delete person
        </button>
      </PageHeader>
      <div class="grid top">
        <Properties person={person} onSaved={setPerson} />
        <Panel id="distinct-ids" title="Distinct IDs">
          <ul class="plain-list">
            {person.distinct_ids.map((id) => (
              <li key={id} class="cell-name">
                {id}
              </li>
            ))}
          </ul>
        </Panel>
        <PersonEvents person={person} />
        <PersonRecordings person={person} />
      </div>
      <DeletePerson person={person} open={deleting} onClose={() => setDeleting(false)} />
    </>
  );
}

function Properties({ person, onSaved }: { person: Person; onSaved: (person: Person) => void }) {
  const { client, projectId } = useConsole();
  const [editing, setEditing] = useState<{ key: string; value: string; isNew: boolean } | null>(null);
  const [find, setFind] = useState('');
  const [status, setStatus] = useState<{ busy: boolean; error?: unknown; message?: string }>({ busy: false });
  const properties = person.properties ?? {};
  const rows = Object.entries(properties)
    .filter(([key]) => key.toLowerCase().includes(find.trim().toLowerCase()))
    .sort(([a], [b]) => a.localeCompare(b));

  const save = async (event: Event) => {
    event.preventDefault();
    if (!editing) return;
    const key = editing.key.trim();
    if (key === '') return;
    setStatus({ busy: true });
    try {
      const value = parsePropertyValue(editing.value, properties[key]);
      const updated = await client.call(operations.updatePerson, { project_id: projectId, id: person.uuid }, { body: { properties: { [key]: value } } });
      onSaved(updated);
      setEditing(null);
      setStatus({ busy: false, message: `Saved ${key}.` });
    } catch (error) {
      setStatus({ busy: false, error });
    }
  };

  const editor = editing && (
    <form class="property-editor" onSubmit={(event) => void save(event)} aria-label={editing.isNew ? 'New property' : `Edit ${editing.key}`}>
      {editing.isNew && (
        <label>
          <span>Property</span>
          <input value={editing.key} required spellcheck={false} onInput={(event) => setEditing({ ...editing, key: event.currentTarget.value })} />
        </label>
      )}
      <label class="grow">
        <span>{editing.isNew ? 'Value' : `Value of ${editing.key}`}</span>
        <input value={editing.value} spellcheck={false} onInput={(event) => setEditing({ ...editing, value: event.currentTarget.value })} />
      </label>
      <button type="submit" disabled={status.busy}>
        {status.busy ? 'Saving…' : 'Save'}
      </button>
      <button type="button" class="secondary" onClick={() => setEditing(null)}>
        Cancel
      </button>
    </form>
  );

  return (
    <Panel id="properties" title="Properties" wide>
      <div class="toolbar">
        <label class="grow">
          <span class="visually-hidden">Find a property</span>
          <input type="search" placeholder="Find a property" value={find} onInput={(event) => setFind(event.currentTarget.value)} />
        </label>
        <button type="button" class="secondary" onClick={() => setEditing({ key: '', value: '', isNew: true })}>
          Add property
        </button>
      </div>
      <p class="muted small">
        A change sets the property as an <code>$identify</code> with <code>$set</code> would; text stays text, other values are read as JSON.
      </p>
      {editing?.isNew && editor}
      {status.error !== undefined && <Problem error={status.error} />}
      <p role="status" class="muted small">
        {status.message}
      </p>
      <DataTable
        caption={`Properties of ${person.name}`}
        rows={rows}
        rowKey={([key]) => key}
        empty={find ? 'No property matches.' : 'This person has no properties yet.'}
        columns={[
          { label: 'Property', cell: ([key]) => <span class="cell-name">{key}</span> },
          {
            label: 'Value',
            cell: ([key, value]) => (editing && !editing.isNew && editing.key === key ? editor : <span class="property-value">{propertyText(value)}</span>),
          },
          {
            label: 'Actions',
            cell: ([key, value]) => (
              <button
                type="button"
                class="secondary small"
                aria-label={`Edit ${key}`}
                onClick={() => setEditing({ key, value: propertyText(value), isNew: false })}
              >
                Edit
              </button>
            ),
          },
        ]}
      />
    </Panel>
  );
}

function PersonEvents({ person }: { person: Person }) {
  const { client, projectId } = useConsole();
  const [offset, setOffset] = useState(0);
  const [open, setOpen] = useState<EventRow | null>(null);
  const events = useLoad(
    (signal) => client.call(operations.listEvents, { project_id: projectId }, { query: { person_id: person.uuid, limit: EVENTS_PAGE, offset }, signal }),
    [client, projectId, person.uuid, offset],
    { keep: true },
  );
  return (
    <Panel id="person-events" title="Events" wide>
      <Async value={events} onRetry={events.reload}>
        {(page) => (
          <>
            <EventTable
              caption={`Events of ${person.name}, newest first`}
              events={page.results}
              projectId={projectId}
              onOpen={setOpen}
              person={false}
              empty="No events from this person yet."
            />
            <Pagination label="Event pages" count={page.count} offset={offset} limit={EVENTS_PAGE} onChange={setOffset} />
          </>
        )}
      </Async>
      <EventDialog event={open} onClose={() => setOpen(null)} />
    </Panel>
  );
}

function PersonRecordings({ person }: { person: Person }) {
  const { client, projectId } = useConsole();
  const [offset, setOffset] = useState(0);
  const recordings = useLoad(
    (signal) =>
      client.call(
        operations.listRecordings,
        { project_id: projectId },
        { query: { person_uuid: person.uuid, date_from: ALL_RECORDINGS, limit: RECORDINGS_PAGE, offset }, signal },
      ),
    [client, projectId, person.uuid, offset],
    { keep: true },
  );
  return (
    <Panel id="person-recordings" title="Recordings" wide>
      <Async value={recordings} onRetry={recordings.reload}>
        {(page) => (
          <>
            <RecordingTable
              caption={`Recordings of ${person.name}`}
              projectId={projectId}
              page={page}
              offset={offset}
              limit={RECORDINGS_PAGE}
              onOffset={setOffset}
              person={false}
              empty={
                <>
                  No recordings of this person. Session replay records visits while it is on in <Link href={projectPath(projectId, 'settings')}>Settings</Link>.
                </>
              }
            />
          </>
        )}
      </Async>
    </Panel>
  );
}

function DeletePerson({ person, open, onClose }: { person: Person; open: boolean; onClose: () => void }) {
  const { client, projectId } = useConsole();
  const [events, setEvents] = useState(false);
  const [recordings, setRecordings] = useState(false);
  const remove = async () => {
    await client.call(
      operations.deletePerson,
      { project_id: projectId, id: person.uuid },
      { query: { delete_events: events || undefined, delete_recordings: recordings || undefined } },
    );
    navigate(projectPath(projectId, 'persons'));
  };
  return (
    <ConfirmDialog open={open} title={`Delete ${person.name}?`} confirm="Delete person" onConfirm={remove} onClose={onClose}>
      <p>
        The person and their {person.distinct_ids.length === 1 ? 'distinct ID' : `${person.distinct_ids.length} distinct IDs`} go at once. An event sent later
        with one of those IDs creates a new person.
      </p>
      <label class="checkbox">
        <input type="checkbox" checked={events} onChange={(event) => setEvents(event.currentTarget.checked)} />
        <span>Also delete their events (queued for the weekly deletion job)</span>
      </label>
      <label class="checkbox">
        <input type="checkbox" checked={recordings} onChange={(event) => setRecordings(event.currentTarget.checked)} />
        <span>Also delete their recordings</span>
      </label>
    </ConfirmDialog>
  );
}
