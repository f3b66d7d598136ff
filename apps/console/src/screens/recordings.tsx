/**
 * Session recordings: the recordings API's listing with its filters (date range, person, minimum length, console
 * errors, order), a play link to the replay page, and adding a recording to a playlist.
 */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { Recording } from '../api/types';
import { Async } from '../components/async';
import { Dialog } from '../components/dialog';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { Problem } from '../components/problem';
import { useConsole } from '../context';
import { dateTime } from '../format';
import { useDebounced, useLoad } from '../hooks';
import { projectPath } from '../paths';
import { RecordingTable } from '../recordings/recording-table';
import { RecordingTabs } from '../recordings/recording-tabs';
import {
  isFiltered,
  RECORDING_DATE_RANGES,
  RECORDING_ORDERS,
  recordingFilters,
  recordingParams,
  recordingsQuery,
  type RecordingFilters,
} from '../recordings/recordings-query';
import { Link } from '../router';
import { useSearchParams } from '../search-params';

const PAGE_SIZE = 25;

export function Recordings() {
  const { client, projectId, project } = useConsole();
  const [params, setParams] = useSearchParams();
  const filters = recordingFilters(params);
  const [offset, setOffset] = useState(0);
  const [adding, setAdding] = useState<Recording | null>(null);
  const query = useDebounced(JSON.stringify(recordingsQuery(filters)), 300);
  const recordings = useLoad(
    (signal) =>
      client.call(
        operations.listRecordings,
        { project_id: projectId },
        { query: { ...(JSON.parse(query) as Record<string, string>), limit: PAGE_SIZE, offset }, signal },
      ),
    [client, projectId, query, offset],
    { keep: true },
  );
  const change = (next: Partial<RecordingFilters>) => {
    setParams(recordingParams({ ...filters, ...next }));
    setOffset(0);
  };

  return (
    <>
      <PageHeader title="Recordings" subtitle="Replays of what people did on your site, with their clicks, pages and console errors." />
      <RecordingTabs />
      <section class="panel" aria-label="Filter recordings">
        <form class="toolbar wrap" onSubmit={(event) => event.preventDefault()}>
          <label>
            <span>Started</span>
            <select value={filters.dateFrom} onChange={(event) => change({ dateFrom: event.currentTarget.value })}>
              {RECORDING_DATE_RANGES.map((range) => (
                <option key={range.value} value={range.value}>
                  {range.label}
                </option>
              ))}
            </select>
          </label>
          <label class="grow">
            <span>Person (distinct ID)</span>
            <input value={filters.distinctId} spellcheck={false} onInput={(event) => change({ distinctId: event.currentTarget.value })} />
          </label>
          <label>
            <span>At least (seconds)</span>
            <input type="number" min={0} class="percent" value={filters.minDuration} onInput={(event) => change({ minDuration: event.currentTarget.value })} />
          </label>
          <label>
            <span>Order</span>
            <select value={filters.order} onChange={(event) => change({ order: event.currentTarget.value })}>
              {RECORDING_ORDERS.map((order) => (
                <option key={order.value} value={order.value}>
                  {order.label}
                </option>
              ))}
            </select>
          </label>
          <label class="checkbox">
            <input type="checkbox" checked={filters.errorsOnly} onChange={(event) => change({ errorsOnly: event.currentTarget.checked })} />
            <span>With console errors</span>
          </label>
        </form>
      </section>
      <section class="panel" aria-labelledby="recordings-title" aria-busy={recordings.pending}>
        <h2 id="recordings-title">Recordings</h2>
        <Async value={recordings} onRetry={recordings.reload}>
          {(page) =>
            page.results.length === 0 && offset === 0 && !isFiltered(filters) ? (
              <EmptyState title="No recordings in this range">
                {project && 'session_recording_opt_in' in project && project.session_recording_opt_in === false ? (
                  <p>
                    Session replay is off for this project. Turn it on in <Link href={projectPath(projectId, 'settings')}>Settings</Link>; posthog-js then
                    records visits by itself (its remote config says so), and they show up here a few seconds after each upload.
                  </p>
                ) : (
                  <p>
                    posthog-js records visits while session replay is on (see <Link href={projectPath(projectId, 'settings')}>Settings</Link>). Try a longer
                    date range, or check that your site loads posthog-js with this host as <code>api_host</code>.
                  </p>
                )}
              </EmptyState>
            ) : (
              <>
                <RecordingTable
                  caption="Recordings"
                  projectId={projectId}
                  page={page}
                  offset={offset}
                  limit={PAGE_SIZE}
                  onOffset={setOffset}
                  empty="No recording matches these filters."
                  actions={(recording) => (
                    <button
                      type="button"
                      class="secondary small"
                      onClick={() => setAdding(recording)}
                      aria-haspopup="dialog"
                      aria-label={`Add the recording of ${dateTime(recording.start_time)} to a playlist`}
                    >
                      Add to playlist
                    </button>
                  )}
                />
              </>
            )
          }
        </Async>
      </section>
      <AddToPlaylist recording={adding} onClose={() => setAdding(null)} />
    </>
  );
}

/** Picks a playlist (or makes one) for a recording; lists the playlists the recording can be added to (collections). */
function AddToPlaylist({ recording, onClose }: { recording: Recording | null; onClose: () => void }) {
  const { client, projectId } = useConsole();
  const [name, setName] = useState('');
  const [state, setState] = useState<{ busy: boolean; error?: unknown; added?: string }>({ busy: false });
  const playlists = useLoad(
    (signal) =>
      recording
        ? client.call(operations.listPlaylists, { project_id: projectId }, { query: { type: 'collection', limit: 100 }, signal }).then((page) => page.results)
        : Promise.resolve([]),
    [client, projectId, recording],
  );
  const add = async (shortId: string, title: string) => {
    if (!recording) return;
    setState({ busy: true });
    try {
      await client.call(operations.addPlaylistRecording, { project_id: projectId, short_id: shortId, session_recording_id: recording.id }, { body: {} });
      setState({ busy: false, added: title });
    } catch (error) {
      setState({ busy: false, error });
    }
  };
  const create = async (event: Event) => {
    event.preventDefault();
    const title = name.trim();
    if (title === '') return;
    setState({ busy: true });
    try {
      const playlist = await client.call(operations.createPlaylist, { project_id: projectId }, { body: { name: title, type: 'collection' } });
      setName('');
      await add(playlist.short_id, title);
      playlists.reload();
    } catch (error) {
      setState({ busy: false, error });
    }
  };
  const close = () => {
    setState({ busy: false });
    onClose();
  };
  return (
    <Dialog open={recording !== null} title="Add to playlist" onClose={close}>
      <Async value={playlists} onRetry={playlists.reload}>
        {(list) =>
          list.length === 0 ? (
            <p class="muted">No playlist yet: name one below.</p>
          ) : (
            <ul class="choice-list">
              {list.map((playlist) => {
                const title = playlist.name || playlist.derived_name || playlist.short_id;
                return (
                  <li key={playlist.short_id}>
                    <span>{title}</span>
                    <button type="button" class="secondary small" disabled={state.busy} onClick={() => void add(playlist.short_id, title)}>
                      Add to {title}
                    </button>
                  </li>
                );
              })}
            </ul>
          )
        }
      </Async>
      <form class="property-editor" onSubmit={(event) => void create(event)}>
        <label class="grow">
          <span>New playlist</span>
          <input value={name} maxLength={400} onInput={(event) => setName(event.currentTarget.value)} />
        </label>
        <button type="submit" disabled={state.busy || name.trim() === ''}>
          Create and add
        </button>
      </form>
      <p role="status" class="muted">
        {state.added && `Added to ${state.added}.`}
      </p>
      {state.error !== undefined && <Problem error={state.error} />}
    </Dialog>
  );
}
