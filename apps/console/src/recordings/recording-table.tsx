import type { ComponentChildren } from 'preact';
import type { NextPage, Recording } from '../api/types';
import { NextPagination } from '../components/pagination';
import { DataTable } from '../components/table';
import { dateTime, duration } from '../format';
import { projectPath } from '../paths';
import { Link } from '../router';

/**
 * The replay page of a recording. It is a page of its own (outside the console's routes); it reads the same
 * sessionStorage key as the console, so a signed-in tab plays it without asking for the key again.
 */
export function replayHref(projectId: string, sessionId: string): string {
  return `/replay/${encodeURIComponent(sessionId)}?project=${encodeURIComponent(projectId)}`;
}

/** A page of recordings, with previous / next under it. */
export function RecordingTable({
  caption,
  projectId,
  page,
  offset,
  limit,
  onOffset,
  actions,
  empty,
  person = true,
}: {
  caption: string;
  projectId: string;
  page: NextPage<Recording>;
  offset: number;
  limit: number;
  onOffset: (offset: number) => void;
  /** More controls of a row, after its play link. */
  actions?: (recording: Recording) => ComponentChildren;
  empty?: ComponentChildren;
  /** Whether to show whose recording it is (not on a person's own page). */
  person?: boolean;
}) {
  return (
    <div class="compact-table">
      <DataTable
        caption={caption}
        rows={page.results}
        rowKey={(recording) => recording.id}
        empty={empty}
        columns={[
          {
            label: 'Recording',
            cell: (recording) => (
              <span class="row-actions">
                <a class="button small" href={replayHref(projectId, recording.id)} aria-label={`Play the recording of ${dateTime(recording.start_time)}`}>
                  ▶ Play
                </a>
                {actions?.(recording)}
              </span>
            ),
          },
          {
            label: 'Started',
            cell: (recording) => (
              <span class="nowrap">
                {dateTime(recording.start_time)}
                {recording.ongoing && <span class="badge">live</span>}
                {!recording.viewed && <span class="badge muted-badge">new</span>}
              </span>
            ),
          },
          ...(person
            ? [
                {
                  label: 'Person',
                  cell: (recording: Recording) =>
                    recording.person.uuid ? (
                      <Link href={projectPath(projectId, `persons/${recording.person.uuid}`)}>{recording.person.name ?? recording.distinct_id}</Link>
                    ) : (
                      <span class="cell-name">{recording.distinct_id}</span>
                    ),
                },
              ]
            : []),
          { label: 'Duration', numeric: true, cell: (recording) => <span class="nowrap">{duration(recording.recording_duration)}</span> },
          { label: 'Active', numeric: true, cell: (recording) => <span class="nowrap">{duration(recording.active_seconds)}</span> },
          { label: 'Clicks', numeric: true, cell: (recording) => recording.click_count.toLocaleString() },
          { label: 'Errors', numeric: true, cell: (recording) => recording.console_error_count.toLocaleString() },
          { label: 'Start URL', cell: (recording) => <span class="cell-url">{recording.start_url ?? '—'}</span> },
        ]}
      />
      <NextPagination label={`${caption}: pages`} offset={offset} limit={limit} shown={page.results.length} hasNext={page.has_next} onChange={onOffset} />
    </div>
  );
}
