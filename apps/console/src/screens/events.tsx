/**
 * The project's events as they arrive: newest first, the first page polled every few seconds (paused on request or
 * while looking at older pages), filtered by event name and event or person properties. A row's event name opens
 * the whole event.
 */
import { useCallback, useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { EventRow } from '../api/types';
import { Async } from '../components/async';
import { CodeBlock } from '../components/code-block';
import { EmptyState } from '../components/empty-state';
import { PageHeader } from '../components/page-header';
import { Pagination } from '../components/pagination';
import { Problem } from '../components/problem';
import { PropertyFilters } from '../components/property-filters';
import { useConsole } from '../context';
import { useDownload } from '../download';
import { EventTable } from '../events/event-table';
import { EventDialog } from '../events/event-dialog';
import { propertiesParam, type FilterForm } from '../filters/property-filter';
import { useDebounced, useInterval, useLoad } from '../hooks';
import { useSearchParams } from '../search-params';

const PAGE_SIZE = 50;
const POLL_MS = 5000;
const TYPE_AFTER_MS = 300;

export function Events() {
  const { client, projectId, project } = useConsole();
  const [params, setParams] = useSearchParams();
  const eventName = params.get('event') ?? '';
  const [filters, setFilters] = useState<FilterForm[]>([]);
  const [offset, setOffset] = useState(0);
  const [live, setLive] = useState(true);
  const [open, setOpen] = useState<EventRow | null>(null);
  const [download, exportError] = useDownload();
  const { properties, problem } = propertiesParam(filters);
  const query = useDebounced(JSON.stringify({ event: eventName.trim() || undefined, properties }), TYPE_AFTER_MS);
  const filtered = query !== '{}';
  const events = useLoad(
    (signal) =>
      client.call(
        operations.listEvents,
        { project_id: projectId },
        { query: { ...(JSON.parse(query) as Record<string, string>), limit: PAGE_SIZE, offset }, signal },
      ),
    [client, projectId, query, offset],
    { keep: true },
  );
  const polling = live && offset === 0;
  const { reload, pending } = events;
  useInterval(
    useCallback(() => {
      if (polling && !pending) reload();
    }, [polling, pending, reload]),
    POLL_MS,
  );
  const names = events.status === 'ok' ? [...new Set(events.data.results.map((event) => event.event))].sort() : [];
  const keys = events.status === 'ok' ? [...new Set(events.data.results.flatMap((event) => Object.keys(event.properties)))].sort() : [];

  return (
    <>
      <PageHeader
        title="Events"
        subtitle={
          polling
            ? `Live: newest first, refreshed every ${POLL_MS / 1000} seconds.`
            : live
              ? 'Newest first; live updates resume on the first page.'
              : 'Newest first; paused.'
        }
      >
        <button type="button" class="secondary" aria-pressed={!live} onClick={() => setLive(!live)}>
          {live ? 'Pause' : 'Resume live'}
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() => download(() => client.csv(operations.listEvents, { project_id: projectId }, { query: JSON.parse(query) as Record<string, string> }))}
        >
          Export CSV
        </button>
      </PageHeader>
      {exportError !== undefined && <Problem error={exportError} />}
      <section class="panel" aria-label="Filter events">
        <datalist id="event-name-suggestions">
          {names.map((name) => (
            <option key={name} value={name} />
          ))}
        </datalist>
        <datalist id="event-property-keys">
          {keys.map((key) => (
            <option key={key} value={key} />
          ))}
        </datalist>
        <form class="search-bar" role="search" onSubmit={(event) => event.preventDefault()}>
          <label class="grow">
            <span>Event name</span>
            <input
              list="event-name-suggestions"
              value={eventName}
              placeholder="All events"
              spellcheck={false}
              onInput={(event) => {
                setParams({ event: event.currentTarget.value });
                setOffset(0);
              }}
            />
          </label>
        </form>
        <PropertyFilters
          filters={filters}
          onChange={(next) => {
            setFilters(next);
            setOffset(0);
          }}
          types={['event', 'person']}
          label="Event filter"
          keyList="event-property-keys"
        />
        {problem && (
          <p class="form-error" role="alert">
            {problem}
          </p>
        )}
      </section>
      <section class="panel" aria-labelledby="events-title">
        <h2 id="events-title">
          {events.status === 'ok' ? `${events.data.count.toLocaleString()} ${events.data.count === 1 ? 'event' : 'events'}` : 'Events'}
          {polling && <span class="live-dot" aria-hidden="true" />}
        </h2>
        <Async value={events} onRetry={events.reload}>
          {(page) =>
            page.count === 0 && !filtered ? (
              <EmptyState title="No events yet">
                <p>Send one from a terminal; it shows up here within seconds. From a web app, install posthog-js (Settings has the snippet).</p>
                <CodeBlock
                  label="A command that sends an event"
                  code={`curl -X POST ${window.location.origin}/capture/ -H 'Content-Type: application/json' \\\n  -d '{"api_key": "${project?.api_token ?? '<project API key>'}", "event": "hello", "distinct_id": "me"}'`}
                />
              </EmptyState>
            ) : (
              <>
                <EventTable
                  caption="Events, newest first"
                  events={page.results}
                  projectId={projectId}
                  onOpen={setOpen}
                  empty="No event matches these filters."
                />
                <Pagination label="Event pages" count={page.count} offset={offset} limit={PAGE_SIZE} onChange={setOffset} />
              </>
            )
          }
        </Async>
      </section>
      <EventDialog event={open} onClose={() => setOpen(null)} />
    </>
  );
}
