/**
 * Session replay's "a 200 means kept", through a crash: embedded Plover (`npm start`) in a child process takes a
 * flood of concurrent posthog-js `/s/` requests (gzip, a few `$snapshot` events each) and is killed with SIGKILL
 * in the middle of it. Started again on the same data dir, its replay consumer drains what the bus holds. Then,
 * read from the stores by this process: every `$snapshot` event of every request answered 200 is stored exactly
 * once, a block holding its rrweb events as sent and one message in its session's summary; nothing else is.
 */
import path from 'node:path';
import { updateSessionReplaySettings } from '@plover/accounts';
import { ChdbClickHouse } from '@plover/chdb';
import { getSessionSummary, readSnapshotBlocks } from '@plover/clickhouse';
import { seededDataDir, startEmbedded, type EmbeddedPlover } from './support/embedded';
import { seededRandom } from './support/random';
import { flushes, recordingEvents, SNAPSHOT_REQUEST_HEADERS, snapshotEvent, snapshotRequestBody, type RrwebEvent } from './support/recording';

const SESSIONS = 24;
const WORKERS = 16;
const EVENTS_PER_REQUEST = 3;
/** The kill comes once this many requests were answered 200, or FLOOD_MS after the flood began. */
const KILL_AFTER_ACKNOWLEDGED = 150;
const FLOOD_MS = 10_000;
/** The restarted process has drained once its replay counters stay put this long. */
const QUIET_MS = 4_000;

interface Sent {
  sessionId: string;
  windowId: string;
  events: RrwebEvent[];
}

/** Sum of the replay consumer's handled-message counters on the process's /metrics. */
async function replayMessagesHandled(plover: EmbeddedPlover): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${plover.port}/metrics`)).text();
  return [...text.matchAll(/^plover_replay_(?:messages|batch_failures)_total\{[^}]*\} (\d+)$/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}

async function waitForQuietReplayConsumer(plover: EmbeddedPlover): Promise<void> {
  let last = -1;
  let since = Date.now();
  for (;;) {
    const handled = await replayMessagesHandled(plover);
    if (handled !== last) [last, since] = [handled, Date.now()];
    else if (Date.now() - since >= QUIET_MS) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('session replay through a kill -9 of embedded Plover', () => {
  let plover: EmbeddedPlover | undefined;

  afterAll(async () => {
    await plover?.stop();
  });

  it('stores every acknowledged $snapshot exactly once', async () => {
    let projectId = 0;
    const dataDir = await seededDataDir(async (sql, credentials) => {
      projectId = credentials.project.id;
      await updateSessionReplaySettings(sql, projectId, { session_recording_opt_in: true });
    });
    plover = await startEmbedded({}, dataDir);
    const { token } = plover.credentials;
    const url = `http://127.0.0.1:${plover.port}/s/`;

    // Ten minutes of a recording in two-second flushes, recent enough to be stored; requests take them in turn.
    const start = Date.now() - 600_000;
    const pool = flushes(recordingEvents({ random: seededRandom(7), start, durationMs: 600_000, sections: 20 }), start, 2_000);
    const sent = new Map<string, Sent>();
    const acknowledged: string[] = [];
    let acknowledgedRequests = 0;
    let next = 0;
    let killed = false;
    const floodStart = Date.now();

    const worker = async (): Promise<void> => {
      while (!killed) {
        const events = Array.from({ length: EVENTS_PER_REQUEST }, () => {
          const n = next++;
          const target = {
            token,
            distinctId: `user-${n % SESSIONS}`,
            sessionId: `0198c0dd-7a3e-7c1b-9a52-${String(n % SESSIONS).padStart(12, '0')}`,
            windowId: `window-${n % 2}`,
          };
          const event = snapshotEvent(target, pool[n % pool.length] as RrwebEvent[]);
          sent.set(event.uuid as string, { sessionId: target.sessionId, windowId: target.windowId, events: pool[n % pool.length] as RrwebEvent[] });
          return event;
        });
        const status = await fetch(url, { method: 'POST', headers: SNAPSHOT_REQUEST_HEADERS, body: snapshotRequestBody(events) }).then(
          (response) => response.status,
          () => 0,
        );
        if (status === 200) {
          acknowledged.push(...events.map((event) => event.uuid as string));
          acknowledgedRequests++;
        } else if (!killed) {
          throw new Error(`/s/ answered ${status} before the kill:\n${plover?.output().slice(-4000)}`);
        }
        if (!killed && (acknowledgedRequests >= KILL_AFTER_ACKNOWLEDGED || Date.now() - floodStart >= FLOOD_MS)) {
          killed = true;
          expect(await plover?.kill('SIGKILL')).toBeNull();
        }
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
    expect(acknowledgedRequests).toBeGreaterThan(0);

    plover = await startEmbedded({}, dataDir);
    await waitForQuietReplayConsumer(plover);
    expect(await plover.kill('SIGTERM')).toBe(0);

    const clickhouse = await ChdbClickHouse.open({ dataDir: path.join(dataDir, 'clickhouse') });
    try {
      const stored = new Map<string, { sessionId: string; windowId: string; data: string }[]>();
      const sessions = new Set([...sent.values()].map(({ sessionId }) => sessionId));
      for (const sessionId of sessions) {
        const blocks = await readSnapshotBlocks(clickhouse, projectId, sessionId, { limit: 100_000 });
        for (const block of blocks)
          stored.set(block.batch_uuid, [...(stored.get(block.batch_uuid) ?? []), { sessionId, windowId: block.window_id, data: block.data }]);
        // The summaries table holds each message once too.
        expect({ sessionId, messages: (await getSessionSummary(clickhouse, projectId, sessionId))?.message_count ?? 0 }).toEqual({
          sessionId,
          messages: blocks.length,
        });
      }
      const missing = acknowledged.filter((uuid) => !stored.has(uuid));
      expect({ acknowledged: acknowledged.length, missing }).toEqual({ acknowledged: acknowledged.length, missing: [] });
      for (const uuid of acknowledged) {
        const { sessionId, windowId, events } = sent.get(uuid) as Sent;
        const lines = events.map((event) => `${JSON.stringify([windowId, event])}\n`).join('');
        expect({ uuid, copies: stored.get(uuid) }).toEqual({ uuid, copies: [{ sessionId, windowId, data: lines }] });
      }
      // Requests cut off by the kill may have been kept or not; anything else stored is not ours.
      expect([...stored.keys()].filter((uuid) => !sent.has(uuid))).toEqual([]);
    } finally {
      await clickhouse.close();
    }
  }, 240_000);
});
