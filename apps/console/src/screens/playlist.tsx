/** One playlist: its recordings (each playable and removable), pinning, and deletion (PATCH `deleted: true`). */
import { useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { Playlist } from '../api/types';
import { Async } from '../components/async';
import { ConfirmDialog } from '../components/dialog';
import { PageHeader } from '../components/page-header';
import { Problem } from '../components/problem';
import { useConsole } from '../context';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import { projectPath } from '../paths';
import { RecordingTable } from '../recordings/recording-table';
import { navigate } from '../router';
import type { ScreenProps } from '../screen-props';
import { playlistName } from './playlists';

const PAGE_SIZE = 25;

export function PlaylistScreen({ params }: ScreenProps) {
  const { client, projectId } = useConsole();
  const playlist = useLoad(
    (signal) => client.call(operations.getPlaylist, { project_id: projectId, short_id: params.shortId! }, { signal }),
    [client, projectId, params.shortId],
  );
  return <Async value={playlist}>{(data) => <PlaylistPage key={data.short_id} initial={data} />}</Async>;
}

function PlaylistPage({ initial }: { initial: Playlist }) {
  const { client, projectId } = useConsole();
  const [playlist, setPlaylist] = useState(initial);
  const [offset, setOffset] = useState(0);
  const [deleting, setDeleting] = useState(false);
  const [state, setState] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  const recordings = useLoad(
    (signal) =>
      client.call(operations.listPlaylistRecordings, { project_id: projectId, short_id: playlist.short_id }, { query: { limit: PAGE_SIZE, offset }, signal }),
    [client, projectId, playlist.short_id, offset],
    { keep: true },
  );
  const ids = { project_id: projectId, short_id: playlist.short_id };

  const run = async (action: () => Promise<void>) => {
    setState({ busy: true });
    try {
      await action();
      setState({ busy: false });
    } catch (error) {
      setState({ busy: false, error });
    }
  };
  const pin = () => run(async () => setPlaylist(await client.call(operations.updatePlaylist, ids, { body: { pinned: !playlist.pinned } })));
  const remove = (sessionId: string) =>
    run(async () => {
      await client.call(operations.removePlaylistRecording, { ...ids, session_recording_id: sessionId });
      recordings.reload();
    });

  return (
    <>
      <PageHeader title={playlistName(playlist)} subtitle={playlist.description || 'Playlist'}>
        <button type="button" class="secondary" aria-pressed={playlist.pinned} disabled={state.busy} onClick={() => void pin()}>
          {playlist.pinned ? 'Unpin' : 'Pin'}
        </button>
        <button type="button" class="danger" onClick={() => setDeleting(true)}>
          Delete playlist
        </button>
      </PageHeader>
      {state.error !== undefined && <Problem error={state.error} />}
      <section class="panel" aria-labelledby="playlist-recordings-title" aria-busy={recordings.pending}>
        <h2 id="playlist-recordings-title">Recordings</h2>
        <Async value={recordings} onRetry={recordings.reload}>
          {(page) => (
            <>
              <RecordingTable
                caption={`Recordings in ${playlistName(playlist)}`}
                projectId={projectId}
                page={page}
                offset={offset}
                limit={PAGE_SIZE}
                onOffset={setOffset}
                empty="No recordings in this playlist yet: use “Add to playlist” on the Recordings list."
                actions={(recording) => (
                  <button
                    type="button"
                    class="secondary small"
                    disabled={state.busy}
                    aria-label={`Remove the recording of ${dateTime(recording.start_time)}`}
                    onClick={() => void remove(recording.id)}
                  >
                    Remove
                  </button>
                )}
              />
            </>
          )}
        </Async>
      </section>
      <ConfirmDialog
        open={deleting}
        title={`Delete ${playlistName(playlist)}?`}
        confirm="Delete playlist"
        onConfirm={async () => {
          await client.call(operations.updatePlaylist, ids, { body: { deleted: true } });
          navigate(projectPath(projectId, 'recordings/playlists'));
        }}
        onClose={() => setDeleting(false)}
      >
        <p>The playlist goes; its recordings stay.</p>
      </ConfirmDialog>
    </>
  );
}
