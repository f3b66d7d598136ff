import type { EventRow } from '../api/types';
import type { ComponentChildren } from 'preact';
import { DataTable, type Column } from '../components/table';
import { dateTime, propertyText, timeAgo } from '../format';
import { projectPath } from '../paths';
import { Link } from '../router';

/** The page address of an event: `$current_url`, else `$pathname`. */
export function eventUrl(event: EventRow): string {
  const url = event.properties.$current_url ?? event.properties.$pathname;
  return url === undefined ? '' : propertyText(url);
}

/**
 * The columns of an event listing: its name (a button that opens the whole event), its person (a link to the
 * person's page; left out where the listing is one person's), its page and its time.
 */
function eventColumns(projectId: string, open: (event: EventRow) => void, { person = true } = {}): Column<EventRow>[] {
  const columns: Column<EventRow>[] = [
    {
      label: 'Event',
      cell: (event) => (
        <button type="button" class="link-button cell-name nowrap" onClick={() => open(event)} aria-haspopup="dialog">
          {event.event}
        </button>
      ),
    },
  ];
  if (person) {
    columns.push({
      label: 'Person',
      cell: (event) =>
        event.person_id ? (
          <Link href={projectPath(projectId, `persons/${event.person_id}`)} class="cell-name nowrap">
            {event.distinct_id}
          </Link>
        ) : (
          <span class="cell-name nowrap">{event.distinct_id}</span>
        ),
    });
  }
  columns.push(
    {
      label: 'URL',
      cell: (event) => (
        <span class="cell-url" title={eventUrl(event)}>
          {eventUrl(event) || '—'}
        </span>
      ),
    },
    {
      label: 'Time',
      cell: (event) => (
        <time class="nowrap" dateTime={event.timestamp} title={dateTime(event.timestamp)}>
          {timeAgo(event.timestamp)}
        </time>
      ),
    },
  );
  return columns;
}

/** A table of events, tighter on a phone's width so that every column fits. */
export function EventTable({
  caption,
  events,
  projectId,
  onOpen,
  person = true,
  empty,
}: {
  caption: string;
  events: readonly EventRow[];
  projectId: string;
  onOpen: (event: EventRow) => void;
  person?: boolean;
  empty: ComponentChildren;
}) {
  return (
    <div class="compact-table">
      <DataTable caption={caption} rows={events} rowKey={(event) => event.id} empty={empty} columns={eventColumns(projectId, onOpen, { person })} />
    </div>
  );
}
