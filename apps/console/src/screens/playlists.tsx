/** Recording playlists: pinned ones first, each with its recording count, and a form that creates one. */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { Playlist } from '../api/types';
import { Async } from '../components/async';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { Pagination } from '../components/pagination';
import { Problem } from '../components/problem';
import { DataTable } from '../components/table';
import { useConsole } from '../context';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import { projectPath } from '../paths';
import { RecordingTabs } from '../recordings/recording-tabs';
import { Link, navigate } from '../router';

const PAGE_SIZE = 50;

export const playlistName = (playlist: Playlist): string => playlist.name || playlist.derived_name || `Playlist ${playlist.short_id}`;

export function Playlists() {
  const { client, projectId } = useConsole();
  const [offset, setOffset] = useState(0);
  const [name, setName] = useState('');
  const [state, setState] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  const playlists = useLoad(
    (signal) => client.call(operations.listPlaylists, { project_id: projectId }, { query: { limit: PAGE_SIZE, offset }, signal }),
    [client, projectId, offset],
    { keep: true },
  );

  const create = async (event: Event) => {
    event.preventDefault();
    setState({ busy: true });
    try {
      const playlist = await client.call(operations.createPlaylist, { project_id: projectId }, { body: { name: name.trim(), type: 'collection' } });
      navigate(projectPath(projectId, `recordings/playlists/${playlist.short_id}`));
    } catch (error) {
      setState({ busy: false, error });
    }
  };

  return (
    <>
      <PageHeader title="Recordings" subtitle="Replays of what people did on your site, with their clicks, pages and console errors." />
      <RecordingTabs />
      <section class="panel" aria-labelledby="new-playlist-title">
        <h2 id="new-playlist-title">New playlist</h2>
        <form class="property-editor" onSubmit={(event) => void create(event)}>
          <label class="grow">
            <span>Name</span>
            <input value={name} required maxLength={400} onInput={(event) => setName(event.currentTarget.value)} />
          </label>
          <button type="submit" disabled={state.busy || name.trim() === ''}>
            Create playlist
          </button>
        </form>
        {state.error !== undefined && <Problem error={state.error} />}
      </section>
      <section class="panel" aria-labelledby="playlists-title">
        <h2 id="playlists-title">Playlists</h2>
        <Async value={playlists} onRetry={playlists.reload}>
          {(page) =>
            page.count === 0 ? (
              <EmptyState title="No playlists yet">
                <p>A playlist keeps recordings worth watching again together. Name one above, or use “Add to playlist” on a recording.</p>
              </EmptyState>
            ) : (
              <>
                <DataTable
                  caption="Playlists"
                  rows={[...page.results].sort((a, b) => Number(b.pinned) - Number(a.pinned))}
                  rowKey={(playlist) => playlist.short_id}
                  columns={[
                    {
                      label: 'Name',
                      cell: (playlist) => (
                        <>
                          <Link href={projectPath(projectId, `recordings/playlists/${playlist.short_id}`)}>{playlistName(playlist)}</Link>
                          {playlist.pinned && <span class="badge muted-badge">pinned</span>}
                        </>
                      ),
                    },
                    { label: 'Recordings', numeric: true, cell: (playlist) => (playlist.recordings_counts.collection?.count ?? 0).toLocaleString() },
                    { label: 'Last modified', cell: (playlist) => dateTime(playlist.last_modified_at) },
                  ]}
                />
                <Pagination label="Playlist pages" count={page.count} offset={offset} limit={PAGE_SIZE} onChange={setOffset} />
              </>
            )
          }
        </Async>
      </section>
    </>
  );
}
