/**
 * One dashboard: its tiles in a grid (each insight's chart from the cached result the dashboard answers with,
 * text cards), dragged to rearrange (every tile's layout saved), text cards added and removed, the dashboard's
 * date range (stored in its filters, overriding each insight's own), a refresh that computes every tile, and the
 * public share link, created and revoked.
 */
import { useEffect, useState } from 'preact/hooks';
import { operations } from '../api/operations';
import type { Dashboard, DashboardTile, DashboardWrite } from '../api/types';
import { Async } from '../components/async';
import { PageHeader } from '../components/page-header';
import { Problem } from '../components/problem';
import { useConsole } from '../context';
import { gridLayouts, moveTile } from '../dashboards/layout';
import { TileResult } from '../dashboards/tile-result';
import { dateTime } from '../format';
import { useLoad } from '../hooks';
import { DATE_RANGES } from '../insights/query';
import { projectPath } from '../paths';
import { Link } from '../router';
import type { ScreenProps } from '../screen-props';
import { insightName } from './insight-list';
import { dashboardName } from './dashboards';

export function DashboardScreen({ params }: ScreenProps) {
  const { client, projectId } = useConsole();
  const id = params.id!;
  // `blocking` computes what the cache lacks; without it the tiles show what is cached.
  const [refresh, setRefresh] = useState(0);
  const dashboard = useLoad(
    (signal) => client.call(operations.getDashboard, { project_id: projectId, id }, { query: refresh > 0 ? { refresh: 'blocking' } : undefined, signal }),
    [client, projectId, id, refresh],
    { keep: true },
  );
  return (
    <Async value={dashboard} onRetry={dashboard.reload}>
      {(loaded) => <DashboardView dashboard={loaded} pending={dashboard.pending} onRefresh={() => setRefresh((count) => count + 1)} />}
    </Async>
  );
}

function DashboardView({ dashboard, pending, onRefresh }: { dashboard: Dashboard; pending: boolean; onRefresh: () => void }) {
  const { client, projectId } = useConsole();
  const [error, setError] = useState<unknown>(undefined);
  const [dragged, setDragged] = useState<number | null>(null);
  const [text, setText] = useState('');
  const update = async (body: DashboardWrite): Promise<boolean> => {
    setError(undefined);
    try {
      await client.call(operations.updateDashboard, { project_id: projectId, id: dashboard.id }, { body });
      onRefresh();
      return true;
    } catch (failure) {
      setError(failure);
      return false;
    }
  };
  const tiles = dashboard.tiles;
  const drop = (target: number) => {
    if (dragged === null || dragged === target) return;
    void update({
      tiles: gridLayouts(
        moveTile(
          tiles.map((tile) => tile.id),
          dragged,
          target,
        ),
      ),
    });
    setDragged(null);
  };
  const storedDateFrom = typeof dashboard.filters.date_from === 'string' ? dashboard.filters.date_from : '';
  // The range just picked, shown while it is saved and the dashboard reloads (else the picker would flick back).
  const [pickedDateFrom, setPickedDateFrom] = useState<string | null>(null);
  useEffect(() => setPickedDateFrom(null), [storedDateFrom]);
  const dateFrom = pickedDateFrom ?? storedDateFrom;
  const pickDateFrom = async (value: string) => {
    setPickedDateFrom(value);
    if (!(await update({ filters: { ...keptFilters(dashboard.filters), date_from: value || null, date_to: null } }))) setPickedDateFrom(null);
  };
  return (
    <>
      <PageHeader
        title={dashboardName(dashboard)}
        subtitle={`Dashboard · ${dashboard.last_refresh ? `computed ${dateTime(dashboard.last_refresh)}` : 'from the cache'}${pending ? ' · refreshing…' : ''}`}
      >
        <button type="button" class="secondary" onClick={onRefresh} disabled={pending}>
          Refresh
        </button>
      </PageHeader>
      {error !== undefined && <Problem error={error} />}
      <div class="dashboard-bar">
        <label>
          <span>Date range</span>
          <select value={dateFrom} onChange={(event) => void pickDateFrom(event.currentTarget.value)}>
            <option value="">Each insight's own</option>
            {DATE_RANGES.map((range) => (
              <option key={range.value} value={range.value}>
                {range.label}
              </option>
            ))}
          </select>
        </label>
        <form
          class="row grow"
          onSubmit={(event) => {
            event.preventDefault();
            if (text.trim() === '') return;
            void update({ tiles: [{ text: { body: text.trim() } }] });
            setText('');
          }}
        >
          <label class="grow">
            <span>Text card</span>
            <input
              value={text}
              maxLength={4000}
              placeholder="A note for everyone who reads this dashboard"
              onInput={(event) => setText(event.currentTarget.value)}
            />
          </label>
          <button type="submit" class="secondary">
            Add text card
          </button>
        </form>
        <ShareLink dashboardId={dashboard.id} />
      </div>
      {tiles.length === 0 ? (
        <p class="muted">No tiles yet: open an insight and add it to this dashboard, or add a text card.</p>
      ) : (
        <ol class="dashboard-grid" aria-label="Tiles">
          {tiles.map((tile) => (
            <li
              key={tile.id}
              class={dragged === tile.id ? 'panel tile dragging' : 'panel tile'}
              draggable
              aria-label={tileTitle(tile)}
              onDragStart={(event) => {
                event.dataTransfer?.setData('text/plain', String(tile.id));
                setDragged(tile.id);
              }}
              onDragOver={(event) => event.preventDefault()}
              onDrop={(event) => {
                event.preventDefault();
                drop(tile.id);
              }}
              onDragEnd={() => setDragged(null)}
            >
              <div class="tile-head">
                <h2>{tile.insight ? <Link href={projectPath(projectId, `insights/${tile.insight.short_id}`)}>{insightName(tile.insight)}</Link> : 'Text'}</h2>
                <button
                  type="button"
                  class="icon"
                  aria-label={`Remove ${tileTitle(tile)}`}
                  onClick={() => void update({ tiles: [{ id: tile.id, deleted: true }] })}
                >
                  ×
                </button>
              </div>
              {tile.text && <p class="tile-text">{tile.text.body}</p>}
              {tile.error && <p class="form-error">{tile.error.detail}</p>}
              {tile.insight && !tile.error && <TileResult insight={tile.insight} />}
            </li>
          ))}
        </ol>
      )}
    </>
  );
}

/** The stored filters other than the dates, which a date range change keeps. */
const keptFilters = (filters: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(['properties', 'breakdown_filter', 'interval', 'filterTestAccounts'].filter((key) => key in filters).map((key) => [key, filters[key]]));

const tileTitle = (tile: DashboardTile): string => (tile.insight ? insightName(tile.insight) : `Text: ${tile.text?.body.slice(0, 40) ?? ''}`);

/** The dashboard's public link: created (enabled) on demand, revoked by disabling it and rotating its token. */
function ShareLink({ dashboardId }: { dashboardId: number }) {
  const { client, projectId } = useConsole();
  const [version, setVersion] = useState(0);
  const [error, setError] = useState<unknown>(undefined);
  const ids = { project_id: projectId, id: dashboardId };
  const sharing = useLoad((signal) => client.call(operations.getDashboardSharing, ids, { signal }), [client, projectId, dashboardId, version]);
  const act = async (action: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await action();
      setVersion((count) => count + 1);
    } catch (failure) {
      setError(failure);
    }
  };
  return (
    <div class="share-link">
      <Async value={sharing} onRetry={sharing.reload}>
        {(link) =>
          link.enabled ? (
            <>
              <label>
                <span>Share link (anyone with it can see this dashboard)</span>
                <input readOnly value={`${location.origin}/shared/${link.access_token}.json`} onFocus={(event) => event.currentTarget.select()} />
              </label>
              <button
                type="button"
                class="secondary"
                onClick={() =>
                  void act(async () => {
                    await client.call(operations.updateDashboardSharing, ids, { body: { enabled: false } });
                    await client.call(operations.refreshDashboardSharing, ids);
                  })
                }
              >
                Revoke share link
              </button>
            </>
          ) : (
            <button
              type="button"
              class="secondary"
              onClick={() => void act(() => client.call(operations.updateDashboardSharing, ids, { body: { enabled: true } }))}
            >
              Create share link
            </button>
          )
        }
      </Async>
      {error !== undefined && <Problem error={error} />}
    </div>
  );
}
